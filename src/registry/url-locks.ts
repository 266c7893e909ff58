/**
 * One mutex per worker URL, created on demand and dropped when nobody holds or waits for it.
 *
 * @module
 * @internal
 */
import { Mutex } from 'async-mutex';

interface Entry {
  readonly mutex: Mutex;
  users: number;
}

/** @internal Serialises work per URL; work on different URLs interleaves freely. */
export class UrlLocks {
  readonly #locks = new Map<string, Entry>();

  /** Number of URLs with a holder or a waiter (for stats and leak tests). */
  get size(): number {
    return this.#locks.size;
  }

  /** Runs `fn` while holding the lock of `url`; the lock is released even when `fn` throws. */
  async run<T>(url: string, fn: () => T | Promise<T>): Promise<T> {
    let entry = this.#locks.get(url);
    if (entry === undefined) {
      entry = { mutex: new Mutex(), users: 0 };
      this.#locks.set(url, entry);
    }
    entry.users++;
    try {
      return await entry.mutex.runExclusive(fn);
    } finally {
      if (--entry.users === 0) this.#locks.delete(url);
    }
  }
}
