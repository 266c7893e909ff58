/**
 * The ceiling hit rate: exact on a workload past the 2^24 entries a `Set` can hold, and equal to
 * the straightforward `Set` computation on random workloads with and without answers.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockKeys } from '../../src/sim/block-keys.js';
import { ceilingHitRate } from '../../src/sim/ceiling.js';
import type { SimRequest, Workload } from '../../src/sim/workload.js';
import { runs } from '../helpers/fc-settings.js';

const workloadOf = (requests: SimRequest[]): Workload => ({
  name: 'test',
  description: 'test',
  requests,
  parameters: {},
});

/** The reference: a `Set` of every block seen, the prompt and its answer concatenated. */
function referenceCeiling(workload: Workload, blockSize: number): number {
  const seen = new Set<number>();
  let cached = 0;
  let total = 0;
  for (const request of workload.requests) {
    const tokens = request.tokens();
    const keys = blockKeys(tokens, blockSize);
    const limit = Math.min(keys.length, Math.floor((request.promptLength - 1) / blockSize));
    let matched = 0;
    while (matched < limit && seen.has(keys[matched]!)) matched++;
    cached += matched * blockSize;
    total += request.promptLength;
    const output = request.outputTokens ?? new Uint32Array(0);
    const all = blockKeys([...tokens, ...output], blockSize);
    for (let i = matched; i < all.length; i++) seen.add(all[i]!);
  }
  return total === 0 ? 0 : cached / total;
}

describe('ceilingHitRate', () => {
  it('is exact past 2^24 distinct blocks (100,000 requests, 17.3 million blocks)', () => {
    // Groups of 10 requests share a 30-token prefix, then each has 170 tokens of its own; with
    // 1-token blocks every token is a block. Repeats hit exactly the prefix (the first token of
    // their own part is new), so the ceiling is 9 × 30 of every 10 × 200 prompt tokens.
    const groups = 10_000;
    const perGroup = 10;
    const shared = 30;
    const length = 200;
    const requests: SimRequest[] = [];
    for (let id = 0; id < groups * perGroup; id++) {
      const group = Math.floor(id / perGroup);
      requests.push({
        id,
        promptLength: length,
        outputLength: 1,
        tokens: () => {
          const tokens = new Uint32Array(length);
          tokens[0] = group;
          for (let i = 1; i < shared; i++) tokens[i] = i;
          tokens[shared] = 1_000_000 + id;
          for (let i = shared + 1; i < length; i++) tokens[i] = i;
          return tokens;
        },
      });
    }
    const distinct = groups * shared + groups * perGroup * (length - shared);
    expect(distinct).toBeGreaterThan(2 ** 24);
    const expected = (groups * (perGroup - 1) * shared) / (groups * perGroup * length);
    expect(ceilingHitRate(workloadOf(requests), 1)).toBe(expected);
  });

  it('equals the Set computation on random workloads, answers included', () => {
    const request = fc.record({
      prompt: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 1, maxLength: 40 }),
      answer: fc.option(fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 20 })),
    });
    fc.assert(
      fc.property(
        fc.array(request, { maxLength: 30 }),
        fc.integer({ min: 1, max: 6 }),
        (specs, blockSize) => {
          const workload = workloadOf(
            specs.map((spec, id) => {
              const prompt = Uint32Array.from(spec.prompt);
              const r: SimRequest = {
                id,
                promptLength: prompt.length,
                outputLength: 1,
                tokens: () => prompt,
              };
              return spec.answer === null
                ? r
                : { ...r, outputTokens: Uint32Array.from(spec.answer) };
            }),
          );
          expect(ceilingHitRate(workload, blockSize)).toBe(referenceCeiling(workload, blockSize));
        },
      ),
      runs(300, 3_000),
    );
  });
});
