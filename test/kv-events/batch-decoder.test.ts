import { createHash } from 'node:crypto';
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/core/errors.js';
import {
  decodeKvEventBatch,
  type EngineEvent,
  type KvDecodeLimits,
} from '../../src/kv-events/batch-decoder.js';
import { runs } from '../helpers/fc-settings.js';
import { throwsCode } from '../support/fixtures.js';

const msgpack = (bytes: Uint8Array): unknown => decode(bytes, { useBigInt64: true });
const pack = (value: unknown): Uint8Array => encode(value, { useBigInt64: true });
const read = (value: unknown, limits?: Partial<KvDecodeLimits>) =>
  decodeKvEventBatch(pack(value), msgpack, limits);

/** A hash above 2^53, as vLLM emits it (low 64 bits of the digest, unsigned). */
const BIG = 15_760_518_052_499_183_552n;
const TS = 1_765_432_100.25;

function range(n: number, from = 0): number[] {
  return Array.from({ length: n }, (_, i) => from + i);
}

function stored(fields: Partial<Extract<EngineEvent, { type: 'stored' }>>): EngineEvent {
  return {
    type: 'stored',
    hashes: [],
    parent: undefined,
    tokenIds: [],
    blockSize: 16,
    loraName: undefined,
    medium: undefined,
    groupIdx: undefined,
    specKind: undefined,
    extraKeys: false,
    ...fields,
  };
}

describe('decodeKvEventBatch: vLLM', () => {
  it('reads a positional batch of positional events (releases before mid-2026)', () => {
    const batch = read([
      TS,
      [
        // block_hashes, parent_block_hash, token_ids, block_size, lora_id, medium (rest omitted)
        ['BlockStored', [BIG, 42], null, range(8), 4, null, 'GPU'],
        // every field, in declaration order
        [
          'BlockStored',
          [7],
          BIG,
          range(4, 100),
          4,
          3,
          'CPU',
          'sql-lora',
          [['mm-hash', 0]],
          1,
          'sliding_window',
          4096,
        ],
        ['BlockStored', [8], 7, range(4), 4], // only the five base fields
        ['BlockRemoved', [BIG, 42], 'GPU'],
        ['BlockRemoved', [9]],
        ['AllBlocksCleared'],
      ],
      0,
    ]);
    expect(batch).toEqual({
      ts: TS,
      dataParallelRank: 0,
      skipped: 0,
      events: [
        stored({ hashes: [BIG, 42n], tokenIds: range(8), blockSize: 4, medium: 'GPU' }),
        stored({
          hashes: [7n],
          parent: BIG,
          tokenIds: range(4, 100),
          blockSize: 4,
          medium: 'CPU',
          loraName: 'sql-lora',
          extraKeys: true,
          groupIdx: 1,
          specKind: 'sliding_window',
        }),
        stored({ hashes: [8n], parent: 7n, tokenIds: range(4), blockSize: 4 }),
        { type: 'removed', hashes: [BIG, 42n], medium: 'GPU', groupIdx: undefined },
        { type: 'removed', hashes: [9n], medium: undefined, groupIdx: undefined },
        { type: 'cleared' },
      ],
    });
  });

  it('reads a positional batch of tagged map events (releases since mid-2026)', () => {
    const batch = read([
      TS,
      [
        {
          type: 'BlockStored',
          block_hashes: [BIG],
          parent_block_hash: null,
          token_ids: range(16),
          block_size: 16,
          lora_id: null,
          medium: 'GPU',
          lora_name: null,
          extra_keys: [null],
          group_idx: 0,
          kv_cache_spec_kind: 'full_attention',
          kv_cache_spec_sliding_window: null,
        },
        // omit_defaults: the null fields are absent
        { type: 'BlockStored', block_hashes: [1, 2], token_ids: range(32), block_size: 16 },
        { type: 'BlockRemoved', block_hashes: [BIG], medium: 'CPU', group_idx: 1 },
        { type: 'AllBlocksCleared' },
      ],
      3,
    ]);
    expect(batch.dataParallelRank).toBe(3);
    expect(batch.skipped).toBe(0);
    expect(batch.events).toEqual([
      stored({
        hashes: [BIG],
        tokenIds: range(16),
        medium: 'GPU',
        groupIdx: 0,
        specKind: 'full_attention',
      }),
      stored({ hashes: [1n, 2n], tokenIds: range(32) }),
      { type: 'removed', hashes: [BIG], medium: 'CPU', groupIdx: 1 },
      { type: 'cleared' },
    ]);
  });

  it('reads a map batch, with and without its data-parallel rank', () => {
    const events = [{ type: 'BlockRemoved', block_hashes: [5] }];
    expect(read({ ts: TS, events, data_parallel_rank: 2 })).toEqual({
      ts: TS,
      events: [{ type: 'removed', hashes: [5n], medium: undefined, groupIdx: undefined }],
      dataParallelRank: 2,
      skipped: 0,
    });
    expect(read({ ts: TS, events }).dataParallelRank).toBeUndefined();
    expect(read({ ts: TS, events, data_parallel_rank: null }).dataParallelRank).toBeUndefined();
    expect(read([TS, events]).dataParallelRank).toBeUndefined();
    expect(read([TS, events, null]).dataParallelRank).toBeUndefined();
  });

  it('reads raw digest hashes as their last 8 bytes, big-endian: the same value as the int form', () => {
    const digest = createHash('sha256').update('block 0').digest();
    const asInt = BigInt(`0x${digest.toString('hex')}`) & (2n ** 64n - 1n); // what vLLM sends by default
    const xxh128 = new Uint8Array(16).fill(0x11);
    xxh128.set([0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1], 8);
    const batch = read([
      TS,
      [
        ['BlockStored', [new Uint8Array(digest)], null, range(2), 2],
        ['BlockStored', [xxh128], new Uint8Array(digest), range(2), 2],
        ['BlockRemoved', [new Uint8Array([0x01, 0x02, 0x03])]],
      ],
    ]);
    expect(batch.skipped).toBe(0);
    expect(batch.events).toEqual([
      stored({ hashes: [asInt], tokenIds: range(2), blockSize: 2 }),
      stored({ hashes: [0xdeadbeef_00000001n], parent: asInt, tokenIds: range(2), blockSize: 2 }),
      { type: 'removed', hashes: [0x010203n], medium: undefined, groupIdx: undefined },
    ]);
  });

  it('keeps every bit of 64-bit hashes, including 2^64 − 1 and 0', () => {
    const batch = read([TS, [['BlockRemoved', [2n ** 64n - 1n, 0, 2n ** 53n + 1n, BIG]]]]);
    expect(batch.events).toEqual([
      {
        type: 'removed',
        hashes: [2n ** 64n - 1n, 0n, 2n ** 53n + 1n, BIG],
        medium: undefined,
        groupIdx: undefined,
      },
    ]);
  });
});

describe('decodeKvEventBatch: SGLang', () => {
  it('reads positional events with signed int64 hashes, one page each', () => {
    // The first 16 hex digits of a SHA-256 read as a signed int64: often negative.
    const h1 = -6_686_225_969_020_458_063n;
    const h2 = 1_234_567_890_123_456_789n;
    const batch = read([
      TS,
      [
        ['BlockStored', [h1], null, [11, 12], 2, null],
        ['BlockStored', [h2], h1, [13, 14], 2, null, 'GPU', 'lora-a', [['salt']]],
        ['BlockStored', [-1], h2, [15], 1, null], // a small negative comes as a plain integer
        ['BlockRemoved', [h1]],
      ],
    ]);
    const u1 = 2n ** 64n + h1;
    expect(batch).toEqual({
      ts: TS,
      dataParallelRank: undefined,
      skipped: 0,
      events: [
        stored({ hashes: [u1], tokenIds: [11, 12], blockSize: 2 }),
        stored({
          hashes: [h2],
          parent: u1,
          tokenIds: [13, 14],
          blockSize: 2,
          medium: 'GPU',
          loraName: 'lora-a',
          extraKeys: true,
        }),
        stored({ hashes: [2n ** 64n - 1n], parent: h2, tokenIds: [15], blockSize: 1 }),
        { type: 'removed', hashes: [u1], medium: undefined, groupIdx: undefined },
      ],
    });
  });

  it('reads a map batch’s rank from attn_dp_rank, SGLang’s name for it', () => {
    // SGLang's EventBatch is `[ts, events, attn_dp_rank]`; written as a map, the rank is named
    // `attn_dp_rank` where vLLM names it `data_parallel_rank`.
    const events = [['BlockRemoved', [-3]]];
    expect(read({ ts: TS, events, attn_dp_rank: 3 })).toEqual({
      ts: TS,
      events: [
        { type: 'removed', hashes: [2n ** 64n - 3n], medium: undefined, groupIdx: undefined },
      ],
      dataParallelRank: 3,
      skipped: 0,
    });
    expect(read({ ts: TS, events, attn_dp_rank: null }).dataParallelRank).toBeUndefined();
    expect(read({ ts: TS, events, attn_dp_rank: 1, data_parallel_rank: 1 }).dataParallelRank).toBe(
      1,
    );
    expect(
      read({ ts: TS, events, attn_dp_rank: 1, data_parallel_rank: null }).dataParallelRank,
    ).toBe(1);
    // A batch naming two different ranks belongs to neither; a rank that is not an index is refused.
    throwsCode(
      () => read({ ts: TS, events, attn_dp_rank: 1, data_parallel_rank: 2 }),
      'INVALID_ARGUMENT',
    );
    throwsCode(() => read({ ts: TS, events, attn_dp_rank: -1 }), 'INVALID_ARGUMENT');
    throwsCode(() => read({ ts: TS, events, attn_dp_rank: '0' }), 'INVALID_ARGUMENT');
  });

  it('counts a non-empty metadata map (cache_salt) as extra keys', () => {
    const event = (metadata: unknown) => ({
      type: 'BlockStored',
      block_hashes: [-2],
      parent_block_hash: null,
      token_ids: [1],
      block_size: 1,
      lora_id: null,
      metadata,
    });
    const batch = read([
      TS,
      [
        event({ cache_salt: 'tenant-a' }),
        event({}),
        event(null),
        event({ cache_salt: null }),
        event('tenant-a'),
      ],
    ]);
    expect(batch.events.map((e) => e.type === 'stored' && e.extraKeys)).toEqual([
      true,
      false,
      false,
      false,
    ]);
    expect(batch.skipped).toBe(1); // metadata that is not a map
  });
});

describe('decodeKvEventBatch: skipped events', () => {
  it('skips and counts events of an unknown type', () => {
    const batch = read([
      TS,
      [
        ['BlockMoved', [1]],
        { type: 'BlockPinned', block_hashes: [1] },
        { block_hashes: [1] },
        [],
        42,
        'BlockRemoved',
        null,
        ['BlockRemoved', [1]],
      ],
    ]);
    expect(batch.skipped).toBe(7);
    expect(batch.events).toEqual([
      { type: 'removed', hashes: [1n], medium: undefined, groupIdx: undefined },
    ]);
  });

  const valid = ['BlockStored', [1, 2], 0, range(4), 2, null, 'GPU', null, null, 0, 'full', null];
  const malformed: Record<string, unknown[]> = {
    'hashes not an array': ['BlockStored', 1, null, range(2), 2],
    'a float hash': ['BlockStored', [1.5], null, range(2), 2],
    'a hash beyond 2^53 as a float': ['BlockStored', [1e20], null, range(2), 2],
    'a string hash': ['BlockStored', ['abc'], null, range(2), 2],
    'an empty bytes hash': ['BlockStored', [new Uint8Array(0)], null, range(2), 2],
    'a 65-byte hash': ['BlockStored', [new Uint8Array(65)], null, range(2), 2],
    'a bad parent': ['BlockStored', [1], 'p', range(2), 2],
    'a negative token id': ['BlockStored', [1], null, [0, -1], 2],
    'a token id over uint32': ['BlockStored', [1], null, [0, 2 ** 32], 2],
    'a float token id': ['BlockStored', [1], null, [0, 0.5], 2],
    'token_ids not an array': ['BlockStored', [1], null, 'ab', 2],
    'block_size 0': ['BlockStored', [], null, [], 0],
    'a float block_size': ['BlockStored', [1], null, range(2), 2.5],
    'block_size missing': ['BlockStored', [1], null, range(2)],
    'too few tokens': ['BlockStored', [1, 2], null, range(3), 2],
    'too many tokens': ['BlockStored', [1], null, range(3), 2],
    'a string lora_id': ['BlockStored', [1], null, range(2), 2, 'x'],
    'a numeric medium': ['BlockStored', [1], null, range(2), 2, null, 1],
    'a numeric lora_name': ['BlockStored', [1], null, range(2), 2, null, null, 7],
    'extra_keys not an array': ['BlockStored', [1], null, range(2), 2, null, null, null, 'k'],
    'a negative group_idx': ['BlockStored', [1], null, range(2), 2, null, null, null, null, -1],
    'a numeric spec kind': ['BlockStored', [1], null, range(2), 2, null, null, null, null, 0, 5],
    'a string window': ['BlockStored', [1], null, range(2), 2, null, null, null, null, 0, 'a', 'w'],
    'removed without hashes': ['BlockRemoved'],
    'removed with a bad hash': ['BlockRemoved', [true]],
    'removed with a bad medium': ['BlockRemoved', [1], false],
    'removed with a bad group_idx': ['BlockRemoved', [1], 'GPU', 0.5],
  };
  for (const [name, event] of Object.entries(malformed)) {
    it(`skips and counts a malformed event: ${name}`, () => {
      const batch = read([TS, [event, valid]]);
      expect(batch.skipped).toBe(1);
      expect(batch.events).toHaveLength(1);
    });
  }

  it('skips an event over the per-event hash or token-id limit', () => {
    const events = [
      ['BlockStored', [1, 2, 3], null, range(3), 1],
      ['BlockRemoved', [1, 2, 3]],
      ['BlockStored', [1, 2], null, range(2), 1],
    ];
    expect(read([TS, events], { maxHashesPerEvent: 2 }).skipped).toBe(2);
    expect(read([TS, events], { maxTokenIdsPerEvent: 2 }).skipped).toBe(1);
    expect(read([TS, events], { maxHashesPerEvent: 3, maxTokenIdsPerEvent: 3 }).skipped).toBe(0);
  });

  it('never reads a field inherited from the prototype', () => {
    const payload = pack([TS, [{ type: 'BlockRemoved' }]]);
    const batch = decodeKvEventBatch(payload, () => [
      TS,
      [Object.assign(Object.create({ block_hashes: [1] }), { type: 'BlockRemoved' })],
    ]);
    expect(batch.skipped).toBe(1);
    expect(read([TS, [{ type: 'BlockRemoved', block_hashes: [1] }]]).skipped).toBe(0);
    expect(payload.length).toBeGreaterThan(0);
  });

  it('accepts maps decoded as Map objects', () => {
    const raw = new Map<string, unknown>([
      ['ts', TS],
      [
        'events',
        [
          new Map<string, unknown>([
            ['type', 'BlockRemoved'],
            ['block_hashes', [3n]],
          ]),
        ],
      ],
    ]);
    const batch = decodeKvEventBatch(new Uint8Array(1), () => raw);
    expect(batch.events).toEqual([
      { type: 'removed', hashes: [3n], medium: undefined, groupIdx: undefined },
    ]);
  });
});

describe('decodeKvEventBatch: malformed batches throw INVALID_ARGUMENT', () => {
  const cases: Record<string, unknown> = {
    'a number': 5,
    'a string': 'batch',
    null: null,
    bytes: new Uint8Array(3),
    'ts missing': { events: [] },
    'ts a string': ['now', []],
    'ts NaN': [Number.NaN, []],
    'ts a bigint': [5n, []],
    'events missing': [TS],
    'events a map': { ts: TS, events: { type: 'AllBlocksCleared' } },
    'a negative rank': [TS, [], -1],
    'a float rank': [TS, [], 0.5],
    'a string rank': { ts: TS, events: [], data_parallel_rank: '0' },
  };
  for (const [name, value] of Object.entries(cases)) {
    it(name, () => {
      throwsCode(() => read(value), 'INVALID_ARGUMENT');
    });
  }

  it('bytes that are not msgpack, refused before the decoder sees them', () => {
    const extra = new Uint8Array([...pack([TS, []]), 0x00]);
    const notMsgpack = [[0xc1], [], [0x92, 0xcb], [...extra]];
    let decoded = 0;
    const spy = (b: Uint8Array) => {
      decoded++;
      return msgpack(b);
    };
    for (const bytes of notMsgpack) {
      const error = throwsCode(
        () => decodeKvEventBatch(new Uint8Array(bytes), spy),
        'INVALID_ARGUMENT',
      );
      expect(error.message).toContain('is not valid msgpack');
    }
    expect(decoded).toBe(0);
  });

  it('a decoder that throws: its error is the cause', () => {
    const broken = () => {
      throw new RangeError('no');
    };
    const error = throwsCode(() => decodeKvEventBatch(pack([TS, []]), broken), 'INVALID_ARGUMENT');
    expect(error.cause).toBeInstanceOf(RangeError);
  });

  it('more events than maxEvents, a payload over maxPayloadBytes, a bad limit', () => {
    const value = [TS, [['AllBlocksCleared'], ['AllBlocksCleared']]];
    expect(read(value, { maxEvents: 2 }).events).toHaveLength(2);
    throwsCode(() => read(value, { maxEvents: 1 }), 'INVALID_ARGUMENT');
    const payload = pack(value);
    let decoded = false;
    const spy = (b: Uint8Array) => {
      decoded = true;
      return msgpack(b);
    };
    const limits = { maxPayloadBytes: payload.length - 1 };
    throwsCode(() => decodeKvEventBatch(payload, spy, limits), 'INVALID_ARGUMENT');
    expect(decoded).toBe(false);
    throwsCode(() => read(value, { maxEvents: -1 }), 'INVALID_ARGUMENT');
    throwsCode(() => read(value, { maxEvents: 1.5 }), 'INVALID_ARGUMENT');
    throwsCode(() => read(value, { bogus: 1 } as never), 'INVALID_ARGUMENT');
  });

  it('a payload that is not bytes, a decode that is not a function', () => {
    throwsCode(() => decodeKvEventBatch('abc' as never, msgpack), 'INVALID_ARGUMENT');
    throwsCode(() => decodeKvEventBatch(pack([TS, []]), undefined as never), 'INVALID_ARGUMENT');
  });
});

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

const UINT64 = 2n ** 64n;

/** One way an engine may put `hash` on the wire. */
const wireHash = (hash: bigint): fc.Arbitrary<unknown> =>
  fc
    .constantFrom('bigint', 'number', 'signed', 'bytes8', 'digest')
    .chain((form): fc.Arbitrary<unknown> => {
      if (form === 'number' && hash <= BigInt(Number.MAX_SAFE_INTEGER))
        return fc.constant(Number(hash));
      if (form === 'signed' && hash >= UINT64 / 2n) return fc.constant(hash - UINT64);
      if (form === 'bytes8' || form === 'digest') {
        const low = new Uint8Array(8);
        new DataView(low.buffer).setBigUint64(0, hash, false);
        if (form === 'bytes8') return fc.constant(low);
        return fc.uint8Array({ minLength: 8, maxLength: 8 }).map((high) => {
          const d = new Uint8Array(16);
          d.set(high);
          d.set(low, 8);
          return d;
        });
      }
      return fc.constant(hash);
    });

const hash64 = fc.bigInt({ min: 0n, max: UINT64 - 1n });
const optional = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: undefined });
const name = fc.string({ maxLength: 8 });

interface Case {
  readonly model: EngineEvent;
  readonly wire: unknown;
}

/** Positional fields, cut after a random count once the rest are all null. */
function positional(fields: unknown[]): fc.Arbitrary<unknown[]> {
  let last = fields.length - 1;
  while (last > 0 && (fields[last] === null || fields[last] === undefined)) last--;
  return fc.integer({ min: last + 1, max: fields.length }).map((n) => fields.slice(0, n));
}

/** A map event, with each null field either present as null or left out. */
function tagged(type: string, fields: Record<string, unknown>): fc.Arbitrary<unknown> {
  const keys = Object.keys(fields);
  return fc.array(fc.boolean(), { minLength: keys.length, maxLength: keys.length }).map((keep) => {
    const out: Record<string, unknown> = { type };
    keys.forEach((k, i) => {
      if (fields[k] !== null || keep[i]) out[k] = fields[k];
    });
    return out;
  });
}

const storedCase: fc.Arbitrary<Case> = fc
  .record({
    blocks: fc.integer({ min: 0, max: 4 }),
    blockSize: fc.integer({ min: 1, max: 4 }),
    parent: optional(hash64),
    loraName: optional(name),
    medium: optional(fc.constantFrom('GPU', 'CPU', 'disk')),
    groupIdx: optional(fc.nat(8)),
    specKind: optional(fc.constantFrom('full_attention', 'sliding_window', 'mamba')),
    extraKeys: fc.boolean(),
    asMap: fc.boolean(),
    viaMetadata: fc.boolean(),
  })
  .chain((r) =>
    fc
      .record({
        hashes: fc.array(hash64, { minLength: r.blocks, maxLength: r.blocks }),
        tokenIds: fc.array(fc.nat({ max: 0xffff_ffff }), {
          minLength: r.blocks * r.blockSize,
          maxLength: r.blocks * r.blockSize,
        }),
      })
      .chain(({ hashes, tokenIds }) => {
        const { parent, blockSize, loraName, medium, groupIdx, specKind, extraKeys } = r;
        const model = stored({
          ...{ parent, blockSize, loraName, medium, groupIdx, specKind, extraKeys },
          hashes,
          tokenIds,
        });
        const wired = fc.tuple(
          fc.tuple(...hashes.map(wireHash)),
          r.parent === undefined ? fc.constant(null) : wireHash(r.parent),
        );
        return wired.chain(([wireHashes, wireParent]) => {
          const metadata = r.asMap && r.viaMetadata && r.extraKeys;
          const extra = r.extraKeys && !metadata ? [null, ['lora', 'salt']] : null;
          const values = {
            block_hashes: wireHashes,
            parent_block_hash: wireParent,
            token_ids: tokenIds,
            block_size: r.blockSize,
            lora_id: null,
            medium: r.medium ?? null,
            lora_name: r.loraName ?? null,
            extra_keys: extra,
            group_idx: r.groupIdx ?? null,
            kv_cache_spec_kind: r.specKind ?? null,
            kv_cache_spec_sliding_window: null,
          };
          const wire = r.asMap
            ? tagged(
                'BlockStored',
                metadata ? { ...values, metadata: { cache_salt: 's' } } : values,
              )
            : positional(['BlockStored', ...Object.values(values)]);
          return wire.map((w) => ({ model, wire: w }));
        });
      }),
  );

const removedCase: fc.Arbitrary<Case> = fc
  .record({
    hashes: fc.array(hash64, { maxLength: 4 }),
    medium: optional(fc.constantFrom('GPU', 'CPU')),
    groupIdx: optional(fc.nat(8)),
    asMap: fc.boolean(),
  })
  .chain((r) =>
    fc.tuple(...r.hashes.map(wireHash)).chain((wireHashes) => {
      const model: EngineEvent = {
        type: 'removed',
        hashes: r.hashes,
        medium: r.medium,
        groupIdx: r.groupIdx,
      };
      const values = {
        block_hashes: wireHashes,
        medium: r.medium ?? null,
        group_idx: r.groupIdx ?? null,
      };
      const wire = r.asMap
        ? tagged('BlockRemoved', values)
        : positional(['BlockRemoved', ...Object.values(values)]);
      return wire.map((w) => ({ model, wire: w }));
    }),
  );

const clearedCase: fc.Arbitrary<Case> = fc.boolean().map((asMap) => ({
  model: { type: 'cleared' },
  wire: asMap ? { type: 'AllBlocksCleared' } : ['AllBlocksCleared'],
}));

describe('decodeKvEventBatch properties', () => {
  it('valid events in either layout, any trailing fields left out, decode to the model', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(storedCase, removedCase, clearedCase), { maxLength: 6 }),
        fc.double({ min: 0, max: 1e10, noNaN: true }), // epoch seconds (msgpack writes −0 as 0)
        optional(fc.nat(64)),
        fc.boolean(),
        (cases, ts, rank, asMap) => {
          const events = cases.map((c) => c.wire);
          const value = asMap
            ? { ts, events, ...(rank === undefined ? {} : { data_parallel_rank: rank }) }
            : rank === undefined
              ? [ts, events]
              : [ts, events, rank];
          const batch = read(value);
          expect(batch.skipped).toBe(0);
          expect(batch.ts).toBe(ts);
          expect(batch.dataParallelRank).toBe(rank);
          expect(batch.events).toEqual(cases.map((c) => c.model));
        },
      ),
      runs(300, 2000),
    );
  });

  /** Anything but an INVALID_ARGUMENT FleetRouteError fails the property. */
  function expectOnlyInvalidArgument(run: () => unknown): void {
    try {
      run();
    } catch (error) {
      expect(FleetRouteError.is(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
    }
  }

  it('random bytes return a batch or throw INVALID_ARGUMENT, nothing else', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 256 }), (bytes) => {
        expectOnlyInvalidArgument(() => decodeKvEventBatch(bytes, msgpack));
      }),
      runs(1000, 10_000),
    );
  });

  it('any encoded value returns a batch or throws INVALID_ARGUMENT, nothing else', () => {
    fc.assert(
      fc.property(fc.anything({ withBigInt: true, withTypedArray: true }), (value) => {
        expectOnlyInvalidArgument(() => read(value));
      }),
      runs(500, 5000),
    );
  });

  it('any values in the events list are each decoded or skipped, never thrown', () => {
    // msgpack's decoder rejects a `__proto__` key outright (the whole payload); leave it out here.
    const key = fc.string().filter((k) => k !== '__proto__');
    const value = fc.anything({ key, withBigInt: true, withTypedArray: true });
    const eventLike = fc.oneof(
      value,
      fc
        .tuple(
          fc.constantFrom('BlockStored', 'BlockRemoved', 'AllBlocksCleared'),
          fc.array(value, { maxLength: 12 }),
        )
        .map(([tag, rest]) => [tag, ...rest]),
    );
    fc.assert(
      fc.property(fc.array(eventLike, { maxLength: 8 }), (events) => {
        const batch = read([TS, events]);
        expect(batch.events.length + batch.skipped).toBe(events.length);
      }),
      runs(500, 5000),
    );
  });
});
