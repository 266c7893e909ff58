import { describe, expect, it } from 'vitest';
import { zeroReuse } from '../../../src/sim/workloads/index.js';
import { throwsCode } from '../../support/fixtures.js';
import { sameRequests, unboundedCacheHits } from './blocks.js';

describe('zeroReuse: shape', () => {
  it('builds 512 random 1,024-token prompts with the documented defaults', () => {
    const workload = zeroReuse();

    expect(workload.name).toBe('zero-reuse');
    expect(workload.description).toBe(
      '512 requests, 1,024 random tokens each (no shared prefix), 128 output tokens',
    );
    expect(workload.parameters).toEqual({
      requests: 512,
      promptLength: 1024,
      outputLength: 128,
      seed: 1,
    });
    expect(workload.requests).toHaveLength(512);
    workload.requests.forEach((request, i) => {
      expect(request.id).toBe(i);
      expect(request.promptLength).toBe(1024);
      expect(request.tokens()).toHaveLength(1024);
      expect(request.tokens()).toBe(request.tokens());
      expect(request.outputLength).toBe(128);
      expect('routingKey' in request).toBe(false);
      expect(request.tokens().every((t) => t < 128_000)).toBe(true);
    });
  });

  it('shares no 16-token block between any two prompts, not even their first tokens', () => {
    const { requests } = zeroReuse();
    const blocks = new Set<string>();
    let count = 0;
    for (const request of requests) {
      const tokens = request.tokens();
      for (let start = 0; start + 16 <= tokens.length; start += 16) {
        blocks.add(tokens.subarray(start, start + 16).join(','));
        count++;
      }
    }

    expect(blocks.size).toBe(count);
    expect(new Set(requests.map((r) => r.tokens()[0])).size).toBe(512);
    expect(unboundedCacheHits(requests, 16).hit).toBe(0);
  });

  it('keeps first tokens distinct up to 128,000 one-token prompts', () => {
    const { requests } = zeroReuse({ requests: 128_000, promptLength: 1 });
    expect(new Set(requests.map((r) => r.tokens()[0])).size).toBe(128_000);
  });
});

describe('zeroReuse: determinism', () => {
  it('gives an identical workload for the same options and a different one for another seed', () => {
    const a = zeroReuse({ requests: 30, promptLength: 50, seed: 5 });
    const b = zeroReuse({ requests: 30, promptLength: 50, seed: 5 });
    const c = zeroReuse({ requests: 30, promptLength: 50, seed: 6 });

    expect(sameRequests(a.requests, b.requests)).toBe(true);
    expect(sameRequests(a.requests, c.requests)).toBe(false);
  });
});

describe('zeroReuse: options', () => {
  it.each([
    ['zeroReuse.requests', { requests: 0 }],
    ['zeroReuse.requests', { requests: 128_001 }],
    ['zeroReuse.requests', { requests: 1000, promptLength: 1_000_000 }],
    ['zeroReuse.promptLength', { promptLength: 1_000_001 }],
    ['zeroReuse.outputLength', { outputLength: 1.5 }],
    ['zeroReuse.seed', { seed: Number.POSITIVE_INFINITY }],
    ['zeroReuse.prompts', { prompts: 3 }],
    ['zeroReuse', 5],
  ])('rejects a bad %s naming it', (field, options) => {
    const error = throwsCode(
      () => zeroReuse(options as Parameters<typeof zeroReuse>[0]),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(`${field} `)).toBe(true);
  });
});
