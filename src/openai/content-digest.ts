/**
 * The digest of a JSON value: what a content part the routing text does not carry as text (an
 * image, an audio clip, a file, a tool list) contributes in its place.
 *
 * @module
 * @internal
 */
import { blockHasher } from '../core/block-hasher.js';
import { invalidArgument } from '../core/errors.js';

/** Bytes hashed per xxh64 call; each block's hash seeds the next block's. */
const BLOCK_BYTES = 65_536;
/** Characters staged before they are encoded into the block. */
const STAGE_CHARS = 16_384;
/** Longest piece of a string escaped at once, so a huge string is never copied whole. */
const SLICE_CHARS = 16_384;

const encoder = new TextEncoder();

/**
 * The canonical JSON of a value, encoded as UTF-8 and hashed block by block: block `k` holds the
 * most whole characters that fit in {@link BLOCK_BYTES} after block `k − 1`, and is hashed with
 * xxh64 seeded with block `k − 1`'s hash (seed 0 for the first). The blocks depend only on the
 * bytes, so the digest is a function of the canonical JSON alone. Memory: one block, whatever
 * the value's size; the WebAssembly memory never holds more than one block either.
 */
class DigestSink {
  readonly #block = new Uint8Array(BLOCK_BYTES);
  #used = 0;
  #staged = '';
  #hi = 0;
  #lo = 0;

  begin(): void {
    this.#used = 0;
    this.#staged = '';
    this.#hi = 0;
    this.#lo = 0;
  }

  write(piece: string): void {
    this.#staged += piece;
    if (this.#staged.length >= STAGE_CHARS) this.#encode();
  }

  /** @returns the digest as 16 hex digits. */
  end(): string {
    this.#encode();
    this.#hashBlock();
    return hex8(this.#hi) + hex8(this.#lo);
  }

  #encode(): void {
    let rest = this.#staged;
    this.#staged = '';
    for (;;) {
      const { read, written } = encoder.encodeInto(rest, this.#block.subarray(this.#used));
      this.#used += written;
      if (read === rest.length) return;
      // The next character does not fit: the block is complete.
      this.#hashBlock();
      rest = rest.slice(read);
    }
  }

  #hashBlock(): void {
    const h = blockHasher().xxh64(this.#block.subarray(0, this.#used), this.#hi, this.#lo);
    this.#hi = Number(h >> 32n);
    this.#lo = Number(h & 0xffff_ffffn);
    this.#used = 0;
  }
}

function hex8(n: number): string {
  return (n >>> 0).toString(16).padStart(8, '0');
}

/** One open array or object of the walk. */
interface Frame {
  readonly node: Readonly<Record<string, unknown>> | readonly unknown[];
  /** The object's keys, sorted (`undefined` for an array). */
  readonly keys: readonly string[] | undefined;
  readonly length: number;
  index: number;
}

const sink = new DigestSink();

/**
 * @internal The digest of `value`'s canonical JSON, as 16 hex digits: object keys sorted by
 * UTF-16 code units, no white space, strings escaped as `JSON.stringify` escapes them (so a lone
 * surrogate is written `\udXXX` and two different strings never encode alike), numbers as
 * `JSON.stringify` writes them. As in JSON, an `undefined`, function or symbol is `null` in an
 * array and left out of an object; a bigint is written as its digits.
 *
 * Two values with different canonical JSON get different digests (up to xxh64 collisions, one
 * in 2⁶⁴ per pair); the same value with its keys in another order gets the same one.
 *
 * @param field - names the value in the error.
 * @returns the digest.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `field` when the value contains
 *   itself (only a caller's own object can: parsed JSON never does).
 *
 * Cost: time linear in the size of the canonical JSON; the walk is iterative, so any depth of
 * nesting is walked without recursion; memory is one 64 KiB block and one frame per open array or
 * object. A string is escaped 16 K characters at a time, never copied whole.
 */
export function contentDigest(value: unknown, field: string): string {
  sink.begin();
  const stack: Frame[] = [];
  const open = new Set<object>();
  writeValue(value, stack, open, field);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.index === frame.length) {
      sink.write(frame.keys === undefined ? ']' : '}');
      stack.pop();
      open.delete(frame.node);
      continue;
    }
    const i = frame.index++;
    if (i > 0) sink.write(',');
    if (frame.keys === undefined) {
      writeValue((frame.node as readonly unknown[])[i], stack, open, field);
    } else {
      const key = frame.keys[i]!;
      writeString(key);
      sink.write(':');
      writeValue((frame.node as Readonly<Record<string, unknown>>)[key], stack, open, field);
    }
  }
  return sink.end();
}

/** Writes a scalar, or opens an array or object (pushing its frame). */
function writeValue(value: unknown, stack: Frame[], open: Set<object>, field: string): void {
  switch (typeof value) {
    case 'string':
      writeString(value);
      return;
    case 'number':
      sink.write(Number.isFinite(value) ? String(value) : 'null');
      return;
    case 'boolean':
      sink.write(value ? 'true' : 'false');
      return;
    case 'bigint':
      sink.write(value.toString());
      return;
    case 'object':
      if (value === null) break;
      if (open.has(value)) throw invalidArgument(`${field} is not JSON: it contains itself`);
      open.add(value);
      if (Array.isArray(value)) {
        sink.write('[');
        stack.push({ node: value, keys: undefined, length: value.length, index: 0 });
      } else {
        const record = value as Readonly<Record<string, unknown>>;
        const keys = Object.keys(record).filter((key) => isWritten(record[key]));
        keys.sort();
        sink.write('{');
        stack.push({ node: record, keys, length: keys.length, index: 0 });
      }
      return;
    default:
      break;
  }
  sink.write('null');
}

/** Whether an object member is written (JSON leaves out `undefined`, functions and symbols). */
function isWritten(value: unknown): boolean {
  const type = typeof value;
  return type !== 'undefined' && type !== 'function' && type !== 'symbol';
}

function writeString(value: string): void {
  if (value.length <= SLICE_CHARS) {
    sink.write(JSON.stringify(value));
    return;
  }
  sink.write('"');
  for (let from = 0; from < value.length; ) {
    let to = Math.min(from + SLICE_CHARS, value.length);
    // Keep a surrogate pair in one slice: split apart, its halves would be escaped.
    if (to < value.length && isHighSurrogate(value.charCodeAt(to - 1))) {
      const next = value.charCodeAt(to);
      if (next >= 0xdc00 && next <= 0xdfff) to--;
    }
    const escaped = JSON.stringify(value.slice(from, to));
    sink.write(escaped.slice(1, escaped.length - 1));
    from = to;
  }
  sink.write('"');
}

/** @internal Whether a UTF-16 code unit is the first half of a surrogate pair. */
export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
