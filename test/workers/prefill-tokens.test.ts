/**
 * The runtime's prefill-token accounting: a lease charged with its predicted uncached prompt
 * tokens (`chargePrefill`) counts them in its worker's `prefillTokens` until its first token or
 * release, whichever comes first; a measured charge feeds the worker's prefill speed at the first
 * token.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { WorkerRegistry } from '../../src/index.js';
import {
  chargePrefill,
  type Worker,
  type WorkerLease,
  workerInternals,
} from '../../src/workers/worker.js';
import { runs } from '../helpers/fc-settings.js';

const tokensOf = (worker: Worker) => workerInternals.runtimeOf(worker).prefillTokens;
const speedOf = (worker: Worker, prior: number) =>
  workerInternals.runtimeOf(worker).prefillSpeed(prior);

async function oneWorker(): Promise<Worker> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  return registry.register({ url: 'http://a:1' });
}

describe('prefill tokens in flight', () => {
  it('a charge counts until the first token, once, and a second charge of the same lease does nothing', async () => {
    // Arrange
    const worker = await oneWorker();
    const lease = worker.acquire();

    // Act / Assert
    expect(chargePrefill(lease, 300, 0)).toBe(true);
    expect(chargePrefill(lease, 500, 0)).toBe(false);
    expect(tokensOf(worker)).toBe(300);
    lease.firstToken();
    expect(tokensOf(worker)).toBe(0);
    lease.release();
    expect(tokensOf(worker)).toBe(0);
  });

  it('a lease released before its first token gives its charge back; one charged after its first token is not counted', async () => {
    // Arrange
    const worker = await oneWorker();
    const a = worker.acquire();
    const b = worker.acquire();
    b.firstToken();

    // Act
    chargePrefill(a, 120, 0);
    const late = chargePrefill(b, 80, 0);

    // Assert
    expect(late).toBe(false);
    expect(tokensOf(worker)).toBe(120);
    a.release();
    expect(tokensOf(worker)).toBe(0);
  });

  it('bad charges (negative, NaN, infinite) are refused', async () => {
    const worker = await oneWorker();
    for (const bad of [-1, Number.NaN, Number.POSITIVE_INFINITY]) {
      const lease = worker.acquire();
      expect(chargePrefill(lease, bad, 0)).toBe(false);
      lease.release();
    }
    expect(tokensOf(worker)).toBe(0);
  });

  it('never negative, and back to zero when every lease ends, whatever the interleaving of charges, first tokens and releases', async () => {
    const step = fc.record({
      w: fc.nat(2),
      tokens: fc.integer({ min: 0, max: 50_000 }),
      charge: fc.boolean(),
      first: fc.boolean(),
    });
    await fc.assert(
      fc.asyncProperty(
        fc.array(step, { minLength: 1, maxLength: 24 }),
        fc.scheduler(),
        async (steps, s) => {
          // Arrange: three workers; each step a lease whose charge, first token and release are
          // scheduled as separate tasks, in an order the scheduler picks.
          const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
          const workers = [0, 1, 2].map((i) => `http://w${i}:1`);
          for (const url of workers) await registry.register({ url });
          const all = registry.getAll();
          const expected = new Map<WorkerLease, number>();
          const check = () => {
            for (const worker of all) {
              const held = [...expected].filter(([l]) => l.worker === worker);
              const sum = held.reduce((total, [, t]) => total + t, 0);
              expect(tokensOf(worker)).toBeGreaterThanOrEqual(0);
              expect(tokensOf(worker)).toBe(sum);
            }
          };
          const tasks: Promise<void>[] = [];
          for (const st of steps) {
            const lease = all[st.w]!.acquire();
            let charged = false;
            let prefilling = true;
            if (st.charge)
              tasks.push(
                s.schedule(Promise.resolve()).then(() => {
                  if (chargePrefill(lease, st.tokens, 0)) {
                    charged = true;
                    expected.set(lease, st.tokens);
                  }
                  expect(charged).toBe(prefilling && !lease.released);
                  check();
                }),
              );
            if (st.first)
              tasks.push(
                s.schedule(Promise.resolve()).then(() => {
                  lease.firstToken();
                  prefilling = false;
                  expected.delete(lease);
                  check();
                }),
              );
            tasks.push(
              s.schedule(Promise.resolve()).then(() => {
                lease.release();
                prefilling = false;
                expected.delete(lease);
                check();
              }),
            );
          }

          // Act
          await s.waitAll();
          await Promise.all(tasks);

          // Assert
          for (const worker of all) expect(tokensOf(worker)).toBe(0);
        },
      ),
      runs(60, 300),
    );
  });
});

describe('prefill speed learned from first tokens', () => {
  it('starts at the prior, moves toward what first tokens show, and is forgotten on demand', async () => {
    // Arrange: a prior of 10 tokens per ms; the worker prefills at 2.
    const worker = await oneWorker();
    let now = 0;
    const clock = () => now;
    expect(speedOf(worker, 10)).toBe(10);

    // Act: 40 requests of 1,000 tokens, each 500 ms to its first token.
    for (let i = 0; i < 40; i++) {
      const lease = worker.acquire();
      chargePrefill(lease, 1_000, 0, clock, 10);
      now += 500;
      lease.firstToken();
      lease.release();
    }

    // Assert
    const learned = speedOf(worker, 10);
    expect(learned).toBeLessThan(3);
    expect(learned).toBeGreaterThan(2);
    workerInternals.runtimeOf(worker).forgetPrefillSpeed();
    expect(speedOf(worker, 10)).toBe(10);
  });

  it('one stalled request cannot wreck the estimate: an observation counts as at most 4 times slower', async () => {
    // Arrange
    const worker = await oneWorker();
    let now = 0;
    const clock = () => now;
    const lease = worker.acquire();
    chargePrefill(lease, 1_000, 0, clock, 10);

    // Act: 10 minutes for 1,000 tokens.
    now += 600_000;
    lease.firstToken();

    // Assert: the estimate stays within a few times the prior.
    expect(speedOf(worker, 10)).toBeGreaterThan(1.5);
  });

  it('a lease released before its first token, or charged without a clock, teaches nothing', async () => {
    const worker = await oneWorker();
    let now = 0;
    const a = worker.acquire();
    chargePrefill(a, 1_000, 0, () => now, 10);
    now += 10_000;
    a.release();
    const b = worker.acquire();
    chargePrefill(b, 1_000, 0);
    now += 10_000;
    b.firstToken();
    expect(speedOf(worker, 10)).toBe(10);
  });
});
