import { describe, expect, it } from 'vitest';
import { singleHotPrefix } from '../../../src/sim/workloads/index.js';
import { throwsCode } from '../../support/fixtures.js';
import { commonPrefix, sameRequests, unboundedCacheHits } from './blocks.js';

describe('singleHotPrefix: shape', () => {
  it('builds 512 prompts of one 2,048-token prefix + a 64-token suffix with the documented defaults', () => {
    const workload = singleHotPrefix();

    expect(workload.name).toBe('hot-prefix');
    expect(workload.description).toBe(
      '512 requests, one 2,048-token shared prefix + 64-token suffix, 128 output tokens',
    );
    expect(workload.parameters).toEqual({
      requests: 512,
      prefixLength: 2048,
      suffixLength: 64,
      outputLength: 128,
      seed: 1,
    });
    expect(workload.requests).toHaveLength(512);
    const prefix = workload.requests[0]!.tokens().subarray(0, 2048);
    workload.requests.forEach((request, i) => {
      expect(request.id).toBe(i);
      expect(request.promptLength).toBe(2112);
      expect(request.tokens()).toHaveLength(2112);
      expect(request.tokens()).toBe(request.tokens());
      expect(request.outputLength).toBe(128);
      expect(commonPrefix(request.tokens(), prefix)).toBe(2048);
      expect('routingKey' in request).toBe(false);
      expect('outputTokens' in request).toBe(false);
    });
  });

  it('gives every prompt a suffix of its own, differing from its first token on', () => {
    const { requests } = singleHotPrefix({ requests: 300, prefixLength: 40, suffixLength: 3 });
    expect(new Set(requests.map((r) => r.tokens()[40])).size).toBe(300);
  });

  it('lets one unbounded cache serve the prefix blocks of every prompt but the first', () => {
    const { hit, total } = unboundedCacheHits(singleHotPrefix().requests, 16);
    expect(hit).toBe(511 * 2048);
    expect(total).toBe(512 * 2112);
  });
});

describe('singleHotPrefix: determinism', () => {
  it('gives an identical workload for the same options and a different one for another seed', () => {
    const a = singleHotPrefix({ requests: 20, seed: 3 });
    const b = singleHotPrefix({ requests: 20, seed: 3 });
    const c = singleHotPrefix({ requests: 20, seed: 4 });

    expect(sameRequests(a.requests, b.requests)).toBe(true);
    expect(sameRequests(a.requests, c.requests)).toBe(false);
    expect(commonPrefix(a.requests[0]!.tokens(), c.requests[0]!.tokens())).toBeLessThan(16);
  });
});

describe('singleHotPrefix: options', () => {
  it.each([
    ['hotPrefix.requests', { requests: 0 }],
    ['hotPrefix.requests', { requests: 128_001 }],
    ['hotPrefix.requests', { requests: 100_000, prefixLength: 4096 }],
    ['hotPrefix.prefixLength', { prefixLength: -2048 }],
    ['hotPrefix.suffixLength', { prefixLength: 999_990, suffixLength: 11 }],
    ['hotPrefix.suffixLength', { suffixLength: 0 }],
    ['hotPrefix.outputLength', { outputLength: 1_000_001 }],
    ['hotPrefix.seed', { seed: '1' }],
    ['hotPrefix.prefix', { prefix: 4 }],
  ])('rejects a bad %s naming it', (field, options) => {
    const error = throwsCode(
      () => singleHotPrefix(options as Parameters<typeof singleHotPrefix>[0]),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(`${field} `)).toBe(true);
  });
});
