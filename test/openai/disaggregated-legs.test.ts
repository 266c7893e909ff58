/**
 * The wire pieces of disaggregation: `bootstrap_room` written as an exact integer into a body's
 * text, and the `kv_transfer_params` read from a vLLM prefill answer.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { randomRoom, transferParams, withRoom } from '../../src/openai/disaggregated-legs.js';

const encoder = new TextEncoder();
const ROOM = /"bootstrap_room":(\d{1,25})\}$/;

describe('bootstrap_room', () => {
  it('is spliced as the exact integer, the body otherwise unchanged (property)', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 })),
        fc.bigInt({ min: 0n, max: (1n << 63n) - 1n }),
        (body, room) => {
          const { bootstrap_room: _, ...rest } = body as Record<string, unknown>;
          const text = withRoom(JSON.stringify(rest), room);
          expect(ROOM.exec(text)?.[1]).toBe(room.toString());
          const parsed = JSON.parse(text) as Record<string, unknown>;
          const { bootstrap_room: written, ...others } = parsed;
          expect(others).toEqual(JSON.parse(JSON.stringify(rest)));
          expect(typeof written).toBe('number');
        },
      ),
    );
  });

  it('is random in [0, 2^63 - 1]', () => {
    const rooms = new Set<bigint>();
    for (let i = 0; i < 200; i++) {
      const room = randomRoom();
      expect(room >= 0n && room < 1n << 63n).toBe(true);
      rooms.add(room);
    }
    expect(rooms.size).toBe(200);
  });
});

describe('transferParams', () => {
  const read = (value: unknown) => transferParams(encoder.encode(JSON.stringify(value)));

  it('reads a non-empty object; absent, null or empty is none', () => {
    const params = { remote_engine_id: 'e', remote_block_ids: [1, 2] };
    expect(read({ choices: [], kv_transfer_params: params })).toEqual(params);
    expect(read({ choices: [] })).toBeUndefined();
    expect(read({ kv_transfer_params: null })).toBeUndefined();
    expect(read({ kv_transfer_params: {} })).toBeUndefined();
  });

  it('refuses an answer that is no object, and params that are no object', () => {
    expect(() => read([1])).toThrow(/not a JSON object/);
    expect(() => read({ kv_transfer_params: [1] })).toThrow(/not an object/);
    expect(() => read({ kv_transfer_params: 'x' })).toThrow(/not an object/);
    expect(() => transferParams(encoder.encode('{"kv_transfer_params":'))).toThrow();
  });
});
