/**
 * The report's admission figures: what a comparison run with admission (`PolicyRun.admission`)
 * shows, and that a comparison without it renders exactly as it did before they existed.
 */
import { describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../../src/sim/report/index.js';
import type { AdmissionRun, Comparison, PolicyRun } from '../../../src/sim/result.js';
import { comparison, count, policies, run } from './comparison-fixture.js';

/** A comparison that touches every optional part of the page but admission. */
function withoutAdmission(): Comparison {
  return comparison(policies(3, { workers: 4, samples: 24 }), {
    oracle: run('greedy-oracle', 5, { hitRate: 0.8 }),
    kvEvents: { delayMs: 5, loss: 0.01 },
    engineRestarts: 2,
    routers: 2,
    run: { argv: ['fleetroute', 'simulate', '--workers', '4'], version: '0.1.0' },
  });
}

describe('renderHtmlReport without admission', () => {
  it('renders byte for byte the page it rendered before the admission figures', async () => {
    const html = renderHtmlReport(withoutAdmission(), {
      generatedAt: new Date(Date.UTC(2026, 0, 2, 3, 4, 5)),
    });

    // Written by the renderer as it stood before admission figures existed; a change to the
    // page without admission shows here as a diff.
    await expect(html).toMatchFileSnapshot('./golden/no-admission.html.txt');
    expect(html).not.toMatch(/admission|rejected|tenant/i);
  });
});

/** The HTML of the report's section `id`. */
function sectionOf(html: string, id: string): string {
  const start = html.indexOf(`<section id="${id}">`);
  expect(start, id).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</section>', start));
}

/** The row of `label` (escaped, as shown) in `html`, without the `<tr>` tags. */
function rowOf(html: string, label: string): string {
  const start = html.indexOf(`<tr><th scope="row">${label}`);
  expect(start, label).toBeGreaterThanOrEqual(0);
  return html.slice(start, html.indexOf('</tr>', start));
}

function percentiles(p50: number, p99: number): AdmissionRun['queueWaitMs'] {
  return { p50, p90: (p50 + p99) / 2, p99, mean: p50 };
}

/** A run's admission figures, shaped like a run at 130 % load with a heavy tenant. */
function admission(overrides: Partial<AdmissionRun> = {}): AdmissionRun {
  return {
    served: 539,
    servedAfterWait: 523,
    rejected: { shed: 301, queue_full: 0, timeout: 184 },
    queueWaitMs: percentiles(375.49, 497.67),
    byPriority: [
      { priority: 0, requests: 719, served: 535, ttftMs: percentiles(707.4, 1072.03) },
      { priority: -1, requests: 305, served: 4, ttftMs: percentiles(424.7, 470.52) },
    ],
    tenants: [
      {
        tenant: 'tenant-0',
        requests: 811,
        served: 385,
        offeredShare: 0.792,
        saturatedShare: 0.7074,
      },
      { tenant: 'tenant-1', requests: 66, served: 45, offeredShare: 0.0646, saturatedShare: 0.086 },
      {
        tenant: 'tenant-2',
        requests: 71,
        served: 50,
        offeredShare: 0.0693,
        saturatedShare: 0.0937,
      },
      {
        tenant: 'tenant-3',
        requests: 76,
        served: 59,
        offeredShare: 0.0742,
        saturatedShare: 0.1128,
      },
    ],
    ...overrides,
  };
}

/** A policy run of 1,024 requests with `figures` as its admission. */
function admitted(policy: string, seed: number, figures: AdmissionRun): PolicyRun {
  return run(policy, seed, {
    requests: 1024,
    completed: figures.served,
    // Over the makespan the drain weighs in; the report shows the steady rate.
    throughput: {
      requestsPerSecond: 20 + seed,
      outputTokensPerSecond: 6700,
      steadyRequestsPerSecond: 26.3 + seed,
    },
    admission: figures,
  });
}

/** Two policies with admission, on a fleet of 62.7 requests/s. */
function withAdmission(overrides: Partial<Comparison> = {}): Comparison {
  const runs = [
    admitted('cache_aware', 0, admission()),
    admitted(
      'round_robin',
      1,
      admission({
        served: 560,
        servedAfterWait: 540,
        rejected: { shed: 295, queue_full: 7, timeout: 162 },
        queueWaitMs: percentiles(250, 610.2),
      }),
    ),
  ];
  return comparison(runs, { capacity: 62.7, ...overrides });
}

describe('renderHtmlReport with admission: figures per policy', () => {
  it('shows served, rejected by reason and the queue wait, as values', () => {
    const section = sectionOf(renderHtmlReport(withAdmission()), 'admission');
    const cacheAware = rowOf(section, 'cache_aware');
    const roundRobin = rowOf(section, 'round_robin');

    expect(cacheAware).toContain('<td>539</td>'); // served
    expect(cacheAware).toContain('<td>523</td>'); // after a wait
    expect(cacheAware).toContain('<td>301</td>'); // shed
    expect(cacheAware).toContain('<td>0</td>'); // queue full
    expect(cacheAware).toContain('<td>184</td>'); // timed out
    expect(cacheAware).toContain('<td>375 ms</td>'); // wait p50
    expect(cacheAware).toContain('<td>498 ms</td>'); // wait p99
    expect(roundRobin).toContain('<td>560</td>');
    expect(roundRobin).toContain('<td>7</td>');
    expect(roundRobin).toContain('<td>610 ms</td>');
    for (const header of ['Served', 'Shed', 'Queue full', 'Timed out', 'Wait p50', 'Wait p99']) {
      expect(section).toContain(`>${header}`);
    }
  });

  it('shows time to first token p99 by priority band, highest band first, with its served count', () => {
    const section = sectionOf(renderHtmlReport(withAdmission()), 'admission');
    const cacheAware = rowOf(section, 'cache_aware');

    expect(section.indexOf('>Priority 0')).toBeLessThan(section.indexOf('>Priority -1'));
    expect(cacheAware).toContain('1.07 s <span class="note">535 / 719</span>');
    expect(cacheAware).toContain('471 ms <span class="note">4 / 305</span>');
  });

  it('shows served throughput against the estimated capacity', () => {
    const cacheAware = rowOf(
      sectionOf(renderHtmlReport(withAdmission()), 'admission'),
      'cache_aware',
    );

    expect(cacheAware).toContain('<td>26.3</td>'); // served req/s
    expect(cacheAware).toContain('<td>41.9%</td>'); // 26.3 / 62.7
  });

  it("shows each tenant's offered share against its share served while saturated", () => {
    const section = sectionOf(renderHtmlReport(withAdmission()), 'admission');
    const offered = rowOf(section, 'Offered');
    const cacheAware = rowOf(section.slice(section.indexOf('Offered')), 'cache_aware');

    expect(section).toContain('>tenant-0 <span class="tag">heaviest</span>');
    expect(offered).toContain('<td>79.2%</td>');
    expect(offered).toContain('<td>6.5%</td>');
    expect(cacheAware).toContain('<td>70.7%</td>');
    expect(cacheAware).toContain('<td>11.3%</td>');
  });

  it('draws the outcomes and the priority bands as charts with a legend each', () => {
    const section = sectionOf(renderHtmlReport(withAdmission()), 'admission');

    expect(section).toContain('aria-label="Requests served and turned away, by policy"');
    expect(section).toContain('<title>cache_aware shed: 301</title>');
    expect(section).toContain('<title>round_robin queue full: 7</title>');
    expect(section).toContain('aria-label="Time to first token p99 by priority band, by policy"');
    for (const label of [
      'served at once',
      'served after a wait',
      'shed',
      'queue full',
      'timed out',
    ]) {
      expect(section).toContain(`<span class="legend-label">${label}</span>`);
    }
    expect(count(section, '<svg class="chart"')).toBe(4); // two charts, wide and narrow
    expect(count(section, '<svg')).toBe(count(section, '</svg>'));
  });

  it('keeps the greedy oracle apart, as a reference', () => {
    const oracle = admitted('greedy-oracle', 4, admission({ served: 541 }));
    const section = sectionOf(renderHtmlReport(withAdmission({ oracle })), 'admission');

    expect(section).toContain('<tbody class="oracle"><tr><th scope="row">greedy-oracle');
    expect(rowOf(section, 'greedy-oracle')).toContain('<td>541</td>');
  });
});

describe('renderHtmlReport with admission: what admission did', () => {
  it('says in a sentence how many requests were served and turned away, and why', () => {
    const note = sectionOf(renderHtmlReport(withAdmission()), 'admission');

    expect(note).toContain('539 to 560 of 1,024 requests');
    expect(note).toContain('turned away 464 to 485');
    expect(note).toContain('295 to 301 shed');
    expect(note).toContain('0 to 7 for a full queue');
    expect(note).toContain('162 to 184 timed out');
    expect(note).toContain('41.9% to 43.5% of the estimated capacity');
  });

  it('names the limits in force when the comparison records its command line', () => {
    const argv = [
      'fleetroute',
      'simulate',
      '--load',
      '1.3',
      '--admission',
      '--admission-max-prefilling',
      '2',
      '--admission-max-wait-ms=500',
    ];
    const recorded = sectionOf(
      renderHtmlReport(withAdmission({ run: { argv, version: '0.1.0' } })),
      'admission',
    );
    const bare = sectionOf(
      renderHtmlReport(withAdmission({ run: { argv: argv.slice(0, 5), version: '0.1.0' } })),
      'admission',
    );

    expect(recorded).toContain('<code>--admission-max-prefilling 2</code>');
    expect(recorded).toContain('<code>--admission-max-wait-ms=500</code>');
    expect(recorded).not.toContain('--load');
    expect(bare).toContain('the router’s default limits');
    expect(sectionOf(renderHtmlReport(withAdmission()), 'admission')).not.toContain('in force');
  });

  it('says so when admission never held a request back', () => {
    const idle = admission({
      served: 1024,
      servedAfterWait: 0,
      rejected: { shed: 0, queue_full: 0, timeout: 0 },
      queueWaitMs: percentiles(0, 0),
    });
    const c = comparison([admitted('a', 0, idle), admitted('b', 1, idle)]);
    const section = sectionOf(renderHtmlReport(c), 'admission');

    expect(section).toContain('all 1,024 requests');
    expect(section).toContain('none waited');
    expect(section).toContain('none was turned away');
  });

  it('explains the admission figures in the glossary', () => {
    const html = renderHtmlReport(withAdmission());
    const footer = html.slice(html.indexOf('<footer>'));

    expect(footer).toContain('<dt>Served, turned away</dt>');
    expect(footer).toContain('<dt>Served while saturated</dt>');
  });
});

describe('renderHtmlReport with admission: text from outside', () => {
  it('escapes tenant names, a <script> tenant included', () => {
    const tenants = [
      { tenant: '<script>', requests: 900, served: 400, offeredShare: 0.9, saturatedShare: 0.6 },
      { tenant: 'a"&b', requests: 124, served: 100, offeredShare: 0.1, saturatedShare: 0.4 },
    ];
    const c = comparison([admitted('x', 0, admission({ tenants })), admitted('y', 1, admission())]);
    const html = renderHtmlReport(c);

    expect(html).not.toMatch(/<script/i);
    expect(html).toContain('&lt;script&gt;');
    expect(html).toContain('a&quot;&amp;b');
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });

  it('stays self-contained: no script and no external resource', () => {
    const html = renderHtmlReport(
      withAdmission({ oracle: admitted('greedy-oracle', 4, admission()) }),
    );

    expect(html).not.toMatch(/<script/i);
    expect(html).not.toMatch(/https?:\/\//i);
    expect(html).not.toMatch(/<link|<img|<iframe|@import|url\(|\ssrc=|\shref=/i);
  });

  it('shows the 8 largest of a thousand tenants and sums the others', () => {
    const many = Array.from({ length: 1000 }, (_, i) => ({
      tenant: `t-${String(i).padStart(4, '0')}`,
      requests: 1,
      served: 1,
      offeredShare: i === 999 ? 0.5 : 0.5 / 999,
      saturatedShare: i === 999 ? 0.25 : 0.75 / 999,
    }));
    const c = comparison([admitted('x', 0, admission({ tenants: many }))]);
    const section = sectionOf(renderHtmlReport(c), 'admission');

    expect(section).toContain('>t-0999 <span class="tag">heaviest</span>');
    expect(count(section, '>t-0')).toBe(8);
    expect(section).toContain('>992 others<');
    expect(rowOf(section, 'Offered')).toContain('<td>49.6%</td>'); // 992 × 0.5 / 999
  });

  it('shows — for missing and non-finite figures, never NaN', () => {
    const odd = admission({
      queueWaitMs: percentiles(Number.NaN, Number.POSITIVE_INFINITY),
      byPriority: [
        { priority: 0, requests: 3, served: 0, ttftMs: percentiles(Number.NaN, Number.NaN) },
      ],
      tenants: [],
    });
    const html = renderHtmlReport(comparison([admitted('x', 0, odd)], { capacity: 0 }));

    expect(html).not.toMatch(/NaN|Infinity/);
    expect(rowOf(sectionOf(html, 'admission'), 'x')).toContain('<td>—</td>');
    expect(count(html, '<svg')).toBe(count(html, '</svg>'));
  });
});
