/**
 * The key path into a policy's event mode, declared once: `cache_aware` offers it, the KV-event
 * subscriber and the simulator's event feed use it.
 *
 * @module
 * @internal
 */
import type { KvEvent } from './kv-event-store.js';

/**
 * @internal What takes one worker's engine KV events by their index keys (`blockKey(hi, lo)`,
 * the 53-bit numbers `applyKvEvents` derives from each hash) — for callers that hold them
 * already — and everything cleared as a public {@link KvEvent}.
 */
export interface KvKeyTarget {
  /** Blocks stored or removed, by index key; no validation beyond the URL. */
  applyKvKeys(
    workerUrl: string,
    type: 'stored' | 'removed',
    model: string | undefined,
    keys: readonly number[],
  ): void;
  /** Public events; the key path sends only `{ type: 'cleared' }` through it. */
  applyKvEvents(workerUrl: string, events: readonly KvEvent[]): void;
  /**
   * Tokens per block the target's keys are built with, when it says: a feeder whose page size
   * differs would send keys that never match (every lookup a miss), so it refuses instead.
   */
  readonly kvPageSize?: number;
}

/**
 * @internal `undefined` when `target` takes keys built with `pageSize` tokens per block (or does
 * not say), else why not.
 */
export function pageSizeMismatch(target: object, pageSize: number): string | undefined {
  const size = (target as { kvPageSize?: unknown }).kvPageSize;
  return typeof size !== 'number' || size === pageSize
    ? undefined
    : `pageSize ${pageSize} differs from the target's pageSize ${size}: no key would match`;
}

/** @internal Whether `target` offers the key path. O(1). */
export function hasKvKeyPath<T extends object>(target: T): target is T & KvKeyTarget {
  const t = target as Partial<KvKeyTarget>;
  return typeof t.applyKvKeys === 'function' && typeof t.applyKvEvents === 'function';
}
