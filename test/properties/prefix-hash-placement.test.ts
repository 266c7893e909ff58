/**
 * `prefix_hash` placement as a contract: the worker a request goes to follows from the bytes of
 * its prompt and the loads alone, however the tokens are handed over.
 *
 * - A prompt of at most one block goes where the registry's ring walk from xxh64 of its
 *   little-endian uint32 bytes (seed 0) meets the first available worker within the load bound
 *   (the least loaded met, when none is).
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
