/**
 * `prefix_hash` placement as a contract: the worker a request goes to follows from the bytes of
 * its prompt and the loads alone, however the tokens are handed over.
 *
 * - A prompt of at most one block goes where the registry's ring walk from xxh64 of its
 *   little-endian uint32 bytes (seed 0) meets the first available worker within the load bound
 *   (the least loaded met, when none is).
 * - With no table of seen prefixes (`maxTrackedPrefixes: 0`), a prompt of any length goes where
 *   the ring walk from xxh64 of its first block meets an available worker.
 * - Past a branch point — a prefix that two prompts continued differently — a prompt goes where
 *   the ring walk from its chained key says: xxh64 of its tokens through the shortest probe (⅛,
 *   ¼, ½ or all of the next block) that tells the two continuations apart, seeded with xxh64 of
 *   the prefix.
 * - A plain array, a `Uint32Array` and a `Uint32Array` viewing the middle of a larger buffer
 *   holding the same tokens pick the same worker on every request of a sequence, prompts longer
 *   than a block (and the table of seen prefixes) included.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { loadHasher } from '../../src/core/hash.js';
import { createPolicy, type Worker, WorkerRegistry } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';

const BLOCK = 16;

/** A registry of `n` workers serving `m`, each with its leases in flight and status. */
async function fleet(
  states: readonly { leases: number; ready: boolean }[],
): Promise<{ registry: WorkerRegistry; workers: readonly Worker[] }> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const [i, state] of states.entries()) {
    const worker = await registry.register({ url: `http://10.2.0.${i}:8000`, models: ['m'] });
    for (let l = 0; l < state.leases; l++) worker.acquire();
    if (!state.ready) await registry.transitionStatus(worker.id, 'not_ready');
  }
  return { registry, workers: registry.getByModel('m') };
}

/** `tokens` in the middle of a larger buffer: a view with a non-zero byte offset. */
function offsetView(tokens: readonly number[]): Uint32Array {
  const buffer = new Uint32Array(tokens.length + 7);
  buffer.set(tokens, 3);
  return buffer.subarray(3, 3 + tokens.length);
}

const states = fc.array(fc.record({ leases: fc.nat(6), ready: fc.boolean() }), {
  minLength: 1,
  maxLength: 24,
});
const token = fc.nat(0xffff_ffff);

describe('prefix_hash placement', () => {
  it('a prompt of at most one block goes where the ring walk from its bytes’ xxh64 says', async () => {
    const hasher = await loadHasher();
    await fc.assert(
      fc.asyncProperty(
        states,
        fc.array(fc.array(token, { minLength: 1, maxLength: BLOCK }), { maxLength: 12 }),
        async (fleetStates, prompts) => {
          const { registry, workers } = await fleet(fleetStates);
          const ring = registry.getHashRing('m')!;
          const policy = createPolicy('prefix_hash', { prefixTokens: BLOCK });
          for (const prompt of prompts) {
            const total = workers.reduce((sum, w) => sum + w.load, 0);
            const cap = Math.ceil((1.25 * (total + 1)) / workers.length);
            const bytes = new Uint8Array(Uint32Array.from(prompt).buffer);
            hasher.hashBytes(bytes);
            // Over the bound everywhere (the walk met no room): the least loaded met first.
            let least: Worker | undefined;
            const found = ring.findByHash(hasher.last, (url) => {
              const w = registry.getByUrl(url)!;
              if (!w.isAvailable()) return false;
              if (w.load + 1 <= cap) return true;
              if (least === undefined || w.load < least.load) least = w;
              return false;
            });
            const expected = found ?? least?.url;

            const picked = policy.select(workers, { tokens: Uint32Array.from(prompt) });

            expect(picked?.url).toBe(expected);
            picked?.acquire();
          }
          registry.close();
        },
      ),
      runs(60, 300),
    );
  });

  it('without a table, a prompt of any length goes where the ring walk from its first block’s xxh64 says', async () => {
    const hasher = await loadHasher();
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 24 }),
        fc.array(fc.array(token, { minLength: 1, maxLength: 4 * BLOCK }), { maxLength: 12 }),
        async (n, prompts) => {
          const { registry, workers } = await fleet(
            Array.from({ length: n }, () => ({ leases: 0, ready: true })),
          );
          const ring = registry.getHashRing('m')!;
          const policy = createPolicy('prefix_hash', {
            prefixTokens: BLOCK,
            maxTrackedPrefixes: 0,
          });
          for (const prompt of prompts) {
            hasher.hashBytes(new Uint8Array(Uint32Array.from(prompt.slice(0, BLOCK)).buffer));
            const expected = ring.findByHash(hasher.last);

            for (const tokens of [prompt, Uint32Array.from(prompt), offsetView(prompt)])
              expect(policy.select(workers, { tokens })?.url).toBe(expected);
          }
          registry.close();
        },
      ),
      runs(40, 200),
    );
  });

  it('past a branch point, a prompt goes where the ring walk from its chained key says', async () => {
    const hasher = await loadHasher();
    const block = fc.array(token, { minLength: BLOCK, maxLength: BLOCK });
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 24 }),
        block,
        block,
        block,
        fc.constantFrom('plain', 'typed', 'view'),
        async (n, shared, mine, other, kind) => {
          fc.pre(mine.some((t, i) => t !== other[i]));
          const { registry, workers } = await fleet(
            Array.from({ length: n }, () => ({ leases: 0, ready: true })),
          );
          const ring = registry.getHashRing('m')!;
          const policy = createPolicy('prefix_hash', { prefixTokens: BLOCK });
          const as = (prompt: number[]) =>
            kind === 'plain'
              ? prompt
              : kind === 'typed'
                ? Uint32Array.from(prompt)
                : offsetView(prompt);
          // Two requests learn `shared` and its first continuation; a third continues it otherwise.
          for (const prompt of [
            [...shared, ...mine],
            [...shared, ...mine],
            [...shared, ...other],
          ])
            policy.select(workers, { tokens: as(prompt) });
          const bytes = (words: readonly number[]) =>
            new Uint8Array(Uint32Array.from(words).buffer);
          // The shortest probe that tells the continuations apart: ⅛, ¼, ½ of the block, or all.
          const length = [BLOCK / 8, BLOCK / 4, BLOCK / 2, BLOCK].find(
            (l) => mine.slice(0, l).join() !== other.slice(0, l).join(),
          )!;
          hasher.hashBytes(bytes(shared));
          hasher.chainBytes(bytes(mine.slice(0, length)));
          const expected = ring.findByHash(hasher.last);

          const picked = policy.select(workers, { tokens: as([...shared, ...mine]) });

          expect(picked?.url).toBe(expected);
          registry.close();
        },
      ),
      runs(60, 300),
    );
  });

  it('a plain array, a Uint32Array and an offset view of the same tokens place alike', async () => {
    await fc.assert(
      fc.asyncProperty(
        states,
        fc.array(fc.array(token, { minLength: 1, maxLength: 5 * BLOCK }), { maxLength: 16 }),
        fc.array(fc.nat(3), { maxLength: 16 }),
        async (fleetStates, prompts, prefixes) => {
          const { registry, workers } = await fleet(fleetStates);
          const plain = createPolicy('prefix_hash', { prefixTokens: BLOCK });
          const typed = createPolicy('prefix_hash', { prefixTokens: BLOCK });
          const viewed = createPolicy('prefix_hash', { prefixTokens: BLOCK });
          // Some prompts share a prefix with an earlier one, so branch points form.
          const shared = prompts.map((p, i) =>
            i > 0 && (prefixes[i] ?? 0) > 0
              ? [...prompts[i - 1]!.slice(0, prefixes[i]! * BLOCK), ...p]
              : p,
          );
          for (const prompt of shared) {
            const a = plain.select(workers, { tokens: prompt });
            const b = typed.select(workers, { tokens: Uint32Array.from(prompt) });
            const c = viewed.select(workers, { tokens: offsetView(prompt) });

            expect(b).toBe(a);
            expect(c).toBe(a);
          }
          registry.close();
        },
      ),
      runs(60, 300),
    );
  });
});
