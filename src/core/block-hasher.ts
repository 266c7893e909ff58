/**
 * The chained block hashes of token sequences, many blocks per WebAssembly call: the hot loop of
 * `blockHashes`, the KV-event translator and `cache_aware`'s event mode.
 *
 * @module
 * @internal
 */
import { XXH64_WASM_BASE64 } from './wasm/xxh64-module.js';

/** The few WebAssembly members used, typed here (the compiler's lib has no WebAssembly types). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
  grow(pages: number): number;
}

interface WasmApi {
  readonly Module: new (bytes: Uint8Array) => object;
  readonly Instance: new (module: object) => { readonly exports: unknown };
}

interface Xxh64Exports {
  readonly memory: WasmMemory;
  xxh64(ptr: number, len: number, seedLo: number, seedHi: number): void;
  chain(
    tokens: number,
    page: number,
    count: number,
    seedLo: number,
    seedHi: number,
    out: number,
  ): void;
}

/** Most blocks hashed per call. */
export const BLOCKS_PER_CALL = 64;
/** Where the hashes of a call land: `BLOCKS_PER_CALL` × 8 bytes. */
const OUT = 16;
/** Where a call's tokens start (8 free bytes before them for the chained seed). */
const TOKENS = OUT + 8 * BLOCKS_PER_CALL + 8;

/**
 * @internal One module instance and views of its memory. Results of the last {@link hash} call:
 * block `k`'s hash halves are `lo(k)`, `hi(k)`.
 */
export class BlockHasher {
  readonly #exports: Xxh64Exports;
  /** The whole memory (replaced when it grows): its `byteLength` is the memory's size. */
  #u32: Uint32Array;

  constructor(exports: Xxh64Exports) {
    this.#exports = exports;
    this.#u32 = new Uint32Array(exports.memory.buffer);
  }

  /**
   * Hashes blocks `from … from + count − 1` (`count` ≤ {@link BLOCKS_PER_CALL}) of `tokens`,
   * `page` tokens each, chained from the hash `seedHi:seedLo` of the block before `from`. A token
   * that is not an unsigned 32-bit integer counts as 0. Cost: one copy of the tokens into
   * WebAssembly memory and one call; nothing allocated (but when memory grows).
   */
  hash(
    tokens: ArrayLike<number>,
    page: number,
    from: number,
    count: number,
    seedHi: number,
    seedLo: number,
  ): void {
    const need = TOKENS + 4 * page * count;
    if (need > this.#u32.byteLength) this.#grow(need);
    const u32 = this.#u32;
    const start = from * page;
    const n = page * count;
    const base = TOKENS >>> 2;
    if (tokens instanceof Uint32Array) {
      u32.set(tokens.subarray(start, start + n), base);
    } else {
      for (let i = 0; i < n; i++) {
        const t = tokens[start + i];
        u32[base + i] = typeof t === 'number' && t >>> 0 === t ? t : 0;
      }
    }
    this.#exports.chain(TOKENS, page, count, seedLo, seedHi, OUT);
  }

  /**
   * Copies `count` token ids of `tokens` from `start` into the module's memory, where
   * {@link BlockHasher.hashWords} reads them; a token that is not an unsigned 32-bit integer
   * counts as 0. They stay there until the next `loadWords` or {@link BlockHasher.hash}. Cost: one
   * pass over the tokens — a `Uint32Array` copied whole is one `set` and allocates nothing, a part
   * of one allocates a view; a plain array is read and checked once per token.
   */
  loadWords(tokens: ArrayLike<number>, start: number, count: number): void {
    const need = TOKENS + 4 * count;
    if (need > this.#u32.byteLength) this.#grow(need);
    const base = TOKENS >>> 2;
    if (tokens instanceof Uint32Array) {
      this.#u32.set(
        start === 0 && count === tokens.length ? tokens : tokens.subarray(start, start + count),
        base,
      );
    } else copyWords(tokens, start, count, this.#u32, base);
  }

  /**
   * xxh64 of the first `count` words loaded by {@link BlockHasher.loadWords} (as little-endian
   * uint32) seeded with `seedHi:seedLo`, read back by {@link BlockHasher.lastHi} and
   * {@link BlockHasher.lastLo}. Cost: one call into the module; nothing allocated.
   */
  hashWords(count: number, seedHi: number, seedLo: number): void {
    this.#exports.xxh64(TOKENS, 4 * count, seedLo, seedHi);
  }

  /**
   * High half of the last {@link BlockHasher.hashWords} hash, as a signed 32-bit integer: a value
   * V8 returns and passes on without boxing it (an unsigned half above 2³¹ is a heap number).
   */
  get lastHi(): number {
    return this.#u32[1]! | 0;
  }

  /** Low half of the last {@link BlockHasher.hashWords} hash, signed like {@link BlockHasher.lastHi}. */
  get lastLo(): number {
    return this.#u32[0]! | 0;
  }

  /** High half of hash `k` of the last call. */
  hi(k: number): number {
    return this.#u32[(OUT >>> 2) + 2 * k + 1]!;
  }

  /** Low half of hash `k` of the last call. */
  lo(k: number): number {
    return this.#u32[(OUT >>> 2) + 2 * k]!;
  }

  /**
   * xxh64 of `bytes` with seed `seedHi:seedLo` (tests compare it with `xxhash-wasm`).
   * @returns the hash.
   */
  xxh64(bytes: Uint8Array, seedHi = 0, seedLo = 0): bigint {
    const need = TOKENS + bytes.length;
    if (need > this.#u32.byteLength) this.#grow(need);
    new Uint8Array(this.#exports.memory.buffer).set(bytes, TOKENS);
    this.#exports.xxh64(TOKENS, bytes.length, seedLo, seedHi);
    const u32 = this.#u32;
    return (BigInt(u32[1]!) << 32n) | BigInt(u32[0]!);
  }

  #grow(bytes: number): void {
    const memory = this.#exports.memory;
    const pages = Math.ceil((bytes - memory.buffer.byteLength) / 65_536);
    memory.grow(pages);
    this.#u32 = new Uint32Array(memory.buffer);
  }
}

/**
 * Copies `count` token ids from `tokens[start]` to `words[at]`. A token id is an unsigned 32-bit
 * integer; anything else (NaN, 1.5, -3, 2⁴⁰, a bigint, a string, a hole) reads as 0 — `>>>`
 * would throw on a bigint or a symbol. Four tokens per iteration: about a fifth faster than one.
 */
function copyWords(
  tokens: ArrayLike<number>,
  start: number,
  count: number,
  words: Uint32Array,
  at: number,
): void {
  let i = 0;
  for (; i + 4 <= count; i += 4) {
    const a: unknown = tokens[start + i];
    const b: unknown = tokens[start + i + 1];
    const c: unknown = tokens[start + i + 2];
    const d: unknown = tokens[start + i + 3];
    words[at + i] = typeof a === 'number' && a >>> 0 === a ? a : 0;
    words[at + i + 1] = typeof b === 'number' && b >>> 0 === b ? b : 0;
    words[at + i + 2] = typeof c === 'number' && c >>> 0 === c ? c : 0;
    words[at + i + 3] = typeof d === 'number' && d >>> 0 === d ? d : 0;
  }
  for (; i < count; i++) {
    const t: unknown = tokens[start + i];
    words[at + i] = typeof t === 'number' && t >>> 0 === t ? t : 0;
  }
}

let instance: BlockHasher | undefined;

/**
 * @internal The process's block hasher, compiled on first use (synchronously: the module is under
 * 1 KB, well within what every runtime compiles on its main thread).
 */
export function blockHasher(): BlockHasher {
  if (instance === undefined) {
    const binary = atob(XXH64_WASM_BASE64);
    const bytes = new Uint8Array(binary.length);
    for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i);
    const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
    const module = new wasm.Module(bytes);
    instance = new BlockHasher(new wasm.Instance(module).exports as Xxh64Exports);
  }
  return instance;
}
