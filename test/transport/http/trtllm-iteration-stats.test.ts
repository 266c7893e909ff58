import { describe, expect, it } from 'vitest';
import { LOAD_FIELDS } from '../../../src/transport/http/runtime-metrics.js';
import { readIterationStats } from '../../../src/transport/http/trtllm-iteration-stats.js';
import { fixtureBody } from './support/fake-worker.js';

/** The reading as a plain record of the fields present. */
function load(body: unknown, dpRank?: number): Record<string, number> | undefined {
  const { values } = readIterationStats(body, dpRank);
  if (values === undefined) return undefined;
  const out: Record<string, number> = {};
  LOAD_FIELDS.forEach((field, slot) => {
    if (!Number.isNaN(values[slot]!)) out[field] = values[slot]!;
  });
  return out;
}

const kv = (used: number, max: number) => ({ maxNumBlocks: max, usedNumBlocks: used });

describe('readIterationStats', () => {
  it('reads the newest iteration of a trtllm-serve /metrics body', () => {
    const body = JSON.parse(fixtureBody('trtllm-iteration-stats.jsonc'));

    expect(load(body)).toEqual({ runningRequests: 7, waitingRequests: 2, tokenUsage: 3283 / 9380 });
    expect(readIterationStats(body, undefined).recognised).toBe(true);
  });

  it('takes the largest iter as the newest, whatever the array order', () => {
    const body = [
      { iter: 9, numActiveRequests: 1 },
      { iter: 7, numActiveRequests: 5 },
    ];

    expect(load(body)).toEqual({ runningRequests: 1 });
  });

  it('derives KV usage from free blocks when used blocks are missing', () => {
    const body = [{ iter: 1, kvCacheStats: { maxNumBlocks: 200, freeNumBlocks: 150 } }];

    expect(load(body)).toEqual({ tokenUsage: 0.25 });
  });

  it('adds requests over attention-DP ranks and takes the fullest rank for KV usage', () => {
    const body = [
      {
        iter: 4,
        attentionDpRank: 0,
        numActiveRequests: 3,
        numQueuedRequests: 1,
        kvCacheStats: kv(10, 100),
      },
      {
        iter: 4,
        attentionDpRank: 1,
        numActiveRequests: 5,
        numQueuedRequests: 0,
        kvCacheStats: kv(40, 100),
      },
      { iter: 3, attentionDpRank: 1, numActiveRequests: 50, numQueuedRequests: 50 },
    ];

    expect(load(body)).toEqual({ runningRequests: 8, waitingRequests: 1, tokenUsage: 0.4 });
    expect(load(body, 1)).toEqual({ runningRequests: 5, waitingRequests: 0, tokenUsage: 0.4 });
  });

  it('is recognised but empty for an idle server ([])', () => {
    expect(readIterationStats([], undefined)).toEqual({ values: undefined, recognised: true });
  });

  it.each<[string, unknown]>([
    ['an object', { numActiveRequests: 3 }],
    ['a string', 'numActiveRequests'],
    ['null', null],
    ['an array of numbers', [1, 2, 3]],
    ['an array of unrelated objects', [{ status: 'ok' }, { error: 'x' }]],
    ['nested arrays', [[{ numActiveRequests: 3 }]]],
  ])('does not recognise %s', (_label, body) => {
    expect(readIterationStats(body, undefined)).toEqual({ values: undefined, recognised: false });
  });

  it('ignores values that are not finite, non-negative numbers', () => {
    const body = [
      {
        iter: 1,
        numActiveRequests: '7',
        numQueuedRequests: -1,
        kvCacheStats: { maxNumBlocks: 0, usedNumBlocks: 5 },
      },
      {
        iter: 2,
        attentionDpRank: 1,
        numActiveRequests: null,
        numQueuedRequests: Number.POSITIVE_INFINITY,
      },
      { iter: 3, attentionDpRank: 2, kvCacheStats: { maxNumBlocks: 10, freeNumBlocks: 11 } },
      { iter: 4, attentionDpRank: 3, kvCacheStats: [10, 5] },
    ];

    expect(load(body)).toBeUndefined();
    expect(readIterationStats(body, undefined).recognised).toBe(true);
  });

  it('reads only own data fields: a __proto__ key or an inherited field changes nothing', () => {
    const body = JSON.parse(
      '[{"iter":1,"__proto__":{"numActiveRequests":99},"numQueuedRequests":2,"kvCacheStats":{"__proto__":{"maxNumBlocks":4},"usedNumBlocks":1}}]',
    );

    expect(load(body)).toEqual({ waitingRequests: 2 });
  });

  it('drops a request sum over ranks that overflows to Infinity', () => {
    const body = [
      { attentionDpRank: 0, numActiveRequests: 1.7e308, numQueuedRequests: 1 },
      { attentionDpRank: 1, numActiveRequests: 1.7e308, numQueuedRequests: 1 },
    ];

    expect(load(body)).toEqual({ waitingRequests: 2 });
  });

  it('looks at the newest 65,536 entries of a huge array', () => {
    const body: unknown[] = Array.from({ length: 200_000 }, (_, i) => ({
      attentionDpRank: i,
      numActiveRequests: 1,
    }));

    expect(load(body)).toEqual({ runningRequests: 65_536 });
  });
});
