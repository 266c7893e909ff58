/**
 * KV-event payloads built to exhaust a decoder's memory: each is a few megabytes of msgpack that
 * a decoder building every value it reads turns into hundreds of megabytes, or gigabytes.
 * Written byte by byte (no encoder could be asked for most of them).
 */

const MIB = 1024 * 1024;

/** A growable byte buffer with msgpack header writers. */
class Bytes {
  #buf: Uint8Array;
  #len = 0;

  constructor(capacity: number) {
    this.#buf = new Uint8Array(capacity);
  }

  byte(...values: number[]): this {
    this.#room(values.length);
    for (const v of values) this.#buf[this.#len++] = v;
    return this;
  }

  /** `count` copies of `pattern`. */
  repeat(pattern: readonly number[], count: number): this {
    this.#room(pattern.length * count);
    for (let i = 0; i < count; i++) for (const v of pattern) this.#buf[this.#len++] = v;
    return this;
  }

  /** An array32 header: `dd` and a big-endian count. */
  array32(count: number): this {
    return this.byte(
      0xdd,
      (count >>> 24) & 255,
      (count >>> 16) & 255,
      (count >>> 8) & 255,
      count & 255,
    );
  }

  /** A fixstr (under 32 bytes). */
  str(text: string): this {
    const utf8 = new TextEncoder().encode(text);
    return this.byte(0xa0 | utf8.length, ...utf8);
  }

  get length(): number {
    return this.#len;
  }

  bytes(): Uint8Array {
    return this.#buf.subarray(0, this.#len);
  }

  #room(n: number): void {
    if (this.#len + n <= this.#buf.length) return;
    const next = new Uint8Array(Math.max(this.#buf.length * 2, this.#len + n));
    next.set(this.#buf.subarray(0, this.#len));
    this.#buf = next;
  }
}

/** `[0, [[...fill...]]]`: one event (an array) holding `count` copies of `pattern`. */
function oneEventOf(pattern: readonly number[], size: number): Uint8Array {
  const count = Math.floor((size - 8) / pattern.length);
  return new Bytes(size).byte(0x92, 0x00, 0x91).array32(count).repeat(pattern, count).bytes();
}

/**
 * The hostile payloads, by name, each about `size` bytes (2 MiB unless given). Each is refused
 * by a decoder that bounds what it builds, and kills or nearly kills a process with a 128 MB
 * heap that decodes it with `@msgpack/msgpack` unbounded.
 */
export const HOSTILE_PAYLOADS = {
  /** Arrays nested two million deep: `[[[[…]]]]`, never closed. */
  'nested arrays': (size = 2 * MIB) => new Uint8Array(size).fill(0x91),
  /** Arrays of 65,535 declared elements nested 700,000 deep: each level allocates 512 KiB. */
  'nested declared-large arrays': (size = 2 * MIB) =>
    new Bytes(size).repeat([0xdc, 0xff, 0xff], Math.floor(size / 3)).bytes(),
  /** Maps nested a million deep, each with one key: `{a: {a: {…}}}`, closed by a nil. */
  'nested maps': (size = 2 * MIB) => {
    const levels = Math.floor((size - 1) / 3);
    return new Bytes(size).repeat([0x81, 0xa1, 0x61], levels).byte(0xc0).bytes();
  },
  /** Two million empty maps in one event: 1 byte each on the wire, an object each in memory. */
  'empty maps': (size = 2 * MIB) => oneEventOf([0x80], size),
  /** Two million empty arrays in one event. */
  'empty arrays': (size = 2 * MIB) => oneEventOf([0x90], size),
  /** A million empty byte strings in one event: 2 bytes each, a typed-array view each. */
  'empty byte strings': (size = 2 * MIB) => oneEventOf([0xc4, 0x00], size),
  /** An array declaring 4 billion elements, holding none. */
  'an array declaring 4 billion elements': () =>
    new Bytes(16).byte(0x92, 0x00).array32(0xffff_ffff).bytes(),
  /** A string declaring 4 GiB, holding 8 bytes. */
  'a string declaring 4 GiB': () =>
    new Bytes(16).byte(0x92, 0x00, 0xdb, 0xff, 0xff, 0xff, 0xff).repeat([0x61], 8).bytes(),
  /** A million `AllBlocksCleared` events (18 MB), against the default `maxEvents` of 65,536. */
  'a million events': () => millionEvents(1_000_000),
} as const satisfies Record<string, (size?: number) => Uint8Array>;

export type HostilePayload = keyof typeof HOSTILE_PAYLOADS;

/** `[0, [['AllBlocksCleared'] × count]]`. */
export function millionEvents(count: number): Uint8Array {
  const b = new Bytes(count * 18 + 16).byte(0x92, 0x00).array32(count);
  const event = new Bytes(18).byte(0x91).str('AllBlocksCleared').bytes();
  return b.repeat([...event], count).bytes();
}
