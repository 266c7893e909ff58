import { describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../../src/sim/report/index.js';
import { comparison, count, policies, run } from './comparison-fixture.js';

/** The HTML of the report's section `id`. */
function sectionOf(html: string, id: string): string {
  const start = html.indexOf(`<section id="${id}">`);
  expect(start).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</section>', start));
}

/** The summary-table row of `policy` (its escaped name as given), without the `<tr>` tags. */
function row(html: string, escapedPolicy: string): string {
  const start = html.indexOf(`<tr><th scope="row">${escapedPolicy}</th>`);
  expect(start).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</tr>', start));
}

describe('renderHtmlReport: document shape', () => {
  it('is one HTML5 document with balanced SVG elements', () => {
    const html = renderHtmlReport(comparison(policies(9)));

    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(count(html, '<html')).toBe(1);
    expect(count(html, '</html>')).toBe(1);
    expect(count(html, '<head>')).toBe(1);
    expect(count(html, '<body>')).toBe(1);
    expect(count(html, '<svg')).toBeGreaterThan(0);
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });

  it('has no script and no external resource of any kind', () => {
    const html = renderHtmlReport(comparison(policies(9)));

    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/<link|<img|<iframe|@import|url\(|\ssrc=|\shref=/i);
  });

  it('names every policy, in the table and in the charts', () => {
    const runs = policies(12);
    const html = renderHtmlReport(comparison(runs));

    for (const r of runs) {
      expect(html).toContain(`<th scope="row">${r.policy}</th>`);
      expect(count(html, `>${r.policy}<`)).toBeGreaterThanOrEqual(4);
    }
  });

  it('uses the given title, and a default naming the workload', () => {
    expect(renderHtmlReport(comparison(policies(2)), { title: 'Nightly' })).toContain(
      '<title>Nightly</title>',
    );
    expect(renderHtmlReport(comparison(policies(2)))).toContain(
      '<title>fleetroute simulation: shared-prefix</title>',
    );
  });
});

describe('renderHtmlReport: text from the data', () => {
  it('escapes policy, workload, arrivals and parameter text everywhere', () => {
    const nasty = '<b>&"x"';
    const c = comparison([run(nasty, 0), run('cache_aware', 1)], {
      workload: {
        name: nasty,
        description: '<script>alert(1)</script>',
        requests: 10,
        parameters: { [nasty]: nasty },
      },
      arrivals: '<i>bursty</i>',
    });
    const html = renderHtmlReport(c, { title: nasty });

    expect(html).not.toContain(nasty);
    expect(html).not.toMatch(/<b>|<i>|<script/);
    expect(html).toContain('&lt;b&gt;&amp;&quot;x&quot;');
    expect(html).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });

  it('formats numbers for people: thousands separators, percentages with one decimal', () => {
    const html = renderHtmlReport(comparison(policies(3)));

    expect(html).toContain('10,000 requests');
    expect(html).toContain('262,144 tokens');
    expect(html).toContain('Ceiling hit rate <strong>88.2%</strong>');
    expect(row(html, 'random')).toContain('<td>50.0%</td>');
    expect(row(html, 'random')).toContain('<td>5,000</td>');
  });

  it('describes an infinite cache as unbounded', () => {
    const base = comparison(policies(2));
    const html = renderHtmlReport({ ...base, fleet: { ...base.fleet, cacheTokens: Infinity } });

    expect(html).toContain('prefix cache of unbounded');
    expect(html).not.toContain('Infinity');
  });

  it('shows — for undefined precision, NaN and Infinity, never the raw values', () => {
    const odd = run('odd', 0, {
      precision: undefined,
      hitRate: Number.NaN,
      ttftMs: { p50: Number.NaN, p90: 1, p99: Number.POSITIVE_INFINITY, mean: 1 },
      routingMicrosPerRequest: Number.NEGATIVE_INFINITY,
    });
    const html = renderHtmlReport(comparison([odd, run('good', 1)]));

    expect(count(row(html, 'odd'), '<td>—</td>')).toBe(6);
    expect(html).not.toMatch(/NaN|Infinity/);
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });
});

describe('renderHtmlReport: content', () => {
  it('draws the ceiling as a labelled dashed line on the hit-rate chart', () => {
    const html = renderHtmlReport(comparison(policies(3)));

    expect(html).toContain('stroke-dasharray="6 4"');
    expect(html).toContain('>ceiling 88.2%</text>');
  });

  it('puts the best value of each column in bold, highest or lowest as the metric wants', () => {
    const html = renderHtmlReport(comparison(policies(4)));
    const best = row(html, 'least_load');
    const worst = row(html, 'random');

    expect(count(best, '<strong>')).toBe(5);
    expect(best).toContain('<strong>59.0%</strong>');
    expect(count(worst, '<strong>')).toBe(6);
    expect(worst).toContain('<strong>100</strong>');
    expect(worst).toContain('<strong>1.50</strong>');
    expect(worst).toContain('<strong>1.20</strong>'); // tokens max/mean
  });

  it('switches the TTFT axis to log scale when values span more than 50×', () => {
    const wide = [
      run('fast', 0, { ttftMs: { p50: 30, p90: 50, p99: 90, mean: 40 } }),
      run('slow', 1),
    ];
    wide[1] = run('slow', 1, { ttftMs: { p50: 9000, p90: 12_000, p99: 30_000, mean: 9500 } });
    const logHtml = renderHtmlReport(comparison(wide));
    const linearHtml = renderHtmlReport(comparison(policies(3)));

    expect(logHtml).toContain('data-scale="log"');
    expect(logHtml).toContain('(log scale)');
    for (const tick of ['>10 ms<', '>100 ms<', '>1 s<', '>10 s<', '>100 s<']) {
      expect(logHtml).toContain(tick);
    }
    expect(linearHtml).toContain('data-scale="linear"');
    expect(linearHtml).not.toContain('(log scale)');
  });

  it('gives every worker its own colour and a legend up to 16 workers', () => {
    const html = renderHtmlReport(comparison(policies(2, { workers: 16 })));

    expect(html).toContain('>worker 15<');
    expect(html).not.toContain('no per-worker legend');
  });

  it('renders 256 workers with thin lines and no per-worker legend', () => {
    const html = renderHtmlReport(comparison(policies(3, { workers: 256, samples: 200 })));

    expect(html).not.toContain('>worker 0<');
    expect(html).toContain('256 workers, one thin line each; no per-worker legend');
    expect(html).toContain('stroke-width="0.8"');
    expect(count(sectionOf(html, 'in-flight'), '<path ')).toBe(3 * 256);
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });
});

describe('renderHtmlReport: edge cases', () => {
  it('renders the overview and a note when there are no runs', () => {
    const html = renderHtmlReport(comparison([]));

    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).toContain('No results');
    expect(html).toContain('shared-prefix');
    expect(html).not.toContain('<section id="summary">');
    expect(html).toContain('<section id="run">');
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });

  it('renders one policy, one worker, zero values and empty timelines', () => {
    const zero = run('only', 0, {
      hitRate: 0,
      ttftMs: { p50: 0, p90: 0, p99: 0, mean: 0 },
      throughput: { requestsPerSecond: 0, outputTokensPerSecond: 0, steadyRequestsPerSecond: 0 },
      load: { perWorker: [0], maxOverMean: Number.NaN, cv: Number.NaN },
      timeline: { intervalMs: 100, inFlight: [[]], waiting: [[]], running: [[]] },
      ttftQuantilesMs: [],
    });
    const html = renderHtmlReport(comparison([zero], { ceiling: 0 }));

    expect(html).toContain('>no samples<');
    expect(html).not.toMatch(/NaN|Infinity/);
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });

  it('reports completed counts only when some request did not complete', () => {
    const partial = [run('a', 0, { completed: 998 }), run('b', 1)];

    expect(renderHtmlReport(comparison(partial))).toContain('<td>998 / 1,000</td>');
    expect(renderHtmlReport(comparison(policies(2)))).not.toContain('>Completed</th>');
  });
});

describe('renderHtmlReport: determinism and size', () => {
  it('gives byte-identical output for equal inputs', () => {
    const at = new Date(Date.UTC(2026, 4, 1, 12, 0, 0));
    const a = renderHtmlReport(comparison(policies(9)), { generatedAt: at });
    const b = renderHtmlReport(comparison(policies(9)), { generatedAt: new Date(at.getTime()) });

    expect(a).toBe(b);
    expect(a).toContain('Generated 2026-05-01 12:00:00 UTC');
    expect(renderHtmlReport(comparison(policies(9)))).not.toContain('Generated');
  });

  it('stays under 3 MB for 10 policies × 64 workers × 10,000 samples', () => {
    const html = renderHtmlReport(comparison(policies(10, { workers: 64, samples: 10_000 })));
    const points = [...sectionOf(html, 'in-flight').matchAll(/<path d="([^"]*)"/g)].map(
      (m) => m[1]!.split(/[ M]/).filter((p) => p !== '').length,
    );

    expect(Buffer.byteLength(html)).toBeLessThan(3_000_000);
    expect(points).toHaveLength(640);
    expect(Math.max(...points)).toBeLessThanOrEqual(250);
    expect(html).toContain('each point is the largest of up to 40 samples');
  });
});

describe('renderHtmlReport: large fleets', () => {
  it('draws fewer points per line for a large fleet, so 12 × 256 workers stay under 3 MB', () => {
    const html = renderHtmlReport(comparison(policies(12, { workers: 256, samples: 2000 })));
    const points = [...sectionOf(html, 'in-flight').matchAll(/<path d="([^"]*)"/g)].map(
      (m) => m[1]!.split(/[ M]/).filter((p) => p !== '').length,
    );

    expect(points).toHaveLength(12 * 256);
    expect(Math.max(...points)).toBeLessThanOrEqual(62);
    expect(Buffer.byteLength(html)).toBeLessThan(3_000_000);
  });
});

describe('renderHtmlReport: decisions by branch', () => {
  it('lists each policy that reports branches, with counts and shares, and skips the others', () => {
    const html = renderHtmlReport(comparison([run('cache_aware', 0), run('round_robin', 1)]));
    const decisions = sectionOf(html, 'decisions');
    expect(decisions).toContain('<th scope="col">cache_hit</th>');
    expect(decisions).toContain('<th scope="row">cache_aware</th>');
    expect(decisions).toContain('900 <span class="note">90.0%</span>');
    expect(decisions).not.toContain('round_robin');
  });

  it('has no such section when no policy reports branches', () => {
    const html = renderHtmlReport(comparison([run('round_robin', 0), run('random', 1)]));
    expect(html).not.toContain('<section id="decisions">');
  });
});
