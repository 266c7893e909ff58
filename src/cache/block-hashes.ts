/**
 * Chained block hashes over token pages: the keys of the engine KV-event mode.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import { type Hasher, loadedHasher } from '../core/hash.js';
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

const DEFAULT_PAGE_SIZE = 16;

/**
 * @internal Computes the chained hashes of the full pages of `tokens` into `hiOut`/`loOut`
 * (halves of each 64-bit hash), at most `limit` blocks. @returns the number of blocks.
 */
export function blockHashHalves(
  hasher: Hasher,
  tokens: ArrayLike<number>,
  pageSize: number,
  limit: number,
  scratch: Uint32Array,
  hiOut: Uint32Array,
  loOut: Uint32Array,
  seedHi = 0,
  seedLo = 0,
): number {
  const blocks = Math.min(Math.floor(tokens.length / pageSize), limit);
  const bytes = new Uint8Array(scratch.buffer, 0, 8 + 4 * pageSize);
  const view = viewOf(scratch);
  let hi = seedHi;
  let lo = seedLo;
  for (let b = 0; b < blocks; b++) {
    // Little-endian on every host: the scheme is the same on every machine.
    view.setUint32(0, lo, true);
    view.setUint32(4, hi, true);
    const base = b * pageSize;
    for (let i = 0; i < pageSize; i++) {
      const t = tokens[base + i];
      view.setUint32(8 + 4 * i, typeof t === 'number' && t >>> 0 === t ? t : 0, true);
    }
    hasher.hashBytes(bytes);
    hi = hasher.hi;
    lo = hasher.lo;
    hiOut[b] = hi;
    loOut[b] = lo;
  }
  return blocks;
}

/** @internal The unsigned 64-bit hash with these 32-bit halves. */
export function hashOfHalves(hi: number, lo: number): bigint {
  return (BigInt(hi) << 32n) | BigInt(lo);
}

const views = new WeakMap<Uint32Array, DataView>();

function viewOf(scratch: Uint32Array): DataView {
  let view = views.get(scratch);
  if (view === undefined) {
    view = new DataView(scratch.buffer, scratch.byteOffset, scratch.byteLength);
    views.set(scratch, view);
  }
  return view;
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
 * Cost: one xxh64 over 8 + 4·pageSize bytes per block. Needs the hash function loaded
 * (`await WorkerRegistry.create()` or `HashRing.create()` first).
 *
 * @returns one unsigned 64-bit hash per full page, as bigints.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a bad `pageSize`, a `parent` that is
 *   not a bigint in 0 … 2⁶⁴ − 1, non-list tokens, or a hash function that has not loaded yet.
 * @example
 * ```ts
 * const hashes = blockHashes(promptTokens, { pageSize: 16 });
 * policy.applyKvEvents(worker.url, [{ type: 'stored', model: 'llama-3.1-8b', hashes }]);
 * ```
 * @public
 */
export function blockHashes(tokens: ArrayLike<number>, options: BlockHashOptions = {}): bigint[] {
  const o = readObject('blockHashes options', options);
  const pageSize = readInteger('blockHashes.pageSize', o.pageSize, DEFAULT_PAGE_SIZE, 1, 4096);
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
  const hasher = loadedHasher();
  if (hasher === undefined) {
    throw invalidArgument(
      'blockHashes: the hash function is still loading; await WorkerRegistry.create() first',
    );
  }
  const blocks = Math.floor(tokens.length / pageSize);
  const hi = new Uint32Array(blocks);
  const lo = new Uint32Array(blocks);
  const seed = parent ?? 0n;
  blockHashHalves(
    hasher,
    tokens,
    pageSize,
    blocks,
    new Uint32Array(2 + pageSize),
    hi,
    lo,
    Number(seed >> 32n),
    Number(seed & 0xffff_ffffn),
  );
  const out: bigint[] = [];
  for (let b = 0; b < blocks; b++) out.push(hashOfHalves(hi[b]!, lo[b]!));
  return out;
}

export { DEFAULT_PAGE_SIZE };
