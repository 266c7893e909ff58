import { describe, expect, it } from 'vitest';
import { stackedBarChart } from '../../../src/sim/report/stacked-bar-chart.js';
import { count } from './comparison-fixture.js';

const SERIES = [
  { name: 'kept', color: '#111', ink: '#fff' },
  { name: 'lost', color: '#eee', ink: '#000' },
  { name: 'odd', color: '#888', ink: '#000' },
];

describe('stackedBarChart', () => {
  it('draws a segment per positive finite value, end to end, with its label inside when it fits', () => {
    const svg = stackedBarChart({
      label: 'outcomes',
      rows: [
        { label: 'a', values: [0.75, 0.25, Number.NaN], labels: ['75', '25', 'x'], total: 'all' },
        { label: 'b', values: [0.001, 0, -1], labels: ['1', '0', 'y'], total: 'some' },
      ],
      series: SERIES,
      tickFormat: (v) => `${Math.round(v * 100)}%`,
      max: 1,
      axisTitle: 'share',
      width: 600,
    });
    const rects = [...svg.matchAll(/<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"/g)].map((m) => ({
      x: Number(m[1]),
      width: Number(m[2]),
    }));

    expect(count(svg, '<rect')).toBe(3);
    const [kept, lost] = [rects[0]!, rects[1]!];
    expect(lost.x).toBeCloseTo(kept.x + kept.width, 0); // lost starts where kept ends
    expect(kept.width).toBeCloseTo(3 * lost.width, 0);
    expect(svg).toContain('<title>a kept: 75</title>');
    expect(svg).toContain('<title>b kept: 1</title>');
    expect(svg).toContain('fill="#fff">75</text>');
    expect(svg).not.toContain('>1</text>'); // too thin for its label
    expect(svg).toContain('>all</text>');
    expect(svg).toContain('>100%</text>');
    expect(svg).toContain('data-series="kept\nlost\nodd"');
  });

  it('escapes row labels', () => {
    const svg = stackedBarChart({
      label: 'x',
      rows: [{ label: '<b>', values: [1], labels: ['<i>'], total: '&' }],
      series: SERIES,
      tickFormat: String,
      axisTitle: 't',
    });

    expect(svg).not.toMatch(/<b>|<i>/);
    expect(svg).toContain('&lt;b&gt;');
    expect(svg).toContain('&amp;');
  });
});
