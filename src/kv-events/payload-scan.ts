/**
 * `scanKvPayload`: a walk over the msgpack bytes of one KV-event payload, before any value is
 * built from them, that refuses a payload a decoder could not build within bounds.
 *
 * A msgpack decoder builds every value it reads, and `@msgpack/msgpack` bounds only the length
 * of each string, byte string, array and map (`maxStrLength`, `maxArrayLength`, …): not how deep
 * they nest, not how many there are, not which array is the batch's events. Its arrays are
 * allocated at their declared length before their elements are read, and each level of nesting
 * keeps a frame of its own. So a payload of a few megabytes could take gigabytes: arrays nested
 * a million deep, arrays declaring 65,535 elements each nested inside the last, two million empty
 * maps (one byte each on the wire, one object each in memory). The walk reads only headers and
 * lengths, iteratively, in O(1) memory and one pass, and refuses such a payload first.
 *
 * @module
 * @internal
 */

/**
 * @internal Deepest nesting of arrays and maps accepted. A batch nests five deep — the batch, its
 * events, an event, a field (vLLM's `extra_keys`), one block's extra keys — and the rest is room.
 */
export const MAX_DEPTH = 16;

/**
 * @internal Memory a payload's decoded values may take, in bytes per payload byte, by the walk's
 * estimate (an upper one for V8 on 64-bit), counting the events and hashes the batch decoder
 * builds from them. Engine batches take 4–15: token ids and 64-bit hashes cost little more than
 * their bytes, and batches of one-block events (vLLM removes blocks one event each) cost the
 * most; hashes written as small integers or 8-byte strings take up to 23. A payload built to
 * multiply its size — a byte per empty array or map, two per byte string — takes 50 to 60.
 */
export const MEMORY_PER_BYTE = 32;

/** Memory any payload may take, whatever its size: room for a small batch's fixed costs. */
const MEMORY_FLOOR = 64 * 1024;

/** @internal Why a payload is refused. */
export interface KvPayloadRefusal {
  /** Whether the bytes are not one whole msgpack value (rather than one over a bound). */
  readonly malformed: boolean;
  readonly reason: string;
}

// The estimate, in bytes of heap per decoded value (V8, 64-bit, no pointer compression).
/** Every value: its slot in the array or map holding it. */
const SLOT = 8;
const ARRAY = 48;
/** A map's object, and each entry (a key may also add a hidden class). */
const MAP = 56;
const MAP_ENTRY = 64;
/** A string: its header, and up to 2 bytes per UTF-8 byte (a two-byte string). */
const STRING = 24;
/** A byte string: a typed-array view over the payload. */
const BYTES = 96;
/** An extension value: its object and a view of its data. */
const EXT = 160;
/** A number of 4 or 8 bytes: a heap number or a `bigint`. */
const WIDE_NUMBER = 24;
/** What the decoder builds per event (the event object) and per hash (a `bigint` and its slot). */
const EVENT_OUT = 104;
const HASHES_OUT = 48;
const HASH_OUT = 32;

// What each head byte starts (msgpack's formats), and the size of what follows it.
const SCALAR = 0; // SIZE: payload bytes
const STR = 1; // SIZE: bytes of the length
const BIN = 2; // SIZE: bytes of the length
const EXT_VAR = 3; // SIZE: bytes of the length (then a type byte)
const EXT_FIXED = 4; // SIZE: data bytes (after a type byte)
const ARRAY_HEAD = 5; // SIZE: bytes of the count (0: in the head byte)
const MAP_HEAD = 6; // SIZE: bytes of the count (0: in the head byte)
const FIXSTR = 7;
const RESERVED = 8;

const KIND = new Uint8Array(256);
const SIZE = new Uint8Array(256);
/** Head bytes `from`…`to` start a `kind` with `size`. */
function format(from: number, to: number, kind: number, size: number): void {
  KIND.fill(kind, from, to + 1);
  SIZE.fill(size, from, to + 1);
}
format(0x00, 0x7f, SCALAR, 0); // positive fixint
format(0x80, 0x8f, MAP_HEAD, 0);
format(0x90, 0x9f, ARRAY_HEAD, 0);
format(0xa0, 0xbf, FIXSTR, 0);
format(0xc0, 0xc0, SCALAR, 0); // nil
format(0xc1, 0xc1, RESERVED, 0);
format(0xc2, 0xc3, SCALAR, 0); // false, true
format(0xc4, 0xc4, BIN, 1);
format(0xc5, 0xc5, BIN, 2);
format(0xc6, 0xc6, BIN, 4);
format(0xc7, 0xc7, EXT_VAR, 1);
format(0xc8, 0xc8, EXT_VAR, 2);
format(0xc9, 0xc9, EXT_VAR, 4);
format(0xca, 0xca, SCALAR, 4); // float 32
format(0xcb, 0xcb, SCALAR, 8); // float 64
format(0xcc, 0xcc, SCALAR, 1); // uint 8, 16, 32, 64
format(0xcd, 0xcd, SCALAR, 2);
format(0xce, 0xce, SCALAR, 4);
format(0xcf, 0xcf, SCALAR, 8);
format(0xd0, 0xd0, SCALAR, 1); // int 8, 16, 32, 64
format(0xd1, 0xd1, SCALAR, 2);
format(0xd2, 0xd2, SCALAR, 4);
format(0xd3, 0xd3, SCALAR, 8);
format(0xd4, 0xd4, EXT_FIXED, 1);
format(0xd5, 0xd5, EXT_FIXED, 2);
format(0xd6, 0xd6, EXT_FIXED, 4);
format(0xd7, 0xd7, EXT_FIXED, 8);
format(0xd8, 0xd8, EXT_FIXED, 16);
format(0xd9, 0xd9, STR, 1);
format(0xda, 0xda, STR, 2);
format(0xdb, 0xdb, STR, 4);
format(0xdc, 0xdc, ARRAY_HEAD, 2);
format(0xdd, 0xdd, ARRAY_HEAD, 4);
format(0xde, 0xde, MAP_HEAD, 2);
format(0xdf, 0xdf, MAP_HEAD, 4);
format(0xe0, 0xff, SCALAR, 0); // negative fixint
/** Per head byte: the bytes a scalar takes, head included; 0 for anything else. */
const SCALAR_STEP = new Uint8Array(256);
for (let head = 0; head < 256; head++)
  if (KIND[head] === SCALAR) SCALAR_STEP[head] = 1 + SIZE[head]!;

// Where a value sits in a batch: the walk tracks the events list, each event and its hashes.
const OTHER = 0;
const ROOT = 1;
const EVENTS = 2;
const EVENT = 3;
const HASHES = 4;
/** A map key. */
const KEY = 5;

const EVENTS_KEY = new TextEncoder().encode('events');
const HASHES_KEY = new TextEncoder().encode('block_hashes');

/**
 * @internal Walks `bytes` as one msgpack value, reading headers and lengths only, and says why
 * it must not be decoded: it is not one whole msgpack value (truncated, a container declaring
 * more values than bytes remain, a reserved byte, bytes after the value), it nests deeper than
 * {@link MAX_DEPTH}, its batch's events list (`[ts, events, …]` or `{events}`) holds more than
 * `maxEvents`, or its decoded values would take more than {@link MEMORY_PER_BYTE} bytes of memory
 * per payload byte (beyond a 64 KiB floor).
 *
 * @returns `undefined` when the payload may be decoded, else the refusal.
 * Cost: O(bytes.length) time, one pass, no recursion; O(1) memory (four arrays of
 * {@link MAX_DEPTH} + 1 numbers).
 */
export function scanKvPayload(bytes: Uint8Array, maxEvents: number): KvPayloadRefusal | undefined {
  return new PayloadWalk(bytes, maxEvents).run();
}

/** One walk's state: the position, the open containers and the estimate so far. */
class PayloadWalk {
  readonly #bytes: Uint8Array;
  readonly #maxEvents: number;
  readonly #budget: number;
  /** Per open container (index = depth, 1 for the outermost): values held and still to read. */
  readonly #count = new Float64Array(MAX_DEPTH + 1);
  readonly #left = new Float64Array(MAX_DEPTH + 1);
  /** Per open container: its place in the batch, and 1 for a map. */
  readonly #role = new Uint8Array(MAX_DEPTH + 1);
  readonly #isMap = new Uint8Array(MAX_DEPTH + 1);
  #pos = 0;
  #depth = 0;
  #cost = 0;
  /** The place of the value after the map key just read. */
  #keyRole = OTHER;

  constructor(bytes: Uint8Array, maxEvents: number) {
    this.#bytes = bytes;
    this.#maxEvents = maxEvents;
    this.#budget = MEMORY_FLOOR + MEMORY_PER_BYTE * bytes.length;
  }

  run(): KvPayloadRefusal | undefined {
    const end = this.#bytes.length;
    for (;;) {
      // In an array, a run of scalars (token ids, hashes) is skipped in a tight loop.
      const inArray = this.#depth > 0 && this.#isMap[this.#depth] === 0;
      const refusal = inArray ? this.#scalars() : this.#value(this.#roleOfNext());
      if (refusal !== undefined) return refusal;
      if (this.#cost > this.#budget) {
        return bound(
          `kv event payload would take over ${this.#budget} bytes of memory once decoded ` +
            `(${MEMORY_PER_BYTE} per payload byte): refused before decoding`,
        );
      }
      let depth = this.#depth;
      while (depth > 0 && this.#left[depth] === 0) depth--;
      this.#depth = depth;
      if (depth === 0) break;
    }
    if (this.#pos !== end) return malformed(`${end - this.#pos} bytes follow the batch`);
    return undefined;
  }

  /**
   * In the array at the top: skips the scalars that come next, then reads one more value (a
   * container, a string) when the array holds more.
   */
  #scalars(): KvPayloadRefusal | undefined {
    const bytes = this.#bytes;
    const end = bytes.length;
    const depth = this.#depth;
    const perValue = SLOT + (this.#role[depth] === HASHES ? HASH_OUT : 0);
    let pos = this.#pos;
    let left = this.#left[depth]!;
    let cost = 0;
    while (left > 0 && pos < end) {
      const step = SCALAR_STEP[bytes[pos]!]!;
      if (step === 0) break;
      if (step > end - pos) return truncated(pos + 1, step - 1, end);
      pos += step;
      left--;
      cost += step >= 5 ? perValue + WIDE_NUMBER : perValue;
    }
    this.#pos = pos;
    this.#left[depth] = left;
    this.#cost += cost;
    return left > 0 ? this.#value(this.#roleOfNext()) : undefined;
  }

  /** The place in the batch of the next value, counting it read in its container. */
  #roleOfNext(): number {
    const depth = this.#depth;
    if (depth === 0) return ROOT;
    const index = this.#count[depth]! - this.#left[depth]!;
    this.#left[depth]!--;
    const parent = this.#role[depth]!;
    if (this.#isMap[depth] === 1) {
      if (index % 2 === 0) return KEY;
      const role = this.#keyRole;
      this.#keyRole = OTHER;
      return role;
    }
    if (parent === ROOT) return index === 1 ? EVENTS : OTHER;
    if (parent === EVENTS) return EVENT;
    if (parent === EVENT) return index === 1 ? HASHES : OTHER;
    return OTHER;
  }

  /** Reads one value's header (and skips a leaf's bytes); opens a container. */
  #value(role: number): KvPayloadRefusal | undefined {
    const bytes = this.#bytes;
    const end = bytes.length;
    if (this.#pos >= end) return malformed(`it ends inside a value at byte ${end}`);
    const head = bytes[this.#pos++]!;
    const kind = KIND[head]!;
    const size = SIZE[head]!;
    const hash = this.#role[this.#depth] === HASHES ? HASH_OUT : 0;
    this.#cost += SLOT;
    if (role === KEY) this.#keyRole = OTHER;
    switch (kind) {
      case SCALAR:
        if (size > end - this.#pos) return truncated(this.#pos, size, end);
        this.#pos += size;
        this.#cost += (size >= 4 ? WIDE_NUMBER : 0) + hash;
        return undefined;
      case FIXSTR:
        return this.#string(head & 0x1f, role);
      case STR: {
        const length = this.#length(size);
        return length < 0 ? truncated(this.#pos, size, end) : this.#string(length, role);
      }
      case BIN:
      case EXT_VAR:
      case EXT_FIXED: {
        const length = kind === EXT_FIXED ? size : this.#length(size);
        const extra = kind === BIN ? 0 : 1; // an extension's type byte
        if (length < 0 || length + extra > end - this.#pos)
          return truncated(this.#pos, Math.max(length, 0) + extra, end);
        this.#pos += length + extra;
        this.#cost += (kind === BIN ? BYTES : EXT) + hash;
        return undefined;
      }
      case ARRAY_HEAD:
      case MAP_HEAD: {
        const count = size === 0 ? head & 0x0f : this.#length(size);
        if (count < 0) return truncated(this.#pos, size, end);
        return this.#open(kind === MAP_HEAD, count, role);
      }
      default:
        return malformed(`byte ${this.#pos - 1} is 0x${head.toString(16)}, which msgpack reserves`);
    }
  }

  /** A string of `length` bytes at the position; a map key may name the events or the hashes. */
  #string(length: number, role: number): KvPayloadRefusal | undefined {
    const bytes = this.#bytes;
    const at = this.#pos;
    if (length > bytes.length - at) return truncated(at, length, bytes.length);
    if (role === KEY) {
      const parent = this.#role[this.#depth];
      if (parent === ROOT && equals(bytes, at, length, EVENTS_KEY)) this.#keyRole = EVENTS;
      else if (parent === EVENT && equals(bytes, at, length, HASHES_KEY)) this.#keyRole = HASHES;
    }
    this.#pos = at + length;
    this.#cost += STRING + 2 * length;
    return undefined;
  }

  /** An array or a map of `count` entries at `role`: checked, costed, opened when not empty. */
  #open(isMap: boolean, count: number, role: number): KvPayloadRefusal | undefined {
    const values = isMap ? 2 * count : count;
    const left = this.#bytes.length - this.#pos;
    // Every value takes at least a byte: a count over the bytes left is a lie, refused before
    // anything trusts it.
    if (values > left) {
      return malformed(
        `an ${isMap ? 'map' : 'array'} at byte ${this.#pos} declares ${values} values, with ${left} bytes left`,
      );
    }
    if (role === EVENTS && !isMap && count > this.#maxEvents) {
      return bound(`kv event batch has ${count} events, over maxEvents (${this.#maxEvents})`);
    }
    this.#cost += isMap ? MAP + MAP_ENTRY * count : ARRAY;
    if (role === EVENT) this.#cost += EVENT_OUT;
    if (role === HASHES) this.#cost += HASHES_OUT;
    if (values === 0) return undefined;
    if (this.#depth === MAX_DEPTH) {
      return bound(`kv event payload nests arrays and maps deeper than ${MAX_DEPTH}`);
    }
    const depth = ++this.#depth;
    this.#count[depth] = values;
    this.#left[depth] = values;
    this.#role[depth] = role === KEY ? OTHER : role;
    this.#isMap[depth] = isMap ? 1 : 0;
    return undefined;
  }

  /** A big-endian length of `width` bytes at the position (consumed), or −1 past the end. */
  #length(width: number): number {
    const bytes = this.#bytes;
    if (width > bytes.length - this.#pos) return -1;
    let n = 0;
    for (let i = 0; i < width; i++) n = n * 256 + bytes[this.#pos++]!;
    return n;
  }
}

function equals(bytes: Uint8Array, at: number, length: number, expected: Uint8Array): boolean {
  if (length !== expected.length) return false;
  for (let i = 0; i < length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}

function malformed(why: string): KvPayloadRefusal {
  return { malformed: true, reason: `kv event payload is not valid msgpack: ${why}` };
}

function truncated(at: number, needed: number, end: number): KvPayloadRefusal {
  return malformed(`a value at byte ${at} needs ${needed} more bytes, ${end - at} are left`);
}

function bound(reason: string): KvPayloadRefusal {
  return { malformed: false, reason };
}
