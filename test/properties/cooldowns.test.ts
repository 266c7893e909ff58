/**
 * Property test of cooldowns against the registry's load figures: for any sequence of leases
 * (some released with a `Retry-After`), direct cooldowns, breaker moves, status changes and clock
 * steps, every registry array's load bounds count exactly its workers that are ready, closed and
 * not cooling down, at their loads; a worker is available exactly when it is ready and its breaker
 * admits a request; and the array's candidate-view version moves whenever the set of those
 * workers, or of the ready ones, changed — a cooldown that ends unobserved included, once a read
 * finds it over.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Worker, type WorkerLease, WorkerRegistry } from '../../src/index.js';
import { viewOf } from '../../src/workers/candidate-view.js';
import { runs } from '../helpers/fc-settings.js';

type Op =
  | { kind: 'acquire'; worker: number }
  | { kind: 'release'; lease: number; outcome: 'ok' | 'fail' | 'retryAfter'; ms: number }
  | { kind: 'coolDown'; worker: number; ms: number }
  | { kind: 'breaker'; worker: number; move: 'open' | 'reset' }
  | { kind: 'status'; worker: number; ready: boolean }
  | { kind: 'tick'; ms: number };

const worker = fc.nat(7);
const ms = fc.integer({ min: 0, max: 3_000 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('acquire' as const), worker }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('release' as const),
      lease: fc.nat(),
      outcome: fc.constantFrom('ok' as const, 'fail' as const, 'retryAfter' as const),
      ms,
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('coolDown' as const), worker, ms }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('breaker' as const),
      worker,
      move: fc.constantFrom('open' as const, 'reset' as const),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('status' as const), worker, ready: fc.boolean() }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('tick' as const), ms }) },
);

/** In the load histograms: ready, breaker closed, no cooldown (each read applies lazy moves). */
const counted = (w: Worker): boolean =>
  w.status === 'ready' && w.circuitBreaker.state === 'closed' && w.circuitBreaker.cooldownMs === 0;

/** What a view's version must follow: the counted members and the ready members. */
const membership = (workers: readonly Worker[]): string =>
  `${workers.filter(counted).map((w) => w.id)}|${workers.filter((w) => w.status === 'ready').map((w) => w.id)}`;

describe('cooldowns (property)', () => {
  it('load bounds, availability and view versions follow every cooldown, started or ended', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 50 }), async (ops) => {
        let now = 0;
        const registry = await WorkerRegistry.create({
          defaultStatus: 'ready',
          clock: () => now,
          circuitBreaker: { failureThreshold: 3, openMs: 1_000, maxCooldownMs: 2_000 },
        });
        const models = [['a'], ['a', 'b'], ['b'], []];
        for (let i = 0; i < 8; i++)
          await registry.register({ url: `http://w${i}:1`, models: models[i % 4]! });
        const arrays = () => [
          registry.getAll(),
          registry.getByModel('a'),
          registry.getByModel('b'),
          registry.getByModel('other'),
        ];
        const leases: WorkerLease[] = [];
        const out = new Float64Array(3);
        let seen = arrays().map((workers) => ({
          workers,
          version: viewOf(workers).version,
          members: membership(workers),
        }));

        for (const o of ops) {
          const all = registry.getAll();
          const w = 'worker' in o ? all[o.worker % all.length]! : undefined;
          if (o.kind === 'acquire') leases.push(w!.acquire());
          else if (o.kind === 'release') {
            const lease = leases.length === 0 ? undefined : leases[o.lease % leases.length];
            if (o.outcome === 'ok') lease?.release({ ok: true, status: 200 });
            else if (o.outcome === 'fail') lease?.release({ ok: false, status: 503 });
            else lease?.release({ ok: false, status: 429, retryAfterMs: o.ms });
          } else if (o.kind === 'coolDown') w!.circuitBreaker.coolDown(o.ms);
          else if (o.kind === 'breaker') {
            if (o.move === 'open') w!.circuitBreaker.forceOpen();
            else w!.circuitBreaker.reset();
          } else if (o.kind === 'status') {
            await registry.transitionStatus(w!.id, o.ready ? 'ready' : 'not_ready');
          } else now += o.ms;

          // Availability: ready and admitted by the breaker (reads apply lazy transitions).
          for (const x of registry.getAll()) {
            expect(x.isAvailable()).toBe(x.status === 'ready' && x.circuitBreaker.canExecute());
            if (x.circuitBreaker.cooldownMs > 0) expect(x.isAvailable()).toBe(false);
          }
          const next = arrays().map((workers) => ({
            workers,
            version: viewOf(workers).version,
            members: membership(workers),
          }));
          next.forEach((entry, i) => {
            const loads = entry.workers.filter(counted).map((x) => x.load);
            if (entry.workers.length > 0) {
              expect(viewOf(entry.workers).loadBounds(out)).toBe(true);
              expect(out[2]).toBe(loads.length);
              if (loads.length > 0) {
                expect(out[0]).toBe(Math.min(...loads));
                expect(out[1]).toBe(Math.max(...loads));
              }
            }
            const before = seen[i]!;
            if (before.workers === entry.workers && before.members !== entry.members)
              expect(entry.version).not.toBe(before.version);
          });
          seen = next;
        }
        for (const lease of leases) lease.release();
        registry.close();
      }),
      runs(200, 2_000),
    );
  });
});
