/**
 * `adapterAware` places a new adapter by rendezvous (highest-random-weight) hashing: when a
 * worker leaves, only the adapters that had it among their placements move, and each of them
 * keeps its other placements. The same holds through the wrapper: a router that lost an
 * unrelated worker sends a new adapter to the same workers as before.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { adapterAware, type Policy, type Worker, WorkerRegistry } from '../../src/index.js';
import { topByWeight } from '../../src/policies/adapter-aware/adapter-tiers.js';
import { runs } from '../helpers/fc-settings.js';

const stand = (url: string) => ({ url }) as unknown as Worker;

describe('adapterAware placement: rendezvous stability', () => {
  it('a leaving worker moves only the adapters placed on it', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 9_999 }), { minLength: 2, maxLength: 24 }),
        fc.array(fc.string({ minLength: 1, maxLength: 24 }), { minLength: 1, maxLength: 16 }),
        fc.integer({ min: 1, max: 4 }),
        fc.nat(),
        (ports, adapters, placements, leaving) => {
          const workers = ports.map((p) => stand(`http://10.0.${p % 256}.${p >> 8}:8000`));
          const gone = workers[leaving % workers.length]!;
          const rest = workers.filter((w) => w !== gone);
          for (const adapter of adapters) {
            const before = topByWeight(workers, adapter, placements);
            const after = topByWeight(rest, adapter, placements);
            if (!before.includes(gone)) {
              expect(after).toEqual(before);
            } else {
              for (const w of before) if (w !== gone) expect(after).toContain(w);
              expect(after).toHaveLength(Math.min(placements, rest.length));
            }
          }
        },
      ),
      runs(200, 1_000),
    );
  });

  it('through the wrapper: a new adapter goes to the same placements after an unrelated worker leaves', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const workers: Worker[] = [];
    for (let i = 0; i < 12; i++)
      workers.push(await registry.register({ url: `http://w${i}:8000` }));
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 16 }), fc.nat(), async (adapter, k) => {
        const seen: (readonly Worker[])[] = [];
        const inner: Policy = {
          name: 'random',
          select: (list) => {
            seen.push(list);
            return undefined;
          },
        };
        const policy = adapterAware(inner, { adapters: 'all', placements: 3 });
        policy.select(workers, { model: adapter });
        const placed = seen[0]!;
        const unrelated = workers.filter((w) => !placed.includes(w));
        const gone = unrelated[k % unrelated.length]!;
        policy.select(
          workers.filter((w) => w !== gone),
          { model: adapter },
        );
        expect(new Set(seen[seen.length - 2]!)).toEqual(new Set(placed));
      }),
      runs(100, 500),
    );
    registry.close();
  });
});
