/**
 * Group in-flight totals (src/workers/load-counter.ts): kept by leases so bounded-load routing
 * reads a group's total in O(1). They must equal the sum of the group's worker loads, and never
 * drift: once every lease is released, every total is back to zero.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type Worker, type WorkerLease, WorkerRegistry } from '../../src/index.js';
import { totalLoadOf } from '../../src/workers/load-counter.js';
import { runs } from '../helpers/fc-settings.js';

type Op =
  | { kind: 'register'; url: number; models: string[] }
  | { kind: 'acquire'; worker: number }
  | { kind: 'release'; lease: number }
  | { kind: 'replace'; worker: number; models: string[] }
  | { kind: 'remove'; worker: number };

const models = fc.subarray(['a', 'b', 'c']);
const calm: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('register' as const), url: fc.nat({ max: 7 }), models }),
  fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }),
  fc.record({ kind: fc.constant('acquire' as const), worker: fc.nat() }),
  fc.record({ kind: fc.constant('release' as const), lease: fc.nat() }),
);
const churn: fc.Arbitrary<Op> = fc.oneof(
  calm,
  fc.record({ kind: fc.constant('replace' as const), worker: fc.nat(), models }),
  fc.record({ kind: fc.constant('remove' as const), worker: fc.nat() }),
);

async function run(
  ops: readonly Op[],
  check: (registry: WorkerRegistry) => void,
): Promise<{ registry: WorkerRegistry; leases: WorkerLease[] }> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const leases: WorkerLease[] = [];
  const at = <T>(list: readonly T[], i: number): T | undefined =>
    list.length === 0 ? undefined : list[i % list.length];
  for (const op of ops) {
    const all = registry.getAll();
    if (op.kind === 'register') {
      if (registry.getByUrl(`http://w${op.url}:1`) === undefined)
        await registry.register({ url: `http://w${op.url}:1`, models: op.models });
    } else if (op.kind === 'acquire') {
      const worker = at(all, op.worker);
      if (worker !== undefined) leases.push(worker.acquire());
    } else if (op.kind === 'release') {
      const lease = at(leases, op.lease);
      lease?.release();
    } else if (op.kind === 'replace') {
      const worker = at(all, op.worker);
      if (worker !== undefined)
        await registry.replace(worker.id, { url: worker.url, models: op.models });
    } else {
      const worker = at(all, op.worker);
      if (worker !== undefined) await registry.remove(worker.id);
    }
    check(registry);
  }
  return { registry, leases };
}

const groups = (registry: WorkerRegistry): (readonly Worker[])[] => [
  registry.getAll(),
  registry.getByModel('a'),
  registry.getByModel('b'),
  registry.getByModel('c'),
  registry.getByModel('never-served'),
];
const sum = (workers: readonly Worker[]) => workers.reduce((s, w) => s + w.load, 0);

describe('group in-flight totals', () => {
  it('equal the sum of worker loads of each registry array at every step, while membership is stable under leases', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(calm, { maxLength: 60 }), async (ops) => {
        await run(ops, (registry) => {
          for (const workers of groups(registry)) expect(totalLoadOf(workers)).toBe(sum(workers));
        });
      }),
      runs(200, 1000),
    );
  });

  it('never drift: with replaces and removals in between, all totals return to zero when every lease is released', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(churn, { maxLength: 60 }), async (ops) => {
        const { registry, leases } = await run(ops, (registry) => {
          for (const workers of groups(registry))
            expect(totalLoadOf(workers)).toBeGreaterThanOrEqual(0);
        });
        for (const lease of leases) lease.release();
        for (const workers of groups(registry)) expect(totalLoadOf(workers)).toBe(0);
      }),
      runs(200, 1000),
    );
  });

  it('falls back to summing the loads of a list the registry did not hand out', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const a = await registry.register({ url: 'http://a:1' });
    const b = await registry.register({ url: 'http://b:1' });
    a.acquire();
    b.acquire();
    b.acquire();

    expect(totalLoadOf([a, b])).toBe(3);
    expect(totalLoadOf([b])).toBe(2);
  });
});
