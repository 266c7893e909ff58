/**
 * What engines report holding: block hash → workers, per model, from KV-cache events.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import { blockKeyOf } from './block-hashes.js';

/**
 * An engine KV-cache event for {@link CacheAwarePolicy.applyKvEvents}: blocks stored or
 * removed (by their {@link blockHashes}), or everything cleared (for one model, or all).
 *
 * @public
 */
export type KvEvent =
  | {
      readonly type: 'stored';
      readonly model?: string;
      readonly hashes: readonly (bigint | number | string)[];
    }
  | {
      readonly type: 'removed';
      readonly model?: string;
      readonly hashes: readonly (bigint | number | string)[];
    }
  | { readonly type: 'cleared'; readonly model?: string };

/** @internal The blocks one model's workers hold. */
export class KvBlockIndex {
  /** Block key → workers (by URL) holding it. */
  readonly #holders = new Map<number, Set<string>>();
  /** Worker URL → the block keys it holds. */
  readonly #held = new Map<string, Set<number>>();

  /** Whether any worker holds any block. */
  get empty(): boolean {
    return this.#held.size === 0;
  }

  /** Blocks held by `url`. O(1). */
  sizeOf(url: string): number {
    return this.#held.get(url)?.size ?? 0;
  }

  /** Workers holding block `key` (undefined: none). */
  holders(key: number): ReadonlySet<string> | undefined {
    return this.#holders.get(key);
  }

  store(url: string, keys: readonly number[]): void {
    if (keys.length === 0) return;
    let held = this.#held.get(url);
    if (held === undefined) {
      held = new Set();
      this.#held.set(url, held);
    }
    for (const key of keys) {
      held.add(key);
      let holders = this.#holders.get(key);
      if (holders === undefined) {
        holders = new Set();
        this.#holders.set(key, holders);
      }
      holders.add(url);
    }
  }

  remove(url: string, keys: readonly number[]): void {
    const held = this.#held.get(url);
    if (held === undefined) return;
    for (const key of keys) {
      if (!held.delete(key)) continue;
      const holders = this.#holders.get(key);
      holders?.delete(url);
      if (holders?.size === 0) this.#holders.delete(key);
    }
    if (held.size === 0) this.#held.delete(url);
  }

  /** Forgets every block of `url`. */
  clear(url: string): void {
    const held = this.#held.get(url);
    if (held === undefined) return;
    this.remove(url, [...held]);
  }
}

/**
 * @internal Validates one event completely (before anything changes).
 * @returns the event's model (undefined: every model, for `cleared`) and its block keys.
 */
export function readKvEvent(event: unknown): {
  type: KvEvent['type'];
  model: string | undefined;
  keys: number[];
} {
  if (typeof event !== 'object' || event === null)
    throw invalidArgument('a KV event must be an object');
  const e = event as { type?: unknown; model?: unknown; hashes?: unknown };
  if (e.type !== 'stored' && e.type !== 'removed' && e.type !== 'cleared') {
    throw invalidArgument("a KV event's type must be 'stored', 'removed' or 'cleared'");
  }
  if (e.model !== undefined && typeof e.model !== 'string')
    throw invalidArgument("a KV event's model must be a string");
  if (e.type === 'cleared') return { type: e.type, model: e.model, keys: [] };
  if (!Array.isArray(e.hashes))
    throw invalidArgument(`a '${e.type}' KV event needs a hashes array`);
  const keys: number[] = [];
  // An index loop: a hole in the array is a missing hash, not one to skip.
  for (let i = 0; i < e.hashes.length; i++) keys.push(blockKeyOf(e.hashes[i]));
  return { type: e.type, model: e.model, keys };
}
