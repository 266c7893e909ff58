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
    if (need > this.#exports.memory.buffer.byteLength) this.#grow(need);
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
    if (need > this.#exports.memory.buffer.byteLength) this.#grow(need);
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
