/**
 * SGLang names a batch's data-parallel rank `attn_dp_rank` (vLLM: `data_parallel_rank`). Over
 * real ZMQ sockets on 127.0.0.1: a subscriber following one rank reads the rank of a batch in
 * map layout by either name, so a batch of another rank is dropped, not applied.
 */
import { encode } from '@msgpack/msgpack';
import { afterEach, describe, expect, it } from 'vitest';
import { KvEventSubscriber } from '../../src/kv-events/subscriber.js';
import {
  EngineModel,
  FakeEngine,
  RecordingTarget,
  seqFrame,
  until,
} from './support/fake-engine.js';

const URL = 'http://127.0.0.1:8000';
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** An SGLang batch written as a map: `{ts, events, attn_dp_rank}`. */
const sglangMapBatch = (rank: number, events: unknown[]) =>
  encode({ ts: Date.now() / 1000, events, attn_dp_rank: rank }, { useBigInt64: true });

describe('SGLang map batches over real sockets', () => {
  it('a subscriber of rank 0 drops a batch naming attn_dp_rank 1 and applies one naming 0', async () => {
    const e = await FakeEngine.start();
    open.push(e);
    const target = new RecordingTarget();
    const s = await KvEventSubscriber.open({
      workerUrl: URL,
      endpoint: e.endpoint,
      target,
      dpRank: 0,
      reconnectIntervalMs: 20,
      reconnectMaxIntervalMs: 100,
    });
    open.push(s);
    await until(() => {
      void e.send([]);
      return s.stats().batches > 0;
    });
    await until(() => s.stats().lastSeq === e.seq - 1n);
    const before = s.stats();

    // Rank 1's batch on rank 0's socket, at rank 0's next seq; then rank 0's own.
    const stray = new EngineModel().stored(range(32, 7_000));
    await e.raw(['', seqFrame(e.seq++), sglangMapBatch(1, [stray.event])]);
    const own = e.stored(range(32, 3_000));
    await e.raw(['', seqFrame(e.seq++), sglangMapBatch(0, [own.event])]);
    await until(() => s.stats().lastSeq === e.seq - 1n);

    expect(s.stats()).toMatchObject({
      malformed: before.malformed + 1,
      gaps: 0,
      clears: before.clears,
    });
    expect(target.keys(URL)).toEqual(e.truth());
  });
});
