import { describe, expect, it } from 'vitest';
import { KV_EVENT_END_SEQ, readKvEventFrames } from '../../src/kv-events/frames.js';
import { throwsCode } from '../support/fixtures.js';

const text = new TextEncoder();

/** `seq` as the publisher writes it: 8 bytes, big-endian, two's complement. */
function seqFrame(seq: bigint): Uint8Array {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigInt64(0, seq, false);
  return bytes;
}

describe('readKvEventFrames', () => {
  it('splits topic, seq and payload, keeping the payload frame itself', () => {
    const payload = new Uint8Array([0x92, 0xcb, 0x01]);
    const message = readKvEventFrames([
      text.encode('kv@10.0.0.7:8000@llama'),
      seqFrame(0n),
      payload,
    ]);
    expect(message.topic).toBe('kv@10.0.0.7:8000@llama');
    expect(message.seq).toBe(0n);
    expect(message.payload).toBe(payload);
  });

  it('reads the largest sequence number and the replay END marker (−1)', () => {
    const empty = new Uint8Array(0);
    expect(readKvEventFrames([empty, seqFrame(2n ** 63n - 1n), empty]).seq).toBe(2n ** 63n - 1n);
    const end = readKvEventFrames([empty, new Uint8Array(8).fill(0xff), empty]);
    expect(end.seq).toBe(-1n);
    expect(end.seq).toBe(KV_EVENT_END_SEQ);
    expect(end.topic).toBe('');
  });

  it('reads seq big-endian from a frame that is a view into a larger buffer', () => {
    const backing = new Uint8Array(32).fill(0xaa);
    backing.set([0, 0, 0, 0, 0, 0, 0x01, 0x02], 5);
    const seq = backing.subarray(5, 13);
    expect(readKvEventFrames([new Uint8Array(0), seq, new Uint8Array(0)]).seq).toBe(0x0102n);
    const buffer = Buffer.from([0, 0, 0, 1, 0, 0, 0, 0]);
    expect(readKvEventFrames([Buffer.from('t'), buffer, Buffer.alloc(0)]).seq).toBe(2n ** 32n);
  });

  it('keeps a leading byte-order mark of the topic', () => {
    const topic = new Uint8Array([0xef, 0xbb, 0xbf, 0x61]);
    expect(readKvEventFrames([topic, seqFrame(1n), new Uint8Array(0)]).topic).toBe('\ufeffa');
  });

  it('throws INVALID_ARGUMENT for a wrong frame count', () => {
    const f = new Uint8Array(8);
    throwsCode(() => readKvEventFrames([f, f]), 'INVALID_ARGUMENT');
    throwsCode(() => readKvEventFrames([f, f, f, f]), 'INVALID_ARGUMENT');
    throwsCode(() => readKvEventFrames([]), 'INVALID_ARGUMENT');
    throwsCode(() => readKvEventFrames('abc' as never), 'INVALID_ARGUMENT');
  });

  it('throws INVALID_ARGUMENT for a seq frame that is not 8 bytes', () => {
    const empty = new Uint8Array(0);
    for (const length of [0, 4, 7, 9, 16]) {
      const error = throwsCode(
        () => readKvEventFrames([empty, new Uint8Array(length), empty]),
        'INVALID_ARGUMENT',
      );
      expect(error.message).toContain('8 bytes');
    }
  });

  it('throws INVALID_ARGUMENT for a frame that is not a Uint8Array', () => {
    const f = new Uint8Array(8);
    throwsCode(() => readKvEventFrames(['topic' as never, f, f]), 'INVALID_ARGUMENT');
    throwsCode(
      () => readKvEventFrames([f, [0, 0, 0, 0, 0, 0, 0, 0] as never, f]),
      'INVALID_ARGUMENT',
    );
    throwsCode(() => readKvEventFrames([f, f, null as never]), 'INVALID_ARGUMENT');
  });

  it('throws INVALID_ARGUMENT for a topic that is not UTF-8', () => {
    const bad = [
      new Uint8Array([0xff]),
      new Uint8Array([0x61, 0xc3]),
      new Uint8Array([0xed, 0xa0, 0x80]),
    ];
    for (const topic of bad) {
      throwsCode(
        () => readKvEventFrames([topic, seqFrame(0n), new Uint8Array(0)]),
        'INVALID_ARGUMENT',
      );
    }
  });

  it('throws INVALID_ARGUMENT for a payload over maxPayloadBytes, and for a bad limit', () => {
    const frames = [new Uint8Array(0), seqFrame(3n), new Uint8Array(5)];
    expect(readKvEventFrames(frames, { maxPayloadBytes: 5 }).payload).toHaveLength(5);
    const error = throwsCode(
      () => readKvEventFrames(frames, { maxPayloadBytes: 4 }),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toContain('maxPayloadBytes');
    throwsCode(() => readKvEventFrames(frames, { maxPayloadBytes: -1 }), 'INVALID_ARGUMENT');
    throwsCode(() => readKvEventFrames(frames, { bogus: 1 } as never), 'INVALID_ARGUMENT');
  });
});
