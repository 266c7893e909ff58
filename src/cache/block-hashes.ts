/**
 * Chained block hashes over token pages: the keys of the engine KV-event mode.
 *
 * @module
 */

import { BLOCKS_PER_CALL, blockHasher } from '../core/block-hasher.js';
import { invalidArgument } from '../core/errors.js';
import { integer } from '../core/option-table.js';
import { readInteger, readObject } from '../core/options.js';

/** Options of {@link blockHashes}. @public */
export interface BlockHashOptions {
  /** Tokens per block; must match the engine's KV block size. @defaultValue 16 */
  readonly pageSize?: number;
  /**
   * The chain seed: the hash of the block just before `tokens[0]` (an unsigned 64-bit bigint),
   * so the hashes continue a sequence already hashed — `blockHashes(rest, { parent })` with
   * `parent` the last hash of `blockHashes(start)` equals the tail of `blockHashes([...start,
   * ...rest])` whenever `start` is a whole number of pages. An engine's `BlockStored` event names
   * such a parent for the blocks it stores. @defaultValue 0n (the sequence starts here)
   */
  readonly parent?: bigint;
}

/**
 * @internal Tokens per block of fleetroute's block keys, when nothing says otherwise. Engines
 * page their KV cache in blocks of 16 tokens by default (vLLM, SGLang's radix cache at page 1
 * aside), so keys of 16-token pages name the engine's own blocks.
 */
export const DEFAULT_PAGE_SIZE = 16;

/**
 * @internal The page size as an option — its default and bounds — declared once: `blockHashes`,
 * `cache_aware` and the KV-event translator read their `pageSize` with it, and the simulated
 * fleet's block size defaults to it. Keys hashed with two page sizes never match, so every part
 * that must agree with another takes its page size from here.
 */
export const PAGE_SIZE = integer(DEFAULT_PAGE_SIZE, 1, 4096);

/**
 * @internal Computes the chained hashes of the full pages of `tokens` into `hiOut`/`loOut`
 * (halves of each 64-bit hash), at most `limit` blocks. @returns the number of blocks.
 */
export function blockHashHalves(
  tokens: ArrayLike<number>,
  pageSize: number,
  limit: number,
  hiOut: Uint32Array,
  loOut: Uint32Array,
  seedHi = 0,
  seedLo = 0,
): number {
  const blocks = Math.min(Math.floor(tokens.length / pageSize), limit);
  const wasm = blockHasher();
  let hi = seedHi;
  let lo = seedLo;
  for (let from = 0; from < blocks; from += BLOCKS_PER_CALL) {
    const count = Math.min(BLOCKS_PER_CALL, blocks - from);
    wasm.hash(tokens, pageSize, from, count, hi, lo);
    for (let k = 0; k < count; k++) {
      hiOut[from + k] = wasm.hi(k);
      loOut[from + k] = wasm.lo(k);
    }
    hi = hiOut[from + count - 1]!;
    lo = loOut[from + count - 1]!;
  }
  return blocks;
}

/**
 * @internal The keys (`blockKey`) of a token sequence's blocks, hashed a few at a time as they
 * are asked for — 4 blocks first, then twice as many each time, up to 64 per call — so a scan
 * that stops at the first block nobody holds hashes little further. Reused across calls:
 * {@link BlockKeyCursor.reset} starts a sequence; nothing is allocated per call.
 */
export class BlockKeyCursor {
  readonly #pageSize: number;
  readonly #keys = new Float64Array(BLOCKS_PER_CALL);
  #tokens: ArrayLike<number> = [];
  #limit = 0;
  /** Blocks hashed so far, and the next block to hand out. */
  #hashed = 0;
  #next = 0;
  /** Keys of blocks `#hashed − #batch … #hashed − 1` are in `#keys`. */
  #batch = 0;
  #hi = 0;
  #lo = 0;

  constructor(pageSize: number) {
    this.#pageSize = pageSize;
  }

  /** Starts the blocks of `tokens`: at most `limit` full pages. */
  reset(tokens: ArrayLike<number>, limit: number): void {
    this.#tokens = tokens;
    this.#limit = Math.min(Math.floor(tokens.length / this.#pageSize), limit);
    this.#hashed = 0;
    this.#next = 0;
    this.#batch = 0;
    this.#hi = 0;
    this.#lo = 0;
  }

  /** Blocks the sequence has. */
  get length(): number {
    return this.#limit;
  }

  /**
   * The key of the sequence's 4th block (or its last, when shorter), or -1 for no block: what
   * names a prompt's start. Valid once {@link BlockKeyCursor.next} was called (its first call
   * hashes those blocks).
   */
  prefixKey(): number {
    const n = Math.min(4, this.#limit);
    if (n === 0 || this.#hashed - this.#batch !== 0 || this.#hashed < n) return -1;
    return this.#keys[n - 1]!;
  }

  /** The key of the next block (blocks come in order), or -1 past the last. */
  next(): number {
    const b = this.#next;
    if (b >= this.#limit) return -1;
    if (b === this.#hashed) this.#hashMore();
    this.#next = b + 1;
    return this.#keys[b - (this.#hashed - this.#batch)]!;
  }

  #hashMore(): void {
    const from = this.#hashed;
    const count = Math.min(
      this.#batch === 0 ? 4 : Math.min(2 * this.#batch, BLOCKS_PER_CALL),
      this.#limit - from,
    );
    const wasm = blockHasher();
    wasm.hash(this.#tokens, this.#pageSize, from, count, this.#hi, this.#lo);
    const keys = this.#keys;
    for (let k = 0; k < count; k++) keys[k] = blockKey(wasm.hi(k), wasm.lo(k));
    this.#hi = wasm.hi(count - 1);
    this.#lo = wasm.lo(count - 1);
    this.#hashed = from + count;
    this.#batch = count;
  }
}

/** @internal The unsigned 64-bit hash with these 32-bit halves. */
export function hashOfHalves(hi: number, lo: number): bigint {
  return (BigInt(hi) << 32n) | BigInt(lo);
}

/**
 * The key the event store files a block hash under: its top 53 bits, a safe integer (collisions
 * need 2²⁶ blocks before they become likely).
 *
 * @internal
 */
export function blockKey(hi: number, lo: number): number {
  return hi * 2_097_152 + (lo >>> 11);
}

/** @internal {@link blockKey} of a hash given as a bigint, a safe integer, or 16 hex digits. */
export function blockKeyOf(hash: unknown): number {
  let value: bigint;
  if (typeof hash === 'bigint') value = hash;
  else if (typeof hash === 'number' && Number.isSafeInteger(hash) && hash >= 0)
    value = BigInt(hash);
  else if (typeof hash === 'string' && /^(0x)?[0-9a-fA-F]{1,16}$/.test(hash)) {
    value = BigInt(hash.startsWith('0x') ? hash : `0x${hash}`);
  } else {
    throw invalidArgument(
      'a block hash must be a bigint, a non-negative safe integer or up to 16 hex digits',
    );
  }
  if (value < 0n || value > 0xffff_ffff_ffff_ffffn)
    throw invalidArgument('a block hash must fit in 64 unsigned bits');
  return Number(value >> 11n);
}

/**
 * The chained per-block hashes of a token sequence, the keys of `applyKvEvents`. Only full pages
 * count (a partial trailing page has no hash).
 *
 * Scheme (stable, part of the public contract): block `i` covers tokens
 * `[i·pageSize, (i+1)·pageSize)`; its hash is xxh64, seed 0, of 8 + 4·pageSize bytes — the
 * previous block's hash as a little-endian uint64 (for the first block `parent`, default 0)
 * followed by the block's
 * token ids as little-endian uint32 (an id that is not an unsigned 32-bit integer counts as 0).
 * A block's hash therefore identifies its whole prefix, as an engine's prefix-cache block does.
 * To feed an engine's events (vLLM's `BlockStored` carries each block's token ids; SGLang's
 * events carry the token ids of the stored pages), recompute the hashes from those token ids with
 * this function and pass them to `applyKvEvents`.
 *
 * Cost: one xxh64 over 8 + 4·pageSize bytes per block (about 50 ns for 16 tokens: many blocks
 * per WebAssembly call), plus a bigint per block. Synchronous: nothing to load first.
 *
 * @returns one unsigned 64-bit hash per full page, as bigints.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a bad `pageSize`, a `parent` that is
 *   not a bigint in 0 … 2⁶⁴ − 1, or non-list tokens.
 * @example
 * ```ts
 * const hashes = blockHashes(promptTokens, { pageSize: 16 });
 * policy.applyKvEvents(worker.url, [{ type: 'stored', model: 'llama-3.1-8b', hashes }]);
 * ```
 * @public
 */
export function blockHashes(tokens: ArrayLike<number>, options: BlockHashOptions = {}): bigint[] {
  const o = readObject('blockHashes options', options);
  const pageSize = readInteger(
    'blockHashes.pageSize',
    o.pageSize,
    DEFAULT_PAGE_SIZE,
    PAGE_SIZE.min,
    PAGE_SIZE.max,
  );
  const parent = o.parent;
  if (
    parent !== undefined &&
    (typeof parent !== 'bigint' || parent < 0n || parent > 0xffff_ffff_ffff_ffffn)
  ) {
    throw invalidArgument(
      `blockHashes.parent must be a bigint in 0 … 2^64 − 1, got ${typeof parent === 'bigint' ? 'one out of range' : typeof parent}`,
    );
  }
  if (tokens === null || typeof tokens !== 'object' || typeof tokens.length !== 'number') {
    throw invalidArgument('blockHashes: tokens must be an array of token ids');
  }
  const blocks = Math.floor(tokens.length / pageSize);
  const hi = new Uint32Array(blocks);
  const lo = new Uint32Array(blocks);
  const seed = parent ?? 0n;
  blockHashHalves(
    tokens,
    pageSize,
    blocks,
    hi,
    lo,
    Number(seed >> 32n),
    Number(seed & 0xffff_ffffn),
  );
  const out: bigint[] = [];
  for (let b = 0; b < blocks; b++) out.push(hashOfHalves(hi[b]!, lo[b]!));
  return out;
}
