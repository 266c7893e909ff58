/**
 * The digest of a JSON value: what a content part the routing text does not carry as text (an
 * image, an audio clip, a file, a tool list) contributes in its place, and what a key too long
 * to keep is kept as.
 *
 * @module
 * @internal
 */
import { blockHasher } from './block-hasher.js';
import { invalidArgument } from './errors.js';
import { isWellFormed } from './options.js';

/** Bytes hashed per xxh64 call; each block's hash seeds the next block's. */
const BLOCK_BYTES = 65_536;
/** Characters staged before they are encoded into the block. */
const STAGE_CHARS = 16_384;

const encoder = new TextEncoder();

/**
 * The canonical encoding of a value, as UTF-8, hashed block by block: block `k` holds the most
 * whole characters that fit in {@link BLOCK_BYTES} after block `k − 1`, and is hashed with xxh64
 * seeded with block `k − 1`'s hash (seed 0 for the first). The blocks depend only on the bytes,
 * so the digest is a function of the encoding alone. Memory: one block, whatever the value's
 * size; the WebAssembly memory never holds more than one block either.
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

  /** Writes `piece`; a long one is encoded as it is, never joined to others (no copy). */
  write(piece: string): void {
    if (piece.length < STAGE_CHARS) {
      this.#staged += piece;
      if (this.#staged.length >= STAGE_CHARS) this.#flushStaged();
      return;
    }
    this.#flushStaged();
    this.#encode(piece);
  }

  /** @returns the digest as 16 hex digits. */
  end(): string {
    this.#flushStaged();
    this.#hashBlock();
    return hex8(this.#hi) + hex8(this.#lo);
  }

  #flushStaged(): void {
    const staged = this.#staged;
    this.#staged = '';
    if (staged !== '') this.#encode(staged);
  }

  #encode(text: string): void {
    let rest = text;
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
 * @internal The digest of `value`'s canonical encoding, as 16 hex digits. The encoding is
 * self-delimiting, so two values encode alike only when they are equal:
 *
 * - `null` → `n`, `true` → `t`, `false` → `f`; a finite number → `d`, `String(n)`, `;`
 *   (`-0` reads `0`); a bigint → `d`, its digits, `;`;
 * - a well-formed string → `s`, its length in UTF-16 code units, `:`, the string itself; a
 *   string with a lone surrogate → `j`, the length of its `JSON.stringify` form, `:`, that form
 *   (which escapes the surrogate; UTF-8 alone would turn it into U+FFFD);
 * - an array → `[`, its elements, `]`; an object → `{`, each key (as a string) then its value,
 *   keys sorted by UTF-16 code units, `}`;
 * - as in JSON, a non-finite number is `n`, and an `undefined`, function or symbol is `n` in an
 *   array and left out of an object.
 *
 * Equal values with their keys in another order get the same digest; different values get
 * different ones up to xxh64 collisions (one in 2⁶⁴ per pair).
 *
 * @param field - names the value in the error.
 * @returns the digest.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `field` when the value contains
 *   itself (only a caller's own object can: parsed JSON never does).
 *
 * Cost: time linear in the value's size (strings are encoded without a scan or copy of their
 * own, at a few GB/s); the walk is iterative, so any depth of nesting is walked without
 * recursion; memory is one 64 KiB block and one frame per open array or object.
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
    if (frame.keys === undefined) {
      writeValue((frame.node as readonly unknown[])[i], stack, open, field);
    } else {
      const key = frame.keys[i]!;
      writeString(key);
      writeValue((frame.node as Readonly<Record<string, unknown>>)[key], stack, open, field);
    }
  }
  return sink.end();
}

/**
 * @internal `key` when it has at most `maxLength` UTF-16 code units; otherwise `#` followed by
 * the 16 hex digits of its {@link contentDigest} (17 characters): still one key per value, so a
 * key's placement stays sticky, in bounded memory. A key of at most `maxLength` characters is
 * returned as it is (the same string), so a digest given again is kept as it is too.
 *
 * Cost: O(1) for a short key; a long one is hashed once, linear in its length, with no copy.
 */
export function keyWithin(key: string, maxLength: number): string {
  return key.length <= maxLength ? key : `#${contentDigest(key, 'key')}`;
}

/** Writes a scalar, or opens an array or object (pushing its frame). */
function writeValue(value: unknown, stack: Frame[], open: Set<object>, field: string): void {
  switch (typeof value) {
    case 'string':
      writeString(value);
      return;
    case 'number':
      sink.write(Number.isFinite(value) ? `d${value};` : 'n');
      return;
    case 'boolean':
      sink.write(value ? 't' : 'f');
      return;
    case 'bigint':
      sink.write(`d${value};`);
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
  sink.write('n');
}

/** Whether an object member is written (JSON leaves out `undefined`, functions and symbols). */
function isWritten(value: unknown): boolean {
  const type = typeof value;
  return type !== 'undefined' && type !== 'function' && type !== 'symbol';
}

function writeString(value: string): void {
  if (wellFormed(value)) {
    sink.write(`s${value.length}:`);
    sink.write(value);
  } else {
    const escaped = JSON.stringify(value);
    sink.write(`j${escaped.length}:`);
    sink.write(escaped);
  }
}

const nativeWellFormed = (String.prototype as { isWellFormed?: (this: string) => boolean })
  .isWellFormed;

/** Whether `value` has no lone surrogate: native where the runtime has it (O(1) for Latin-1). */
function wellFormed(value: string): boolean {
  return nativeWellFormed === undefined ? isWellFormed(value) : nativeWellFormed.call(value);
}

/** @internal Whether a UTF-16 code unit is the first half of a surrogate pair. */
export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}
