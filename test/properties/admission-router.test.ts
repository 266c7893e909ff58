/**
 * Admission under interleavings: calls of random priorities and tenants, some aborted by their
 * callers, answers and aborts resolved in an order fast-check's scheduler picks. Every call ends
 * exactly once — served, turned away with `SATURATED`, or aborted — the figures count each
 * outcome once, no lease is left, and no worker ever holds more than the admission allows.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { routerFleet } from '../support/router-fleet.js';

interface Call {
  readonly priority: number;
  readonly tenant: string;
  readonly abort: boolean;
}

const call: fc.Arbitrary<Call> = fc.record({
  priority: fc.integer({ min: -1, max: 2 }),
  tenant: fc.constantFrom('a', 'b', 'c'),
  abort: fc.boolean(),
});

describe('Router admission (properties)', () => {
  it('ends every call exactly once, counts it once, and leaves nothing behind', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(call, { minLength: 1, maxLength: 14 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        async (s, calls, workers, maxQueued) => {
          const { router, workers: fleet } = await routerFleet(workers, {
            admission: { maxInFlight: 1, maxQueued },
          });
          let peak = 0;
          const ends = calls.map(() => 0);
          const outcomes: string[] = [];
          const all = calls.map((c, i) => {
            const controller = new AbortController();
            if (c.abort)
              void s
                .schedule(Promise.resolve(), `abort ${i}`)
                .then(() => controller.abort(new Error(`aborted ${i}`)));
            return router
              .execute(
                { model: 'm', priority: c.priority, tenant: c.tenant },
                (worker) => {
                  peak = Math.max(peak, ...fleet.map((w) => w.load));
                  expect(worker.load).toBeLessThanOrEqual(1);
                  return s.schedule(Promise.resolve({ status: 200 }), `answer ${i}`);
                },
                { signal: controller.signal },
              )
              .then(
                () => {
                  ends[i]!++;
                  outcomes[i] = 'served';
                },
                (error: unknown) => {
                  ends[i]!++;
                  if (FleetRouteError.is(error, 'SATURATED')) outcomes[i] = 'saturated';
                  else if (error instanceof Error && error.message === `aborted ${i}`)
                    outcomes[i] = 'aborted';
                  else throw error;
                },
              );
          });
          await s.waitFor(Promise.all(all));
          expect(ends).toEqual(calls.map(() => 1));
          expect(peak).toBeLessThanOrEqual(1);
          expect(fleet.map((w) => w.load)).toEqual(fleet.map(() => 0));
          const stats = router.stats().admission!;
          expect(stats.queued).toBe(0);
          const rejected = Object.values(stats.rejected).reduce((a, b) => a + b, 0);
          expect(rejected).toBe(outcomes.filter((o) => o === 'saturated').length);
          // An abort after admission ends the call in its attempt, not in the queue.
          expect(stats.admitted + stats.admittedAfterWait + rejected + stats.aborted).toBe(
            calls.length,
          );
          expect(stats.aborted).toBeLessThanOrEqual(outcomes.filter((o) => o === 'aborted').length);
          await router.close();
        },
      ),
      runs(100, 500),
    );
  });
});
