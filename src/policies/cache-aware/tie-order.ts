/**
 * The order `cache_aware`'s cost model breaks its last near-ties by: the prompt's rendezvous
 * order over the tied workers. Each worker's URL is hashed once per candidate list (kept by the
 * list's identity, filled on first use), and a prompt's rank of a worker mixes that hash with the
 * prompt's by integer operations — no string is read per candidate. It depends only on the
 * prompt and the URL: routers that see the same state break the same ties the same way, whatever
 * the order of their candidate lists, and different prompts spread over the workers.
 *
 * @module
 * @internal
 */
import { fmix32 } from '../../core/fmix32.js';
import { IdentityMemo } from '../../core/identity-memo.js';
import type { Worker } from '../../workers/worker.js';

const NO_HASHES = new Uint32Array(0);

/** @internal The rendezvous order of one selection's prompt over a candidate list. */
export class TieOrder {
  readonly #lists = new IdentityMemo<readonly Worker[], Uint32Array>();
  #list: readonly Worker[] | undefined;
  /** Per candidate index: its URL's hash, 0 when not computed yet. */
  #hashes: Uint32Array = NO_HASHES;
  #seed = 0;

  /** Starts a selection for the prompt `key` (hashes its last 16 units and its length). */
  begin(key: string | ArrayLike<number>): void {
    this.#seed = promptHash(key);
  }

  /** The rank of candidate `i` of `workers` for this selection's prompt (higher first). */
  rank(workers: readonly Worker[], i: number): number {
    if (workers !== this.#list) {
      this.#list = workers;
      this.#hashes = this.#lists.get(workers, (list) => new Uint32Array(list.length));
    }
    let u = this.#hashes[i]!;
    if (u === 0) {
      u = urlHash(workers[i]!.url);
      this.#hashes[i] = u;
    }
    return mix(this.#seed, u);
  }
}

/** FNV-1a over the last 16 units of `key`, and its length: the prompt's rendezvous seed. */
export function promptHash(key: string | ArrayLike<number>): number {
  let h = 0x811c9dc5 ^ key.length;
  const end = key.length;
  const start = end > 16 ? end - 16 : 0;
  if (typeof key === 'string') {
    for (let i = start; i < end; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  } else {
    for (let i = start; i < end; i++) {
      const unit = key[i];
      h = Math.imul(h ^ (typeof unit === 'number' ? unit >>> 0 : 0), 0x01000193);
    }
  }
  return h >>> 0;
}

/** FNV-1a of a worker's URL, never 0 (0 marks "not computed"). */
export function urlHash(url: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < url.length; i++) h = Math.imul(h ^ url.charCodeAt(i), 0x01000193);
  return h >>> 0 || 1;
}

/** A prompt's rank of a worker: its seed and the URL's hash, through a 32-bit finaliser. */
export function mix(seed: number, url: number): number {
  return fmix32(Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ url);
}
