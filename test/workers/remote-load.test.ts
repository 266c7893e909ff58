/**
 * Other routers' in-flight counts on a worker (`WorkerRuntime.setRemote`, set by shared state):
 * a worker's `load` and `prefilling` are this process's plus the remote ones, and every figure
 * the registry keeps from loads — the groups' in-flight totals and their load histograms (the
 * lowest and highest load of the available workers) — moves with the remote count, with the
 * worker's status, when the worker changes models and when it is removed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  createPolicy,
  type Worker,
  type WorkerLease,
  WorkerRegistry,
  type WorkerStatus,
} from '../../src/index.js';
import { viewOf } from '../../src/workers/candidate-view.js';
import { workerInternals } from '../../src/workers/worker.js';
import type { WorkerRuntime } from '../../src/workers/worker-runtime.js';
import { runs } from '../helpers/fc-settings.js';

const runtimeOf = (worker: Worker): WorkerRuntime => workerInternals.runtimeOf(worker);

/** `[min, max, available, least prefilling]` of a registry array's available workers. */
function bounds(workers: readonly Worker[]): number[] {
  const out = new Float64Array(4);
  expect(viewOf(workers).loadBounds(out), 'a registry array').toBe(true);
  return [...out];
}

/** The same figures by walking the array: what the histograms must agree with. */
function walkedBounds(workers: readonly Worker[]): number[] {
  const loads: number[] = [];
  const prefilling: number[] = [];
  for (const w of workers) {
    const rt = runtimeOf(w);
    if (!rt.routable || !rt.canExecute()) continue;
    loads.push(w.load);
    prefilling.push(w.prefilling);
  }
  if (loads.length === 0)
    return [Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, 0, Number.POSITIVE_INFINITY];
  return [Math.min(...loads), Math.max(...loads), loads.length, Math.min(...prefilling)];
}

const total = (workers: readonly Worker[]): number => viewOf(workers).totalLoad();

/** The histograms of a registry array agree with a walk (a list without groups has none). */
function expectHistogramsAgree(workers: readonly Worker[]): void {
  const out = new Float64Array(4);
  if (viewOf(workers).loadBounds(out)) expect([...out]).toEqual(walkedBounds(workers));
}

/** w0 and w1 serve `a`, w2 serves `b`: two models, so each has its own groups. */
async function registryAB() {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const w0 = await registry.register({ url: 'http://w0:8000', models: ['a'] });
  const w1 = await registry.register({ url: 'http://w1:8000', models: ['a'] });
  const w2 = await registry.register({ url: 'http://w2:8000', models: ['b'] });
  return { registry, w0, w1, w2 };
}

describe('a worker with remote counts', () => {
  it('reads load and prefilling as local plus remote, and keeps the two apart', async () => {
    const { w0 } = await registryAB();
    const rt = runtimeOf(w0);
    const lease = w0.acquire();
    rt.setRemote(4, 3);
    expect([w0.load, rt.localLoad, rt.remoteLoad]).toEqual([5, 1, 4]);
    expect([w0.prefilling, rt.localPrefilling]).toEqual([4, 1]);
    lease.firstToken();
    expect([w0.load, w0.prefilling, rt.localPrefilling]).toEqual([5, 3, 0]);
    lease.release();
    expect([w0.load, w0.prefilling, rt.localLoad, rt.remoteLoad]).toEqual([4, 3, 0, 4]);
    rt.setRemote(0, 0);
    expect([w0.load, w0.prefilling]).toEqual([0, 0]);
  });

  it.each([
    ['a negative load', -3, 0, 0, 0],
    ['a NaN load', Number.NaN, 2, 0, 0],
    ['an infinite load', Number.POSITIVE_INFINITY, 1, 0, 0],
    ['a NaN prefilling', 2, Number.NaN, 2, 0],
    ['a negative prefilling', 2, -1, 2, 0],
    ['prefilling above the load', 2, 9, 2, 2],
  ])('reads %s as the nearest valid count', async (_, load, prefilling, expectLoad, expectPre) => {
    const { registry, w0 } = await registryAB();
    const rt = runtimeOf(w0);
    rt.setRemote(3, 1); // a valid count first: the bad one must replace it, not add to it
    rt.setRemote(load, prefilling);
    expect([rt.remoteLoad, w0.load, w0.prefilling]).toEqual([expectLoad, expectLoad, expectPre]);
    expect(total(registry.getAll())).toBe(expectLoad);
    expect(total(registry.getByModel('a'))).toBe(expectLoad);
    expect(bounds(registry.getByModel('a'))).toEqual(walkedBounds(registry.getByModel('a')));
  });
});

describe('group figures with remote counts', () => {
  it("moves the in-flight totals of the worker's groups by the change, and no other group's", async () => {
    const { registry, w0, w1 } = await registryAB();
    w1.acquire();
    runtimeOf(w0).setRemote(5, 0);
    expect([total(registry.getAll()), total(registry.getByModel('a'))]).toEqual([6, 6]);
    expect(total(registry.getByModel('b'))).toBe(0);
    runtimeOf(w0).setRemote(2, 0);
    expect([total(registry.getAll()), total(registry.getByModel('a'))]).toEqual([3, 3]);
    runtimeOf(w0).setRemote(2, 1); // prefilling only: the totals stay
    expect(total(registry.getAll())).toBe(3);
    runtimeOf(w0).setRemote(0, 0);
    expect([total(registry.getAll()), total(registry.getByModel('a'))]).toEqual([1, 1]);
  });

  it('moves the worker in the load histograms, so the lowest and highest load follow', async () => {
    const { registry, w0, w1 } = await registryAB();
    const a = registry.getByModel('a');
    runtimeOf(w0).setRemote(5, 2);
    expect(bounds(a)).toEqual([0, 5, 2, 0]);
    w1.acquire();
    w1.acquire();
    expect(bounds(a)).toEqual([2, 5, 2, 2]);
    runtimeOf(w1).setRemote(4, 0);
    expect(bounds(a)).toEqual([5, 6, 2, 2]);
    runtimeOf(w0).setRemote(0, 0);
    expect(bounds(a)).toEqual([0, 6, 2, 0]);
    expect(bounds(registry.getAll())).toEqual(walkedBounds(registry.getAll()));
  });

  it('is what least_load compares: the remote count steers it away from a busy worker', async () => {
    const { registry, w0, w1 } = await registryAB();
    const a = registry.getByModel('a');
    const policy = createPolicy('least_load');
    runtimeOf(w0).setRemote(3, 0);
    expect(policy.select(a)?.url).toBe(w1.url);
    runtimeOf(w1).setRemote(5, 0);
    expect(policy.select(a)?.url).toBe(w0.url);
    runtimeOf(w1).setRemote(0, 0);
    expect(policy.select(a)?.url).toBe(w1.url);
  });

  it('leaves an unavailable worker out of the histograms but in the totals, and puts it back at its full load', async () => {
    const { registry, w0, w1 } = await registryAB();
    const a = registry.getByModel('a');
    runtimeOf(w0).setRemote(7, 0);
    await registry.transitionStatus(w0.id, 'not_ready');
    expect(bounds(a)).toEqual([0, 0, 1, 0]);
    expect(total(a)).toBe(7);
    runtimeOf(w0).setRemote(3, 0); // changes while unavailable still count in the totals
    w1.acquire();
    expect(total(a)).toBe(4);
    await registry.transitionStatus(w0.id, 'ready');
    expect(bounds(a)).toEqual([1, 3, 2, 0]);
  });

  it('moves the remote count with the worker when it changes models, and leaves a lease where it was taken', async () => {
    const { registry, w0 } = await registryAB();
    const lease = w0.acquire();
    runtimeOf(w0).setRemote(3, 1);
    expect([total(registry.getByModel('a')), total(registry.getByModel('b'))]).toEqual([4, 0]);
    const moved = await registry.replace(w0.id, { url: w0.url, models: ['b'] });
    const a = registry.getByModel('a');
    const b = registry.getByModel('b');
    // The lease is counted in the groups it was taken in until it is released; the other
    // routers' requests are counted wherever the worker is now.
    expect([total(a), total(b), total(registry.getAll())]).toEqual([1, 3, 4]);
    expect(bounds(a)).toEqual(walkedBounds(a));
    expect(bounds(b)).toEqual([0, 4, 2, 0]);
    lease.release();
    expect([total(a), total(b), total(registry.getAll())]).toEqual([0, 3, 3]);
    expect(bounds(b)).toEqual([0, 3, 2, 0]);
    expect(moved.load).toBe(3);
    // To the wildcard group (no models) and back.
    await registry.replace(w0.id, { url: w0.url, models: [] });
    expect(total(registry.getByModel('b'))).toBe(3); // b's array includes the wildcard workers
    expect(total(registry.getByModel('no-such-model'))).toBe(3);
    await registry.replace(w0.id, { url: w0.url, models: ['a'] });
    expect(total(registry.getByModel('no-such-model'))).toBe(0);
    expect([total(registry.getByModel('a')), total(registry.getByModel('b'))]).toEqual([3, 0]);
    runtimeOf(moved).setRemote(0, 0);
    expect(total(registry.getAll())).toBe(0);
  });

  it('drops a removed worker from the histograms, and from the totals once its remote count is cleared', async () => {
    const { registry, w0, w1 } = await registryAB();
    runtimeOf(w0).setRemote(6, 0);
    runtimeOf(w1).setRemote(1, 0);
    await registry.remove(w0.id);
    const a = registry.getByModel('a');
    expect(bounds(a)).toEqual([1, 1, 1, 0]);
    expect(bounds(registry.getAll())).toEqual(walkedBounds(registry.getAll()));
    // Like a lease on a removed worker, its remote count stays in the totals until cleared
    // (shared state clears it on its next sync: the worker is no longer in the registry).
    runtimeOf(w0).setRemote(0, 0);
    expect([total(a), total(registry.getAll())]).toEqual([1, 1]);
  });
});

type Op =
  | { kind: 'remote'; worker: number; load: number; prefilling: number }
  | { kind: 'acquire'; worker: number }
  | { kind: 'release'; lease: number }
  | { kind: 'status'; worker: number; status: WorkerStatus }
  | { kind: 'replace'; worker: number; models: string[] }
  | { kind: 'remove'; worker: number }
  | { kind: 'register'; url: number; models: string[] };

const models = fc.subarray(['a', 'b']);
const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('remote' as const),
      worker: fc.nat(),
      load: fc.oneof(fc.nat(9), fc.constantFrom(-1, Number.NaN)),
      prefilling: fc.nat(9),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), lease: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('status' as const),
      worker: fc.nat(),
      status: fc.constantFrom<WorkerStatus>('ready', 'not_ready', 'draining'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('replace' as const), worker: fc.nat(), models }),
  },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), worker: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('register' as const), url: fc.nat(4), models }),
  },
);

/** Every registry array that carries load groups: all workers, each model's, the wildcard's. */
function groupArrays(registry: WorkerRegistry): (readonly Worker[])[] {
  return [
    registry.getAll(),
    registry.getByModel('a'),
    registry.getByModel('b'),
    registry.getByModel('other'),
  ];
}

describe('group figures with remote counts (property)', () => {
  it('histograms always agree with a walk; totals come back to the remote counts, then to zero', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
        const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
        await registry.register({ url: 'http://w0:1', models: ['a'] });
        await registry.register({ url: 'http://w1:1', models: ['b'] });
        await registry.register({ url: 'http://w2:1', models: [] });
        const leases: WorkerLease[] = [];
        const runtimes = new Set<WorkerRuntime>();
        const at = <T>(list: readonly T[], i: number): T | undefined =>
          list.length === 0 ? undefined : list[i % list.length];
        for (const o of ops) {
          if (o.kind === 'release') at(leases, o.lease)?.release();
          else if (o.kind === 'register') {
            if (registry.getByUrl(`http://w${o.url}:1`) === undefined)
              await registry.register({ url: `http://w${o.url}:1`, models: o.models });
          } else {
            const worker = at(registry.getAll(), o.worker);
            if (worker === undefined) continue;
            runtimes.add(runtimeOf(worker));
            if (o.kind === 'remote') runtimeOf(worker).setRemote(o.load, o.prefilling);
            else if (o.kind === 'acquire') leases.push(worker.acquire());
            else if (o.kind === 'status')
              await registry.transitionStatus(worker.id, o.status).catch(() => {});
            else if (o.kind === 'replace')
              await registry.replace(worker.id, { url: worker.url, models: o.models });
            else await registry.remove(worker.id);
          }
          for (const workers of groupArrays(registry)) {
            expectHistogramsAgree(workers);
            expect(total(workers)).toBeGreaterThanOrEqual(0);
          }
        }
        for (const lease of leases) lease.release();
        // What a sync does for workers no longer in the registry: clear their remote counts.
        const current = new Set(registry.getAll().map(runtimeOf));
        for (const rt of runtimes) if (!current.has(rt)) rt.setRemote(0, 0);
        for (const workers of groupArrays(registry)) {
          const remote = workers.reduce((sum, w) => sum + runtimeOf(w).remoteLoad, 0);
          expect(total(workers)).toBe(remote);
        }
        for (const w of registry.getAll()) runtimeOf(w).setRemote(0, 0);
        for (const workers of groupArrays(registry)) {
          expect(total(workers)).toBe(0);
          expectHistogramsAgree(workers);
        }
        await registry.close();
      }),
      runs(200, 2_000),
    );
  });
});
