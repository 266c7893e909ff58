/**
 * The shortcut admission takes while the fleet has room — "no worker can be full", read from the
 * registry's load bounds and a summary of the reports — is never wrong: whenever it says so,
 * every available worker has room by the full per-worker rule.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ADMISSION_OPTIONS } from '../../src/admission/admission-options.js';
import { Saturation } from '../../src/admission/saturation.js';
import { type WorkerLease, WorkerRegistry } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';

const worker = fc.record({
  leases: fc.integer({ min: 0, max: 6 }),
  firstTokens: fc.integer({ min: 0, max: 6 }),
  report: fc.option(
    fc.record({
      waitingRequests: fc.integer({ min: 0, max: 6 }),
      tokenUsage: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
  ),
  sentAfterReport: fc.integer({ min: 0, max: 3 }),
  ready: fc.boolean(),
});

describe('Saturation.noneFull (properties)', () => {
  it('says no worker is full only when every available worker has room', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (let i = 0; i < 4; i++)
      await registry.register({ url: `http://w${i}:8000`, models: ['m'] });
    const workers = registry.getByModel('m');
    await fc.assert(
      fc.asyncProperty(
        fc.array(worker, { minLength: 4, maxLength: 4 }),
        fc.record({
          maxInFlight: fc.integer({ min: 1, max: 8 }),
          maxPrefilling: fc.integer({ min: 1, max: 8 }),
          maxWaitingRequests: fc.integer({ min: 1, max: 8 }),
          maxTokenUsage: fc.double({ min: 0.1, max: 1, noNaN: true }),
        }),
        fc.integer({ min: 0, max: 2_000 }),
        async (specs, limits, age) => {
          const saturation = new Saturation(ADMISSION_OPTIONS.read(limits), 1_000);
          const leases: WorkerLease[] = [];
          for (const [i, spec] of specs.entries()) {
            const w = workers[i]!;
            await registry.transitionStatus(w.id, spec.ready ? 'ready' : 'not_ready');
            for (let k = 0; k < spec.leases; k++) leases.push(w.acquire());
            const mine = leases.slice(-spec.leases);
            for (let k = 0; k < Math.min(spec.firstTokens, mine.length); k++) mine[k]!.firstToken();
            if (spec.report !== null)
              saturation.record(new Map([[w.url, spec.report]]), 0, () => w.prefilling);
            for (let k = 0; k < spec.sentAfterReport; k++) leases.push(w.acquire());
          }
          if (saturation.noneFull(workers, age))
            for (const w of workers)
              if (w.isAvailable()) expect(saturation.roomOf(w, age)).toBeGreaterThan(0);
          for (const lease of leases) lease.release();
        },
      ),
      runs(500, 3000),
    );
    registry.close();
  });
});
