import { describe, expect, it } from 'vitest';
import { linearScale } from '../../../src/sim/report/scale.js';
import { barChart, groupedBarChart, legend, pathData } from '../../../src/sim/report/svg-charts.js';
import { count } from './comparison-fixture.js';

const fmt = (v: number): string => `${v}`;

describe('svg charts', () => {
  it('draws one bar per finite value, — for the others, and the reference line', () => {
    const svg = barChart({
      label: 'hits',
      bars: [
        { label: 'a', value: 0.5 },
        { label: 'b', value: Number.NaN },
      ],
      format: fmt,
      tickFormat: fmt,
      max: 1,
      reference: { value: 0.9, label: 'ceiling' },
      axisTitle: 'share',
      color: '#000',
    });

    expect(svg.startsWith('<svg')).toBe(true);
    expect(svg.endsWith('</svg>')).toBe(true);
    expect(count(svg, '<rect')).toBe(1);
    expect(svg).toContain('>—</text>');
    expect(svg).toContain('>ceiling</text>');
  });

  it('keeps long category names whole in a tooltip when it cuts them', () => {
    const name = 'a_policy_name_far_too_long_to_fit_in_the_label_column_of_the_chart';
    const svg = groupedBarChart({
      label: 'ttft',
      groups: [{ label: name, values: [1, 2] }],
      series: [
        { name: 'p50', color: '#111' },
        { name: 'p99', color: '#222' },
      ],
      format: fmt,
      tickFormat: fmt,
      scale: 'auto',
      axisTitle: 'ms',
    });

    expect(svg).toContain(`<title>${name}</title>`);
    expect(svg).toContain('…');
  });

  it('a legend is a list with one swatch and one label per entry', () => {
    const items = Array.from({ length: 16 }, (_, i) => ({
      label: `worker ${i}`,
      color: '#000',
      shape: 'line' as const,
    }));
    const html = legend(items);

    expect(count(html, '<li>')).toBe(16);
    expect(count(html, '<line')).toBe(16);
    expect(html).toContain('<span class="legend-label">worker 15</span>');
  });

  it('breaks a line at gaps and drops the inner points of flat runs', () => {
    const x = linearScale(10, 0, 100, fmt);
    const y = linearScale(10, 100, 0, fmt);
    const d = pathData({ x: [0, 1, 2, 3, 4, 5, 6], y: [5, 5, 5, 5, Number.NaN, 2, 3] }, x, y);

    expect(d).toBe('M0,50 30,50M50,80 60,70');
  });
});
