/**
 * One page size: keys hashed with two page sizes never match, so every part that names a page
 * size — `blockHashes`, `cache_aware`, the KV-event translator, the simulated fleet's block size
 * — takes its default and bounds from `PAGE_SIZE`, and where two parts must agree (the simulated
 * engines' blocks and the policy's pages) a disagreement is refused before anything runs.
 */
import { describe, expect, it } from 'vitest';
import { blockHashes, DEFAULT_PAGE_SIZE, PAGE_SIZE } from '../../src/cache/block-hashes.js';
import type { BoundedSpec } from '../../src/core/option-table.js';
import { KV_TRANSLATOR_OPTIONS } from '../../src/kv-events/translator.js';
import { CACHE_AWARE_OPTIONS } from '../../src/policies/cache-aware.js';
import { FLEET_OPTIONS } from '../../src/sim/fleet-model.js';
import { resolveSimulationOptions } from '../../src/sim/simulation-options.js';
import { generatedSharedPrefix } from '../../src/sim/workloads/index.js';
import { throwsCode } from '../support/fixtures.js';

describe('the page size', () => {
  it.each<[string, BoundedSpec]>([
    ['cache_aware.pageSize', CACHE_AWARE_OPTIONS.specs.pageSize],
    ['the KV-event translator’s pageSize', KV_TRANSLATOR_OPTIONS.specs.pageSize as BoundedSpec],
    ['the simulated fleet’s blockSize', FLEET_OPTIONS.specs.blockSize],
  ])('%s has the one default and bounds', (_name, spec) => {
    expect([spec.fallback, spec.min, spec.max]).toEqual([
      DEFAULT_PAGE_SIZE,
      PAGE_SIZE.min,
      PAGE_SIZE.max,
    ]);
  });

  it('cache_aware reads its pageSize with the shared spec itself', () => {
    expect(CACHE_AWARE_OPTIONS.specs.pageSize).toBe(PAGE_SIZE);
  });

  it('blockHashes pages by the default page size when none is given, within the same bounds', () => {
    const tokens = Array.from({ length: 5 * DEFAULT_PAGE_SIZE + 3 }, (_, i) => i);
    expect(blockHashes(tokens)).toEqual(blockHashes(tokens, { pageSize: DEFAULT_PAGE_SIZE }));
    expect(blockHashes(tokens)).toHaveLength(5);
    throwsCode(() => blockHashes(tokens, { pageSize: PAGE_SIZE.max + 1 }), 'INVALID_ARGUMENT');
  });

  it('the simulator refuses KV events whose engine blocks are not whole pages of the policy', () => {
    const workload = generatedSharedPrefix({ groups: 2, promptsPerGroup: 2, seed: 1 });
    const error = throwsCode(
      () =>
        resolveSimulationOptions({
          workload,
          policy: 'cache_aware',
          policyConfig: { pageSize: 32 },
          kvEvents: true,
        }),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toMatch(
      /fleet\.blockSize \(16\) must equal cache_aware's pageSize \(32\)/,
    );
    expect(() =>
      resolveSimulationOptions({
        workload,
        policy: 'cache_aware',
        policyConfig: { pageSize: 8 },
        kvEvents: true,
      }),
    ).not.toThrow();
  });
});
