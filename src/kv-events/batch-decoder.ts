/**
 * `decodeKvEventBatch`: turns the msgpack payload of one vLLM or SGLang KV-event message into
 * plain, validated events. Both engines' layouts are read: a positional batch
 * `[ts, events, dp_rank?]` or a map `{ts, events, data_parallel_rank}` (SGLang names the rank
 * `attn_dp_rank`), and each event either a positional array `[tag, ...fields]` or a map tagged
 * by `type`, with the fields in the engines' declaration order and trailing fields optional.
 *
 * @module
 */
import { FleetRouteError, invalidArgument } from '../core/errors.js';
import { integer, OptionTable } from '../core/option-table.js';
import { describe as describeValue } from '../core/options.js';
import { scanKvPayload } from './payload-scan.js';

/**
 * Bounds on an untrusted KV-event payload. A payload or batch over a bound throws; an event
 * over a per-event bound is skipped and counted.
 *
 * What a payload may cost is bounded before anything is built from it: the payload's bytes are
 * walked first (iteratively, reading headers only), and a payload is refused when it nests
 * arrays and maps more than 16 deep, declares more values than it has bytes, lists more than
 * `maxEvents` events, or holds values that would take more than 32 bytes of memory per payload
 * byte once decoded (engine batches take 4–23). A decoded payload so takes at most about 32 times
 * `maxPayloadBytes`, whatever its shape.
 *
 * @public
 */
export interface KvDecodeLimits {
  /**
   * Largest payload (and message frame) accepted, in bytes; a larger one throws before it is
   * decoded. Real batches are a few kilobytes to a few megabytes.
   * @defaultValue 67108864 (64 MiB)
   */
  readonly maxPayloadBytes: number;
  /**
   * Most events in one batch; a batch with more throws, before any event is built. An engine
   * step rarely emits more than a few hundred.
   * @defaultValue 65536
   */
  readonly maxEvents: number;
  /**
   * Most block hashes in one event; an event with more is skipped and counted.
   * @defaultValue 65536
   */
  readonly maxHashesPerEvent: number;
  /**
   * Most token ids in one `BlockStored` event; an event with more is skipped and counted.
   * @defaultValue 1048576
   */
  readonly maxTokenIdsPerEvent: number;
}

/** @internal The options of {@link KvDecodeLimits}, in the order they are checked. */
export const KV_DECODE_LIMITS = new OptionTable('kvDecodeLimits', 'KvDecodeLimits', {
  maxPayloadBytes: integer(67_108_864, 0, Number.MAX_SAFE_INTEGER),
  maxEvents: integer(65_536, 0, Number.MAX_SAFE_INTEGER),
  maxHashesPerEvent: integer(65_536, 0, Number.MAX_SAFE_INTEGER),
  maxTokenIdsPerEvent: integer(1_048_576, 0, Number.MAX_SAFE_INTEGER),
});

const DEFAULT_LIMITS: KvDecodeLimits = KV_DECODE_LIMITS.read(undefined);

/**
 * @internal Every limit resolved: the defaults for `undefined` (no table read), else the table's
 * validated read.
 */
export function resolveKvDecodeLimits(limits: Partial<KvDecodeLimits> | undefined): KvDecodeLimits {
  return limits === undefined ? DEFAULT_LIMITS : KV_DECODE_LIMITS.read(limits);
}

/**
 * One KV-cache event of an engine, validated and normalised: every hash is an unsigned 64-bit
 * `bigint`, absent or null fields are `undefined`.
 *
 * - `stored`: blocks entered the prefix cache. `tokenIds` holds the tokens of all the listed
 *   blocks, concatenated (`hashes.length × blockSize` of them); `parent` is the hash of the block
 *   before the first one, `undefined` at the start of a sequence. `extraKeys` is `true` when the
 *   blocks' hashes cover more than their tokens: any non-null entry of vLLM's `extra_keys`
 *   (multimodal items, LoRA, cache salt, prompt embeddings) or a non-empty SGLang `metadata` map
 *   (such as `cache_salt`).
 * - `removed`: blocks left the cache.
 * - `cleared`: the whole prefix cache was reset.
 *
 * @public
 */
export type EngineEvent =
  | {
      readonly type: 'stored';
      readonly hashes: readonly bigint[];
      readonly parent: bigint | undefined;
      readonly tokenIds: readonly number[];
      readonly blockSize: number;
      readonly loraName: string | undefined;
      readonly medium: string | undefined;
      readonly groupIdx: number | undefined;
      readonly specKind: string | undefined;
      readonly extraKeys: boolean;
    }
  | {
      readonly type: 'removed';
      readonly hashes: readonly bigint[];
      readonly medium: string | undefined;
      readonly groupIdx: number | undefined;
    }
  | { readonly type: 'cleared' };

/**
 * One decoded batch of engine events.
 *
 * @public
 */
export interface EngineEventBatch {
  /** The engine's timestamp of the batch (seconds since the epoch, as the engine sent it). */
  readonly ts: number;
  /** The valid events, in payload order. */
  readonly events: readonly EngineEvent[];
  /** The data-parallel rank that published the batch, when the batch names one. */
  readonly dataParallelRank: number | undefined;
  /** Events dropped: an unknown type, a malformed event, or one over a per-event limit. */
  readonly skipped: number;
}

const CLEARED: EngineEvent = Object.freeze({ type: 'cleared' });
const UINT64_END = 1n << 64n;
const INT64_MIN = -(1n << 63n);
const UINT32_MAX = 0xffff_ffff;

/**
 * Decodes the payload of one KV-event message (the third frame; see `readKvEventFrames`).
 *
 * Hashes are accepted as a safe non-negative integer `number`, a `bigint`, a negative integer
 * (SGLang's signed int64, read as its unsigned 64-bit two's complement) or bytes (1–64 of them:
 * the last 8 read big-endian, or all of them when fewer). Events of an unknown type and
 * malformed events — a wrong field type, a token id that is not a uint32, a block size that is
 * not a positive integer, a `BlockStored` whose token count is not `hashes × block_size`, an
 * event over a per-event limit — are skipped and counted in `skipped`, never thrown. Unknown
 * fields, and positional fields beyond the known ones, are ignored.
 *
 * Cost: one walk over the payload's bytes that builds nothing (see {@link KvDecodeLimits}: a
 * payload that would nest too deep, list too many events or take too much memory is refused
 * there, before `decode` is called), the `decode` call, O(payload), then one pass over the
 * decoded values with no regular expression; per event, the event object and its `hashes` array
 * are allocated (a `BlockStored` event's `tokenIds` is the decoded array itself, checked in
 * place).
 *
 * @param payload - the msgpack payload.
 * @param decode - a msgpack decoder that returns integers beyond 2^53 as `bigint` and maps as
 *   plain objects (or `Map`s): with `@msgpack/msgpack`, `(b) => decode(b, { useBigInt64: true })`.
 *   A `number` above 2^53 − 1 is not a safe integer, so a decoder that loses 64-bit precision
 *   makes such hashes malformed rather than wrong.
 * @param limits - bounds on the input; see {@link KvDecodeLimits}.
 * @returns the batch's timestamp, its valid events, its data-parallel rank and the count of
 *   events skipped.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `payload` is not a `Uint8Array`, is
 *   over `maxPayloadBytes`, is not one whole msgpack value, nests deeper than 16, or would take
 *   more than 32 bytes of memory per byte decoded; when `decode` is not a function or throws (the
 *   error is the `cause`); when the batch is neither an array nor a map, its `ts` is not a finite
 *   number, its `events` is not an array or holds more than `maxEvents`, its data-parallel rank
 *   is not a non-negative integer (or a map batch names two different ranks); or when a limit
 *   is invalid.
 *
 * @example
 * ```ts
 * import { decode } from '@msgpack/msgpack';
 * const message = readKvEventFrames(frames);
 * const batch = decodeKvEventBatch(message.payload, (b) => decode(b, { useBigInt64: true }));
 * ```
 * @public
 */
export function decodeKvEventBatch(
  payload: Uint8Array,
  decode: (bytes: Uint8Array) => unknown,
  limits?: Partial<KvDecodeLimits>,
): EngineEventBatch {
  const bounds = resolveKvDecodeLimits(limits);
  if (!(payload instanceof Uint8Array)) {
    throw invalidArgument(`kv event payload must be a Uint8Array, got ${describeValue(payload)}`);
  }
  if (payload.byteLength > bounds.maxPayloadBytes) {
    throw invalidArgument(
      `kv event payload has ${payload.byteLength} bytes, over maxPayloadBytes (${bounds.maxPayloadBytes})`,
    );
  }
  if (typeof decode !== 'function') {
    throw invalidArgument(`decode must be a function, got ${describeValue(decode)}`);
  }
  const refusal = scanKvPayload(payload, bounds.maxEvents);
  if (refusal !== undefined) throw invalidArgument(refusal.reason);
  let root: unknown;
  try {
    root = decode(payload);
  } catch (error) {
    throw new FleetRouteError('INVALID_ARGUMENT', 'kv event payload is not valid msgpack', {
      cause: error,
    });
  }

  let ts: unknown;
  let rawEvents: unknown;
  let rank: unknown;
  if (Array.isArray(root)) {
    ts = root[0];
    rawEvents = root[1];
    rank = root[2];
  } else if (isMap(root)) {
    ts = field(root, 'ts');
    rawEvents = field(root, 'events');
    rank = mapRank(root);
  } else {
    throw invalidArgument(`kv event batch must be an array or a map, got ${describeValue(root)}`);
  }
  if (typeof ts !== 'number' || !Number.isFinite(ts)) {
    throw invalidArgument(`kv event batch ts must be a finite number, got ${describeValue(ts)}`);
  }
  if (!Array.isArray(rawEvents)) {
    throw invalidArgument(
      `kv event batch events must be an array, got ${describeValue(rawEvents)}`,
    );
  }
  if (rawEvents.length > bounds.maxEvents) {
    throw invalidArgument(
      `kv event batch has ${rawEvents.length} events, over maxEvents (${bounds.maxEvents})`,
    );
  }
  const dataParallelRank = readOptionalIndex(rank);
  if (dataParallelRank === null) {
    throw invalidArgument(
      `kv event batch rank must be a non-negative integer, got ${describeValue(rank)}`,
    );
  }

  const events: EngineEvent[] = [];
  let skipped = 0;
  for (const raw of rawEvents) {
    const event = decodeEvent(raw, bounds);
    if (event === undefined) skipped++;
    else events.push(event);
  }
  return { ts, events, dataParallelRank, skipped };
}

/**
 * A map batch's rank: vLLM's `data_parallel_rank` or SGLang's `attn_dp_rank`, whichever is set
 * (absent and null are unset). @throws when both are set and differ.
 */
function mapRank(root: object): unknown {
  const vllm = field(root, 'data_parallel_rank');
  const sglang = field(root, 'attn_dp_rank');
  if (vllm === undefined || vllm === null) return sglang;
  if (sglang === undefined || sglang === null || sglang === vllm) return vllm;
  throw invalidArgument(
    `kv event batch names two ranks: data_parallel_rank ${describeValue(vllm)}, attn_dp_rank ${describeValue(sglang)}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Events. A field is read by position (array events: index 0 is the tag) or by name (map
// events); every reader returns `null` for a value of the wrong type, never throws.
// ---------------------------------------------------------------------------------------------

/** Positions of the fields in an array event, after the tag (vLLM declaration order; SGLang's
 * eight fields are the same first eight). */
const STORED_HASHES = 1;
const STORED_PARENT = 2;
const STORED_TOKENS = 3;
const STORED_BLOCK_SIZE = 4;
const STORED_LORA_ID = 5;
const STORED_MEDIUM = 6;
const STORED_LORA_NAME = 7;
const STORED_EXTRA_KEYS = 8;
const STORED_GROUP_IDX = 9;
const STORED_SPEC_KIND = 10;
const STORED_SLIDING_WINDOW = 11;
const REMOVED_HASHES = 1;
const REMOVED_MEDIUM = 2;
const REMOVED_GROUP_IDX = 3;

/** The event, or `undefined` when it is of an unknown type or malformed. */
function decodeEvent(raw: unknown, bounds: KvDecodeLimits): EngineEvent | undefined {
  let tag: unknown;
  if (Array.isArray(raw)) tag = raw[0];
  else if (isMap(raw)) tag = field(raw, 'type');
  else return undefined;
  if (tag === 'BlockStored') return decodeStored(raw, bounds);
  if (tag === 'BlockRemoved') return decodeRemoved(raw, bounds);
  if (tag === 'AllBlocksCleared') return CLEARED;
  return undefined;
}

function decodeStored(raw: unknown[] | object, bounds: KvDecodeLimits): EngineEvent | undefined {
  const hashes = readHashes(at(raw, STORED_HASHES, 'block_hashes'), bounds.maxHashesPerEvent);
  if (hashes === null) return undefined;
  const parentRaw = at(raw, STORED_PARENT, 'parent_block_hash');
  const parent = parentRaw === undefined || parentRaw === null ? undefined : toHash(parentRaw);
  if (parent === null) return undefined;
  const blockSize = at(raw, STORED_BLOCK_SIZE, 'block_size');
  if (typeof blockSize !== 'number' || !Number.isSafeInteger(blockSize) || blockSize < 1) {
    return undefined;
  }
  const tokenIds = readTokenIds(at(raw, STORED_TOKENS, 'token_ids'), bounds.maxTokenIdsPerEvent);
  if (tokenIds === null || tokenIds.length !== hashes.length * blockSize) return undefined;
  if (!isOptionalInteger(at(raw, STORED_LORA_ID, 'lora_id'))) return undefined;
  const medium = readOptionalString(at(raw, STORED_MEDIUM, 'medium'));
  const loraName = readOptionalString(at(raw, STORED_LORA_NAME, 'lora_name'));
  const extra = readExtraKeys(at(raw, STORED_EXTRA_KEYS, 'extra_keys'));
  const groupIdx = readOptionalIndex(at(raw, STORED_GROUP_IDX, 'group_idx'));
  const specKind = readOptionalString(at(raw, STORED_SPEC_KIND, 'kv_cache_spec_kind'));
  const window = at(raw, STORED_SLIDING_WINDOW, 'kv_cache_spec_sliding_window');
  const metadata = Array.isArray(raw) ? false : readMetadata(field(raw, 'metadata'));
  if (
    medium === null ||
    loraName === null ||
    extra === null ||
    groupIdx === null ||
    specKind === null ||
    !isOptionalInteger(window) ||
    metadata === null
  ) {
    return undefined;
  }
  return {
    type: 'stored',
    hashes,
    parent,
    tokenIds,
    blockSize,
    loraName,
    medium,
    groupIdx,
    specKind,
    extraKeys: extra || metadata,
  };
}

function decodeRemoved(raw: unknown[] | object, bounds: KvDecodeLimits): EngineEvent | undefined {
  const hashes = readHashes(at(raw, REMOVED_HASHES, 'block_hashes'), bounds.maxHashesPerEvent);
  const medium = readOptionalString(at(raw, REMOVED_MEDIUM, 'medium'));
  const groupIdx = readOptionalIndex(at(raw, REMOVED_GROUP_IDX, 'group_idx'));
  if (hashes === null || medium === null || groupIdx === null) return undefined;
  return { type: 'removed', hashes, medium, groupIdx };
}

/** The field at `index` of an array event, or named `name` in a map event. */
function at(raw: unknown[] | object, index: number, name: string): unknown {
  return Array.isArray(raw) ? raw[index] : field(raw, name);
}

/** A plain object (what msgpack decoders return for a map) or a `Map`. */
function isMap(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  if (value instanceof Map) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** An own entry of a map (never one inherited from the prototype). */
function field(map: object, key: string): unknown {
  if (map instanceof Map) return map.get(key);
  return Object.hasOwn(map, key) ? (map as Record<string, unknown>)[key] : undefined;
}

// ---------------------------------------------------------------------------------------------
// Field readers: `null` means malformed.
// ---------------------------------------------------------------------------------------------

function readHashes(value: unknown, max: number): bigint[] | null {
  if (!Array.isArray(value) || value.length > max) return null;
  const hashes: bigint[] = [];
  for (const item of value) {
    const hash = toHash(item);
    if (hash === null) return null;
    hashes.push(hash);
  }
  return hashes;
}

/**
 * @internal An engine block hash as an unsigned 64-bit value: integers in [−2^63, 2^64) (a
 * `number` must be a safe integer), negatives as their two's complement; bytes (1–64) by their
 * last 8 bytes, big-endian. `null` for anything else.
 */
export function toHash(value: unknown): bigint | null {
  if (typeof value === 'number') {
    if (!Number.isSafeInteger(value)) return null;
    return value >= 0 ? BigInt(value) : BigInt.asUintN(64, BigInt(value));
  }
  if (typeof value === 'bigint') {
    if (value < INT64_MIN || value >= UINT64_END) return null;
    return value >= 0n ? value : BigInt.asUintN(64, value);
  }
  if (value instanceof Uint8Array) {
    const n = value.length;
    if (n < 1 || n > 64) return null;
    // The last 8 bytes as two 32-bit halves (missing leading bytes are zero).
    let high = 0;
    let low = 0;
    for (let i = Math.max(0, n - 8); i < n; i++) {
      const fromEnd = n - 1 - i;
      if (fromEnd < 4) low += value[i]! * 2 ** (8 * fromEnd);
      else high += value[i]! * 2 ** (8 * (fromEnd - 4));
    }
    return (BigInt(high) << 32n) | BigInt(low);
  }
  return null;
}

/** The decoded array itself once every item is a uint32 `number`. */
function readTokenIds(value: unknown, max: number): number[] | null {
  if (!Array.isArray(value) || value.length > max) return null;
  for (const item of value) {
    if (typeof item !== 'number' || !Number.isInteger(item) || item < 0 || item > UINT32_MAX) {
      return null;
    }
  }
  return value as number[];
}

function readOptionalString(value: unknown): string | undefined | null {
  if (value === undefined || value === null) return undefined;
  return typeof value === 'string' ? value : null;
}

/** A non-negative safe integer (`bigint` within range too), `undefined` for absent or null. */
function readOptionalIndex(value: unknown): number | undefined | null {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'bigint') {
    return value >= 0n && value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : null;
  }
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 ? value : null;
}

/** Absent, null, an integer `number` or a `bigint` (fields read for their type only). */
function isOptionalInteger(value: unknown): boolean {
  return (
    value === undefined ||
    value === null ||
    typeof value === 'bigint' ||
    (typeof value === 'number' && Number.isInteger(value))
  );
}

/** vLLM `extra_keys`: `true` when any per-block entry is non-null. */
function readExtraKeys(value: unknown): boolean | null {
  if (value === undefined || value === null) return false;
  if (!Array.isArray(value)) return null;
  for (const item of value) if (item !== null && item !== undefined) return true;
  return false;
}

/** SGLang `metadata`: `true` when the map holds any non-null value. */
function readMetadata(value: unknown): boolean | null {
  if (value === undefined || value === null) return false;
  if (!isMap(value)) return null;
  if (value instanceof Map) {
    for (const item of value.values()) if (item !== null && item !== undefined) return true;
    return false;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    if (item !== null && item !== undefined) return true;
  }
  return false;
}
