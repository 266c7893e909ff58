/**
 * The report's admission figures: what a comparison run with admission (`PolicyRun.admission`)
 * shows, and that a comparison without it renders exactly as it did before they existed.
 */
import { describe, expect, it } from 'vitest';
import { renderHtmlReport } from '../../../src/sim/report/index.js';
import type { Comparison } from '../../../src/sim/result.js';
import { comparison, policies, run } from './comparison-fixture.js';

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
