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

/**
 * @internal Points where tests may suspend a mutation to force interleavings: before it asks
 * for the URL's lock, and after it holds the lock but before it reads any state.
 */
export interface LockHooks {
  readonly beforeLock?: (url: string) => Promise<void>;
  readonly insideLock?: (url: string) => Promise<void>;
}

/** @internal Serialises work per URL; work on different URLs interleaves freely. */
export class UrlLocks {
  readonly #locks = new Map<string, Entry>();
  readonly #hooks: LockHooks;

  constructor(hooks: LockHooks = {}) {
    this.#hooks = hooks;
  }

  /** Number of URLs with a holder or a waiter (for stats and leak tests). */
  get size(): number {
    return this.#locks.size;
  }

  /** Runs `fn` while holding the lock of `url`; the lock is released even when `fn` throws. */
  async run<T>(url: string, fn: () => T): Promise<T> {
    let entry = this.#locks.get(url);
    if (entry === undefined) {
      entry = { mutex: new Mutex(), users: 0 };
      this.#locks.set(url, entry);
    }
    entry.users++;
    try {
      const { beforeLock, insideLock } = this.#hooks;
      if (beforeLock !== undefined) await beforeLock(url);
      return await entry.mutex.runExclusive(async () => {
        if (insideLock !== undefined) await insideLock(url);
        return fn();
      });
    } finally {
      if (--entry.users === 0) this.#locks.delete(url);
    }
  }
}
