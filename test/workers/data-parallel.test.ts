/**
 * `dataParallelHint`: what steers a request to a worker's data-parallel rank, per runtime.
 */
import { describe, expect, it } from 'vitest';
import { DATA_PARALLEL_RANK_HEADER, dataParallelHint, WorkerRegistry } from '../../src/index.js';

async function worker(url: string, runtime: 'vllm' | 'sglang' | 'trtllm', dpSize?: number) {
  const registry = await WorkerRegistry.create();
  return registry.register({ url, models: ['m'], runtime, ...(dpSize ? { dpSize } : {}) });
}

describe('dataParallelHint', () => {
  it('vLLM: the rank header only; SGLang: the header and routed_dp_rank in the body', async () => {
    expect(dataParallelHint(await worker('http://e:8000@3', 'vllm', 4))).toEqual({
      rank: 3,
      headers: { [DATA_PARALLEL_RANK_HEADER]: '3' },
      body: {},
    });
    expect(dataParallelHint(await worker('http://e:8000@0', 'sglang', 2))).toEqual({
      rank: 0,
      headers: { 'x-data-parallel-rank': '0' },
      body: { routed_dp_rank: 0 },
    });
    expect(dataParallelHint(await worker('http://e:8000@1', 'trtllm', 2))?.body).toEqual({});
  });

  it('nothing for a worker that is no rank', async () => {
    expect(dataParallelHint(await worker('http://e:8000', 'vllm'))).toBeUndefined();
  });
});
