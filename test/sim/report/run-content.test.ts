/**
 * The report's newer content: the time-to-first-token distribution, waiting against running
 * requests, the "Run" section and the oracle's row.
 */
import { describe, expect, it } from 'vitest';
import { DEFAULT_FLEET_MODEL } from '../../../src/sim/fleet-model.js';
import { renderHtmlReport } from '../../../src/sim/report/index.js';
import { shellLine } from '../../../src/sim/report/run-section.js';
import { comparison, count, policies, run } from './comparison-fixture.js';

/** The HTML of the report's section `id`. */
function sectionOf(html: string, id: string): string {
  const start = html.indexOf(`<section id="${id}">`);
  expect(start, id).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</section>', start));
}

describe('renderHtmlReport: time-to-first-token distribution', () => {
  it('draws one line per policy in each rendering and names every policy in its legend', () => {
    const runs = policies(5);
    const html = sectionOf(renderHtmlReport(comparison(runs)), 'ttft-distribution');

    expect(count(html, '<path ')).toBe(2 * runs.length);
    for (const r of runs) {
      expect(html).toContain(`<span class="legend-label">${r.policy}</span>`);
    }
    expect(html).toContain('data-scale="linear"');
  });

  it('uses a log time axis when the quantiles span more than 50×', () => {
    const wide = run('wide', 0, {
      ttftQuantilesMs: Array.from({ length: 101 }, (_, i) => 5 * 1.08 ** i),
    });
    const html = sectionOf(renderHtmlReport(comparison([wide, run('b', 1)])), 'ttft-distribution');

    expect(html).toContain('data-scale="log"');
    expect(html).toContain('(log scale)');
  });

  it('a run without quantiles draws no line and breaks nothing', () => {
    const html = sectionOf(
      renderHtmlReport(comparison([run('none', 0, { ttftQuantilesMs: [] }), run('b', 1)])),
      'ttft-distribution',
    );

    expect(count(html, '<path ')).toBe(2);
  });
});

describe('renderHtmlReport: waiting and running over time', () => {
  it('draws, per policy, the fleet sums of running and of waiting requests', () => {
    const runs = [
      run('p', 0, {
        timeline: {
          intervalMs: 1000,
          inFlight: [
            [3, 5],
            [1, 2],
          ],
          waiting: [
            [1, 2],
            [0, 1],
          ],
          running: [
            [2, 3],
            [1, 1],
          ],
        },
      }),
    ];
    const html = sectionOf(renderHtmlReport(comparison(runs)), 'queue');

    expect(count(html, '<path ')).toBe(2);
    expect(html).toContain('peak waiting 3');
    expect(html).toContain('<span class="legend-label">running</span>');
    expect(html).toContain('<span class="legend-label">waiting</span>');
  });

  it('keeps one panel of two lines per policy at 64 workers', () => {
    const html = sectionOf(
      renderHtmlReport(comparison(policies(3, { workers: 64, samples: 2000 }))),
      'queue',
    );

    expect(count(html, '<path ')).toBe(3 * 2);
  });
});

describe('renderHtmlReport: the Run section', () => {
  it('shows the command line, the version, and every field of the fleet model', () => {
    const c = comparison(policies(2), {
      run: {
        argv: ['fleetroute', 'simulate', '--workload', 'chat', '--title', "it's <x>"],
        version: '9.8.7',
      },
    });
    const html = sectionOf(renderHtmlReport(c), 'run');

    expect(html).toContain(
      'fleetroute simulate --workload chat --title &#39;it&#39;\\&#39;&#39;s &lt;x&gt;&#39;',
    );
    expect(html).toContain('fleetroute 9.8.7');
    const adapterSlots = ['maxLoras', 'adapterLoadMs'];
    for (const key of Object.keys(DEFAULT_FLEET_MODEL)) {
      // Adapter slots only matter to a run that served LoRA adapters.
      if (adapterSlots.includes(key)) expect(html).not.toContain(`<code>${key}</code>`);
      else expect(html).toContain(`<code>${key}</code>`);
    }
    expect(html).toContain('<code>groups</code>');
    expect(html).toContain('Poisson, 57.3 req/s');
  });

  it('shows the adapter slots of the fleet when a run served LoRA adapters', () => {
    const base = comparison(policies(2));
    const adapters = { loads: 7, perWorker: [3, 4], maxPerWorker: 4, minPerWorker: 3 };
    const c = { ...base, runs: base.runs.map((run) => ({ ...run, adapters })) };

    const html = sectionOf(renderHtmlReport(c), 'run');

    expect(html).toContain('<code>maxLoras</code>');
    expect(html).toContain('<code>adapterLoadMs</code>');
  });

  it('without run information it still shows the settings, and no command', () => {
    const html = sectionOf(renderHtmlReport(comparison(policies(2))), 'run');

    expect(html).not.toContain('Command');
    expect(html).toContain('<code>maxRunning</code>');
  });

  it('quotes shell words that need it', () => {
    expect(shellLine(['a', 'b c', "d'e", '--x=1'])).toBe(`a 'b c' 'd'\\''e' --x=1`);
  });
});

describe('renderHtmlReport: the greedy oracle', () => {
  it('is a row of its own with an "of greedy-oracle" column, ranked with no one', () => {
    const runs = [run('a', 0, { hitRate: 0.4 }), run('b', 1, { hitRate: 0.6 })];
    const oracle = run('greedy-oracle', 5, { hitRate: 0.8, routingMicrosPerRequest: 0.01 });
    const html = sectionOf(renderHtmlReport(comparison(runs, { oracle })), 'summary');

    expect(html).toContain('<th scope="col">of greedy-oracle</th>');
    expect(html).toContain(
      '<tbody class="oracle"><tr><th scope="row">greedy-oracle <span class="tag">reference, not a bound</span></th>',
    );
    const oracleRow = html.slice(html.indexOf('<tbody class="oracle">'));
    expect(oracleRow).not.toContain('<strong>');
    expect(oracleRow).toContain('<td>100.0%</td>');
    const rowA = html.slice(
      html.indexOf('<th scope="row">a</th>'),
      html.indexOf('<th scope="row">b</th>'),
    );
    expect(rowA).toContain('<td>50.0%</td>');
    expect(html).toContain('<td class="best"><strong>75.0%</strong></td>');
  });

  it('without an oracle there is neither the row nor the column', () => {
    const html = sectionOf(renderHtmlReport(comparison(policies(2))), 'summary');

    expect(html).not.toContain('of greedy-oracle');
    expect(html).not.toContain('class="oracle"');
  });

  it('claims no bound a policy exceeds: a policy above it shows more than 100 %', () => {
    const runs = [run('a', 0, { hitRate: 0.4 }), run('b', 1, { hitRate: 0.9 })];
    const oracle = run('greedy-oracle', 5, { hitRate: 0.8 });
    const page = renderHtmlReport(comparison(runs, { oracle }));

    expect(sectionOf(page, 'summary')).toContain('<td class="best"><strong>112.5%</strong></td>');
    expect(page).not.toMatch(/upper bound|of oracle/);
  });
});
