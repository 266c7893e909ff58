/**
 * `Worker.prefilling` and `WorkerLease.firstToken()`: a lease counts in its worker's prefilling
 * from `acquire()` until its first token is marked or it is released, whichever comes first; the
 * registry arrays' views report the lowest prefilling of their available workers in O(groups).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Worker, WorkerLease, WorkerRegistry, WorkerStatus } from '../../src/index.js';
import { viewOf } from '../../src/workers/candidate-view.js';
import { runs } from '../helpers/fc-settings.js';
import { recordedRegistry } from '../support/fixtures.js';

/** Lease counters of a worker, read together. */
const counts = (worker: Worker) => ({ prefilling: worker.prefilling, load: worker.load });

/** `[min load, max load, available, min prefilling]` of a registry array's view. */
function bounds(workers: readonly Worker[]): number[] {
  const out = new Float64Array(4);
  expect(viewOf(workers).loadBounds(out)).toBe(true);
  return [...out];
}

describe('Worker.prefilling', () => {
  it('starts at 0, and acquire() raises it with load', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://a:1' });
    expect(counts(worker)).toEqual({ prefilling: 0, load: 0 });

    // Act
    worker.acquire();
    worker.acquire();

    // Assert
    expect(counts(worker)).toEqual({ prefilling: 2, load: 2 });
  });

  it('firstToken() lowers prefilling once and leaves load: true the first time, false after', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://a:1' });
    const lease = worker.acquire();
    worker.acquire();

    // Act
    const first = lease.firstToken();
    const second = lease.firstToken();

    // Assert
    expect([first, second]).toEqual([true, false]);
    expect(counts(worker)).toEqual({ prefilling: 1, load: 2 });
  });

  it('release() after firstToken() lowers load only', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://a:1' });
    const lease = worker.acquire();
    worker.acquire();
    lease.firstToken();

    // Act
    lease.release();

    // Assert
    expect(counts(worker)).toEqual({ prefilling: 1, load: 1 });
  });

  it('release() without firstToken() lowers both, exactly once', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://a:1' });
    const lease = worker.acquire();
    worker.acquire();

    // Act
    lease.release();
    lease.release();

    // Assert
    expect(counts(worker)).toEqual({ prefilling: 1, load: 1 });
  });

  it('firstToken() after release() returns false and changes nothing', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://a:1' });
    const lease = worker.acquire();
    worker.acquire();
    lease.release();

    // Act
    const marked = lease.firstToken();

    // Assert
    expect(marked).toBe(false);
    expect(counts(worker)).toEqual({ prefilling: 1, load: 1 });
  });

  it('carries over a replace (new models, new breaker): old leases mark and release into the shared count', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://a:1', models: ['m'] });
    const marked = worker.acquire();
    const unmarked = worker.acquire();
    const next = await registry.replace(worker.id, {
      url: 'http://a:1',
      models: ['n'],
      circuitBreaker: { failureThreshold: 1 },
    });
    expect(next).not.toBe(worker);
    expect(counts(next)).toEqual({ prefilling: 2, load: 2 });
    expect(bounds(registry.getByModel('n'))).toEqual([2, 2, 1, 2]);

    // Act
    marked.firstToken();
    const afterMark = { next: counts(next), old: counts(worker) };
    const view = bounds(registry.getByModel('n'));
    unmarked.release();

    // Assert
    expect(afterMark).toEqual({
      next: { prefilling: 1, load: 2 },
      old: { prefilling: 1, load: 2 },
    });
    expect(view).toEqual([2, 2, 1, 1]);
    expect(counts(next)).toEqual({ prefilling: 0, load: 1 });
    expect(bounds(registry.getByModel('n'))).toEqual([1, 1, 1, 0]);
    marked.release();
    expect(counts(next)).toEqual({ prefilling: 0, load: 0 });
  });

  it('a removed worker still counts down its own leases', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://a:1' });
    const lease = worker.acquire();
    await registry.remove(worker.id);
    const again = await registry.register({ url: 'http://a:1' });

    expect(lease.firstToken()).toBe(true);
    expect(counts(worker)).toEqual({ prefilling: 0, load: 1 });
    expect(counts(again)).toEqual({ prefilling: 0, load: 0 });
    lease.release();
    expect(counts(worker)).toEqual({ prefilling: 0, load: 0 });
  });
});

describe('CandidateView.loadBounds: the lowest prefilling', () => {
  /** Workers a, b, c serving `m` with 1, 2 and 3 leases. */
  async function threeLoaded() {
    const { registry } = await recordedRegistry();
    const leases = new Map<string, WorkerLease[]>();
    for (const [name, n] of [
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ] as const) {
      const worker = await registry.register({ url: `http://${name}:1`, models: ['m'] });
      leases.set(
        name,
        Array.from({ length: n }, () => worker.acquire()),
      );
    }
    // Another model, so `getByModel('m')` is its own group rather than the whole registry.
    await registry.register({ url: 'http://z:1', models: ['other'] });
    const byName = (name: string) => registry.getByUrl(`http://${name}:1`)!;
    return { registry, leases: (name: string) => leases.get(name)!, byName };
  }

  it('is written to out[3] only when out has a fourth element', async () => {
    const { registry } = await threeLoaded();
    const out = new Float64Array(3);
    expect(viewOf(registry.getByModel('m')).loadBounds(out)).toBe(true);
    expect([...out]).toEqual([1, 3, 3]);
    expect(bounds(registry.getByModel('m'))).toEqual([1, 3, 3, 1]);
  });

  it('follows first tokens, independently of the in-flight bounds, without moving the version', async () => {
    // Arrange
    const { registry, leases } = await threeLoaded();
    const m = registry.getByModel('m');
    const version = viewOf(m).version;

    // Act
    for (const lease of leases('b')) lease.firstToken();

    // Assert
    expect(bounds(m)).toEqual([1, 3, 3, 0]);
    expect(bounds(registry.getByModel('other'))).toEqual([0, 0, 1, 0]);
    expect(bounds(registry.getAll())).toEqual([0, 3, 4, 0]);
    expect(viewOf(m).version).toBe(version); // a first token is not a membership change
  });

  it.each<[string, (registry: WorkerRegistry, w: Worker) => Promise<void> | void]>([
    ['status not_ready', (r, w) => r.transitionStatus(w.id, 'not_ready').then(() => undefined)],
    ['status failed', (r, w) => r.transitionStatus(w.id, 'failed').then(() => undefined)],
    ['a forced-open breaker', (_r, w) => w.circuitBreaker.forceOpen()],
  ])('drops a worker made unavailable by %s', async (_label, makeUnavailable) => {
    // Arrange: b is the lowest (0), a next (1).
    const { registry, leases, byName } = await threeLoaded();
    for (const lease of leases('b')) lease.firstToken();
    const m = registry.getByModel('m');

    // Act
    await makeUnavailable(registry, byName('b'));

    // Assert
    expect(byName('b').prefilling).toBe(0);
    expect(bounds(m)).toEqual([1, 3, 2, 1]);
  });

  it('puts a worker back at its current value when it becomes available again', async () => {
    // Arrange: a (prefilling 1) and b (2) leave; both change while out.
    const { registry, leases, byName } = await threeLoaded();
    const m = registry.getByModel('m');
    await registry.transitionStatus(byName('a').id, 'not_ready');
    byName('b').circuitBreaker.forceOpen();
    expect(bounds(m)).toEqual([3, 3, 1, 3]);
    leases('a')[0]!.firstToken();
    leases('b')[0]!.firstToken();
    byName('b').acquire();

    // Act / Assert: b back at load 3, prefilling 2; then a back at load 1, prefilling 0.
    byName('b').circuitBreaker.reset();
    expect(bounds(m)).toEqual([3, 3, 2, 2]);
    await registry.transitionStatus(byName('a').id, 'ready');
    expect(bounds(m)).toEqual([1, 3, 3, 0]);
  });

  it('leaves out a removed worker whose leases are still open', async () => {
    const { registry, leases, byName } = await threeLoaded();
    for (const lease of leases('b')) lease.firstToken();
    await registry.remove(byName('b').id);
    expect(bounds(registry.getByModel('m'))).toEqual([1, 3, 2, 1]);
  });
});

describe('prefilling under random interleavings', () => {
  type Op =
    | { kind: 'register'; url: number; models: string[] }
    | { kind: 'acquire'; worker: number }
    | { kind: 'firstToken'; lease: number }
    | { kind: 'release'; lease: number; ok: boolean }
    | { kind: 'status'; worker: number; to: WorkerStatus }
    | { kind: 'breaker'; worker: number; open: boolean }
    | { kind: 'replace'; worker: number; models: string[] }
    | { kind: 'remove'; worker: number }
    | { kind: 'tick' };
  const models = fc.subarray(['a', 'b']);
  // Leases dominate, so workers carry several in-flight requests at different stages.
  const ops: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constant('register' as const), url: fc.nat({ max: 4 }), models }),
    {
      weight: 4,
      arbitrary: fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }),
    },
    {
      weight: 3,
      arbitrary: fc.record({ kind: fc.constant('firstToken' as const), lease: fc.nat() }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        kind: fc.constant('release' as const),
        lease: fc.nat(),
        ok: fc.boolean(),
      }),
    },
    fc.record({
      kind: fc.constant('status' as const),
      worker: fc.nat(),
      to: fc.constantFrom<WorkerStatus>('ready', 'ready', 'not_ready', 'failed'),
    }),
    fc.record({ kind: fc.constant('breaker' as const), worker: fc.nat(), open: fc.boolean() }),
    fc.record({ kind: fc.constant('replace' as const), worker: fc.nat(), models }),
    fc.record({ kind: fc.constant('remove' as const), worker: fc.nat() }),
    fc.constant({ kind: 'tick' as const }), // open breakers turn half-open
  );

  /** A lease and what the model expects of it. */
  interface Tracked {
    readonly lease: WorkerLease;
    readonly id: string;
    released: boolean;
    marked: boolean;
  }

  it('keeps each worker’s prefilling and every array’s lowest prefilling equal to a plain scan, at every step', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(ops, { maxLength: 80, size: 'medium' }), async (list) => {
        // Two failures open a breaker; a tick turns it half-open, so trial leases happen too.
        const { registry, clock } = await recordedRegistry({
          circuitBreaker: { failureThreshold: 2, openMs: 1000 },
        });
        for (const [url, served] of [
          [0, ['a']],
          [1, ['a', 'b']],
          [2, ['b']],
        ] as const)
          await registry.register({ url: `http://w${url}:1`, models: [...served] });
        const tracked: Tracked[] = [];
        // Every worker ever registered, by id (its latest revision): removed ones keep leases.
        const seen = new Map<string, Worker>();
        const out = new Float64Array(4);
        const at = <T>(xs: readonly T[], i: number): T | undefined =>
          xs.length === 0 ? undefined : xs[i % xs.length];

        for (const op of list) {
          const worker = 'worker' in op ? at(registry.getAll(), op.worker) : undefined;
          const entry = 'lease' in op ? at(tracked, op.lease) : undefined;
          if (op.kind === 'register') {
            const url = `http://w${op.url}:1`;
            if (registry.getByUrl(url) === undefined)
              await registry.register({ url, models: op.models });
          } else if (op.kind === 'acquire') {
            if (worker !== undefined)
              tracked.push({
                lease: worker.acquire(),
                id: worker.id,
                released: false,
                marked: false,
              });
          } else if (op.kind === 'firstToken') {
            if (entry !== undefined) {
              const expected = !entry.released && !entry.marked;
              expect(entry.lease.firstToken()).toBe(expected);
              if (expected) entry.marked = true;
            }
          } else if (op.kind === 'release') {
            if (entry !== undefined) {
              expect(entry.lease.release({ ok: op.ok })).toBe(!entry.released);
              entry.released = true;
            }
          } else if (op.kind === 'status') {
            if (worker !== undefined) await registry.transitionStatus(worker.id, op.to);
          } else if (op.kind === 'breaker') {
            if (worker !== undefined) {
              if (op.open) worker.circuitBreaker.forceOpen();
              else worker.circuitBreaker.reset();
            }
          } else if (op.kind === 'replace') {
            if (worker !== undefined)
              await registry.replace(worker.id, { url: worker.url, models: op.models });
          } else if (op.kind === 'tick') {
            clock.now += 1000;
          } else if (worker !== undefined) {
            await registry.remove(worker.id);
          }
          for (const w of registry.getAll()) seen.set(w.id, w);

          // Each worker: prefilling = its open, unmarked leases; 0 <= prefilling <= load.
          for (const [id, w] of seen) {
            const open = tracked.filter((t) => t.id === id && !t.released);
            expect(w.load).toBe(open.length);
            expect(w.prefilling).toBe(open.filter((t) => !t.marked).length);
            expect(w.prefilling).toBeGreaterThanOrEqual(0);
            expect(w.prefilling).toBeLessThanOrEqual(w.load);
          }
          // Each registry array: the bounds of its available workers, by a plain scan.
          for (const workers of [
            registry.getAll(),
            registry.getByModel('a'),
            registry.getByModel('b'),
            registry.getByModel('never-served'),
          ]) {
            if (workers.length === 0) continue; // the shared empty array: nothing to bound
            expect(viewOf(workers).loadBounds(out)).toBe(true);
            const available = workers.filter(
              (w) => w.status === 'ready' && w.circuitBreaker.state === 'closed',
            );
            expect(out[2]).toBe(available.length);
            if (available.length === 0) continue;
            expect(out[0]).toBe(Math.min(...available.map((w) => w.load)));
            expect(out[1]).toBe(Math.max(...available.map((w) => w.load)));
            expect(out[3]).toBe(Math.min(...available.map((w) => w.prefilling)));
          }
        }
      }),
      runs(100, 500),
    );
  });
});
