import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BucketPolicy,
  type SelectRequest,
  type Worker,
  type WorkerLease,
  WorkerRegistry,
} from '../../src/index.js';
import { DealTree } from '../../src/policies/bucket/deal-tree.js';
import { bucketInternals } from '../../src/policies/bucket.js';
import { runs } from '../helpers/fc-settings.js';

function sized(size: number): SelectRequest {
  return { tokens: { length: size } };
}

function byUrl(a: Worker, b: Worker): number {
  return a.url < b.url ? -1 : a.url > b.url ? 1 : 0;
}

async function fleet(count: number): Promise<{ registry: WorkerRegistry; workers: Worker[] }> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < count; i++) await registry.register({ url: `http://w${i}:8000` });
  return { registry, workers: [...registry.getAll()].sort(byUrl) };
}

describe('bucket: a busy size range does not queue on one worker', () => {
  it('spreads a burst of long prompts, fitted to mixed traffic, instead of sending it all to the last bucket', async () => {
    // Arrange: boundaries fitted on sizes 1–400 over 4 workers (~100, ~200, ~300), then a burst
    // of 8 prompts of 390 tokens, each kept in flight as a router would (a lease per pick).
    const { registry } = await fleet(4);
    const list = registry.getAll();
    let now = 0;
    const policy = new BucketPolicy({ clock: () => now, windowSize: 400, minSamples: 400 });
    for (let i = 1; i <= 400; i++) policy.select(list, sized(i));
    now = 5_000;
    policy.select(list, sized(0));

    // Act
    const leases: WorkerLease[] = [];
    const chosen: string[] = [];
    for (let i = 0; i < 8; i++) {
      const worker = policy.select(list, sized(390))!;
      chosen.push(new URL(worker.url).hostname);
      leases.push(worker.acquire());
    }

    // Assert: the last bucket's owner takes its share; no worker ends up more than one request
    // ahead of another (before: all 8 on w3, 8 in flight against 0, below the escape's 32).
    expect(chosen).toContain('w3');
    const loads = list.map((w) => w.load);
    expect(Math.max(...loads) - Math.min(...loads)).toBeLessThanOrEqual(1);
  });

  it('bounds the tokens dealt to one bucket even when loads are not known (no leases taken)', async () => {
    // Arrange: as above, but nothing is kept in flight (several routers, or leases elsewhere).
    const { registry } = await fleet(4);
    const list = registry.getAll();
    let now = 0;
    const policy = new BucketPolicy({ clock: () => now, windowSize: 400, minSamples: 400 });
    for (let i = 1; i <= 400; i++) policy.select(list, sized(i));
    now = 5_000;
    policy.select(list, sized(0));

    // Act
    const counts = new Map<string, number>();
    for (let i = 0; i < 40; i++) {
      const url = policy.select(list, sized(390))!.url;
      counts.set(url, (counts.get(url) ?? 0) + 1);
    }

    // Assert: every worker takes a share of the burst; none takes more than half.
    expect(counts.size).toBe(4);
    for (const count of counts.values()) expect(count).toBeLessThanOrEqual(20);
  });
});

describe('bucket: the deal tree', () => {
  type Op =
    | { kind: 'add'; j: number; amount: number }
    | { kind: 'least'; from: number; to: number }
    | { kind: 'nearest'; j: number; limit: number };
  const opArb = (k: number): fc.Arbitrary<Op> =>
    fc.oneof(
      fc.record({
        kind: fc.constant('add' as const),
        j: fc.nat({ max: k - 1 }),
        amount: fc.oneof(fc.constant(1), fc.nat({ max: 50 })),
      }),
      fc
        .tuple(fc.nat({ max: k - 1 }), fc.nat({ max: k - 1 }))
        .map(([a, b]) => ({ kind: 'least' as const, from: Math.min(a, b), to: Math.max(a, b) })),
      fc.record({
        kind: fc.constant('nearest' as const),
        j: fc.nat({ max: k - 1 }),
        limit: fc.nat({ max: 120 }),
      }),
    );

  it('answers like a brute-force scan of the counts after every operation', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }).chain((k) => fc.tuple(fc.constant(k), fc.array(opArb(k)))),
        ([k, ops]) => {
          const tree = new DealTree();
          tree.reset(k);
          const counts: number[] = Array.from({ length: k }, () => 0);
          for (const op of ops) {
            if (op.kind === 'add') {
              tree.add(op.j, op.amount);
              counts[op.j]! += op.amount;
            } else if (op.kind === 'least') {
              const slice = counts.slice(op.from, op.to + 1);
              const low = Math.min(...slice);
              expect(tree.leastIn(op.from, op.to)).toBe(op.from + slice.indexOf(low));
            } else {
              // Brute force: the closest index within the limit; at equal distance the lower
              // count, then the lower index.
              let best = -1;
              for (let i = 0; i < k; i++) {
                if (counts[i]! > op.limit) continue;
                if (best < 0) {
                  best = i;
                  continue;
                }
                const d = Math.abs(i - op.j);
                const bd = Math.abs(best - op.j);
                if (d < bd || (d === bd && counts[i]! < counts[best]!)) best = i;
              }
              expect(tree.nearestAtMost(op.j, op.limit)).toBe(best);
            }
            expect(tree.lowest()).toBe(Math.min(...counts));
            for (let i = 0; i < k; i++) expect(tree.count(i)).toBe(counts[i]);
          }
        },
      ),
      runs(200, 1_000),
    );
  });
});

describe('bucket: the owners index under concurrent lease and status changes', () => {
  type Change =
    | { kind: 'acquire'; w: number }
    | { kind: 'release'; w: number }
    | { kind: 'status'; w: number; to: 'ready' | 'not_ready' }
    | { kind: 'breaker'; w: number; open: boolean };
  const changeArb = (n: number): fc.Arbitrary<Change> =>
    fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({ kind: fc.constant('acquire' as const), w: fc.nat(n - 1) }),
      },
      {
        weight: 4,
        arbitrary: fc.record({ kind: fc.constant('release' as const), w: fc.nat(n - 1) }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('status' as const),
          w: fc.nat(n - 1),
          to: fc.constantFrom('ready' as const, 'not_ready' as const),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('breaker' as const),
          w: fc.nat(n - 1),
          open: fc.boolean(),
        }),
      },
    );

  it('routes over exactly the available workers in URL order, with the deal counts of a brute-force replay', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc
          .integer({ min: 1, max: 6 })
          .chain((n) =>
            fc.tuple(
              fc.constant(n),
              fc.array(changeArb(n), { maxLength: 25 }),
              fc.array(fc.nat({ max: 5_000 }), { minLength: 1, maxLength: 25 }),
            ),
          ),
        fc.scheduler(),
        async ([n, changes, sizes], s) => {
          // Arrange: a fleet (registered in reverse URL order), and the changes and selects as
          // concurrent tasks whose interleaving the scheduler chooses.
          const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
          for (let i = n - 1; i >= 0; i--) await registry.register({ url: `http://w${i}:8000` });
          const workers = [...registry.getAll()].sort(byUrl);
          const policy = new BucketPolicy({ clock: () => 0 });
          const leases: WorkerLease[][] = workers.map(() => []);
          const refDeals = new Map<Worker, number>();
          let refOwners: Worker[] = [];
          const apply = async (c: Change) => {
            const worker = workers[c.w]!;
            if (c.kind === 'acquire') leases[c.w]!.push(worker.acquire());
            else if (c.kind === 'release') leases[c.w]!.pop()?.release();
            else if (c.kind === 'status') await registry.transitionStatus(worker.id, c.to);
            else if (c.open) worker.circuitBreaker.forceOpen();
            else worker.circuitBreaker.reset();
          };
          const route = (size: number) => {
            const list = registry.getAll();
            const chosen = policy.select(list, sized(size));

            // Assert: the owners are the available workers by URL …
            const available = [...list].filter((w) => w.isAvailable()).sort(byUrl);
            const owners = bucketInternals.ownersOf(policy, list);
            expect(owners.map((o) => o.owner.url)).toEqual(available.map((w) => w.url));
            // … and the deal counts are those of a replay that restarts when the owners change.
            if (available.map((w) => w.url).join() !== refOwners.map((w) => w.url).join()) {
              refDeals.clear();
            }
            refOwners = available;
            if (available.length === 0) {
              expect(chosen).toBeUndefined();
              return;
            }
            expect(chosen?.isAvailable()).toBe(true);
            refDeals.set(chosen!, (refDeals.get(chosen!) ?? 0) + size + 1);
            expect(owners.map((o) => o.dealt)).toEqual(
              owners.map((o) => refDeals.get(o.owner) ?? 0),
            );
          };

          // Act
          const tasks = [
            ...changes.map((c) => s.schedule(Promise.resolve(c)).then(apply)),
            ...sizes.map((size) => s.schedule(Promise.resolve(size)).then(route)),
          ];
          await s.waitAll();
          await Promise.all(tasks);
        },
      ),
      runs(100, 500),
    );
  });
});
