/**
 * The sticky table of the `manual` policy: routing key → up to two worker URLs, kept in
 * least-recently-used order, with a reverse index URL → keys so a worker's key count is O(1) and
 * removing a worker costs O(its keys), never a scan of the whole table.
 *
 * @module
 * @internal
 */

/** @internal One key's placement. Every field is initialised, so all entries share one shape. */
export class ManualEntry {
  /** The worker the key was first placed on; it wins the key back whenever it is available. */
  primary: string;
  /** The worker that took the key while the primary was down, if any (never the primary). */
  secondary: string | undefined = undefined;
  /** When the key was last used, on the policy's clock (ms). */
  lastUsed: number;

  constructor(primary: string, lastUsed: number) {
    this.primary = primary;
    this.lastUsed = lastUsed;
  }
}

/** @internal A plain-data copy of one entry, for tests and diagnostics. */
export interface ManualEntryInfo {
  readonly key: string;
  readonly primary: string;
  readonly secondary: string | undefined;
  readonly lastUsed: number;
}

/**
 * @internal Invariants, after every public call: the map's iteration order is least recently
 * used first (so with a monotonic clock `lastUsed` never decreases along it); `size ≤ maxKeys`;
 * a key is in `#keysByUrl.get(url)` exactly when its entry names `url` as primary or secondary;
 * no set in `#keysByUrl` is empty.
 */
export class KeyTable {
  readonly #entries = new Map<string, ManualEntry>();
  readonly #keysByUrl = new Map<string, Set<string>>();
  readonly #maxKeys: number;
  readonly #ttlMs: number;

  constructor(maxKeys: number, ttlMs: number) {
    this.#maxKeys = maxKeys;
    this.#ttlMs = ttlMs;
  }

  /** Keys held (expired ones count until a lookup or a sweep drops them). O(1). */
  get size(): number {
    return this.#entries.size;
  }

  /** Keys naming `url` as primary or secondary. O(1). */
  keyCount(url: string): number {
    return this.#keysByUrl.get(url)?.size ?? 0;
  }

  /** The key's entry, or `undefined` when absent or idle for longer than the TTL (then dropped). */
  get(key: string, now: number): ManualEntry | undefined {
    const entry = this.#entries.get(key);
    if (entry === undefined || now - entry.lastUsed <= this.#ttlMs) return entry;
    this.#drop(key, entry);
    return undefined;
  }

  /** Marks a use: refreshes `lastUsed` and moves the key to the most-recent end. O(1). */
  touch(key: string, entry: ManualEntry, now: number): void {
    entry.lastUsed = now;
    this.#entries.delete(key);
    this.#entries.set(key, entry);
  }

  /** Places a new key on `url`, evicting the least recently used key when the table is full. */
  insert(key: string, url: string, now: number): void {
    if (this.#entries.size >= this.#maxKeys) {
      for (const [oldest, entry] of this.#entries) {
        this.#drop(oldest, entry);
        break;
      }
    }
    this.#entries.set(key, new ManualEntry(url, now));
    this.#link(url, key);
  }

  /** Replaces the key's secondary with `url` (which must differ from its primary). O(1). */
  setSecondary(key: string, entry: ManualEntry, url: string): void {
    if (entry.secondary !== undefined) this.#unlink(entry.secondary, key);
    entry.secondary = url;
    this.#link(url, key);
  }

  /**
   * Makes the key name `primary` and `secondary` (another router's placement, from shared
   * state), inserting it when absent and marking a use. O(1).
   */
  adopt(key: string, primary: string, secondary: string | undefined, now: number): void {
    const entry = this.#entries.get(key);
    if (entry === undefined) {
      this.insert(key, primary, now);
      if (secondary !== undefined && secondary !== primary)
        this.setSecondary(key, this.#entries.get(key)!, secondary);
      return;
    }
    if (entry.primary !== primary) {
      this.#unlink(entry.primary, key);
      if (entry.secondary === primary) entry.secondary = undefined;
      entry.primary = primary;
      this.#link(primary, key);
    }
    const next = secondary === primary ? undefined : secondary;
    if (entry.secondary !== next) {
      if (entry.secondary !== undefined) this.#unlink(entry.secondary, key);
      entry.secondary = next;
      if (next !== undefined) this.#link(next, key);
    }
    this.touch(key, entry, now);
  }

  /** The key's entry as it stands, without a TTL check or a use. */
  peek(key: string): ManualEntry | undefined {
    return this.#entries.get(key);
  }

  /**
   * Drops the keys idle for longer than the TTL. They sit at the least-recent end, so the walk
   * stops at the first live key: O(dropped + 1).
   *
   * @returns how many keys were dropped.
   */
  sweep(now: number): number {
    let dropped = 0;
    for (const [key, entry] of this.#entries) {
      if (now - entry.lastUsed <= this.#ttlMs) break;
      this.#drop(key, entry);
      dropped++;
    }
    return dropped;
  }

  /**
   * Removes `url` from every entry that names it: a secondary is cleared, a primary is replaced
   * by the secondary, and an entry left without a URL is deleted. O(keys naming `url`).
   */
  removeUrl(url: string): void {
    const keys = this.#keysByUrl.get(url);
    if (keys === undefined) return;
    this.#keysByUrl.delete(url);
    for (const key of keys) {
      const entry = this.#entries.get(key)!;
      if (entry.secondary === url) {
        entry.secondary = undefined;
      } else if (entry.secondary !== undefined) {
        entry.primary = entry.secondary;
        entry.secondary = undefined;
      } else {
        this.#entries.delete(key);
      }
    }
  }

  clear(): void {
    this.#entries.clear();
    this.#keysByUrl.clear();
  }

  /** Plain-data copies of the entries (least recently used first) and of the key counts. O(n). */
  snapshot(): { entries: ManualEntryInfo[]; counts: Record<string, number> } {
    const entries: ManualEntryInfo[] = [];
    for (const [key, e] of this.#entries) {
      entries.push({ key, primary: e.primary, secondary: e.secondary, lastUsed: e.lastUsed });
    }
    const counts: Record<string, number> = {};
    for (const [url, keys] of this.#keysByUrl) counts[url] = keys.size;
    return { entries, counts };
  }

  #drop(key: string, entry: ManualEntry): void {
    this.#entries.delete(key);
    this.#unlink(entry.primary, key);
    if (entry.secondary !== undefined) this.#unlink(entry.secondary, key);
  }

  #link(url: string, key: string): void {
    const keys = this.#keysByUrl.get(url);
    if (keys === undefined) this.#keysByUrl.set(url, new Set([key]));
    else keys.add(key);
  }

  #unlink(url: string, key: string): void {
    const keys = this.#keysByUrl.get(url);
    if (keys === undefined) return;
    keys.delete(key);
    if (keys.size === 0) this.#keysByUrl.delete(url);
  }
}
