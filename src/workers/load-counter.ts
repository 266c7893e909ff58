/**
 * Per-group load figures (all workers, one model's workers, the wildcard workers) kept current by
 * leases and status changes, so policies read a group's total in-flight count, and the lowest and
 * highest in-flight count of its available workers, in O(1) instead of walking every candidate
 * on every request.
 *
 * @module
 * @internal
 */
/**
 * @internal How many available workers of a group have each in-flight count: the group's lowest
 * and highest load in O(1) (amortised: the bounds move one level per step when a level empties).
 */
export class LoadHistogram {
  #counts = new Int32Array(16);
  #min = 0;
  #max = -1;
  #size = 0;

  /** Available workers counted. */
  get size(): number {
    return this.#size;
  }

  /** Lowest in-flight count among them (undefined when empty: check `size`). */
  get min(): number {
    return this.#min;
  }

  /** Highest in-flight count among them. */
  get max(): number {
    return this.#max;
  }

  add(level: number): void {
    if (level >= this.#counts.length) {
      const grown = new Int32Array(Math.max(level + 1, this.#counts.length * 2));
      grown.set(this.#counts);
      this.#counts = grown;
    }
    this.#counts[level]!++;
    if (this.#size++ === 0) {
      this.#min = level;
      this.#max = level;
    } else {
      if (level < this.#min) this.#min = level;
      if (level > this.#max) this.#max = level;
    }
  }

  remove(level: number): void {
    const counts = this.#counts;
    if (level >= counts.length || counts[level] === 0) return;
    counts[level]!--;
    if (--this.#size === 0) {
      this.#min = 0;
      this.#max = -1;
      return;
    }
    if (counts[level] !== 0) return;
    if (level === this.#min) while (counts[this.#min] === 0) this.#min++;
    if (level === this.#max) while (counts[this.#max] === 0) this.#max--;
  }
}

/** @internal Load figures of one group of workers. */
export class LoadCounter {
  /** Requests in flight across the group, kept by leases (each lease undoes exactly what it did). */
  inFlight = 0;
  /** In-flight counts of the group's available workers, kept by each worker's runtime. */
  readonly histogram = new LoadHistogram();
  /**
   * Counts of requests awaiting their first token (`Worker.prefilling`) of the group's available
   * workers, kept by each worker's runtime.
   */
  readonly prefillHistogram = new LoadHistogram();
  /**
   * +1 whenever a member becomes available or unavailable, ready or not, joins or leaves: values
   * derived from "which of the group's workers can take a request" (or "are ready") are cached
   * against it. Only this group's
   * changes move it (never another registry's, never another model's).
   */
  version = 0;
  /**
   * Called when a member's in-flight or prefilling count falls (a lease released, a first token,
   * other routers' counts lower): room may have freed. Set only on a registry's all-workers group,
   * and only while a router with admission listens (see {@link RoomListeners}); `undefined`
   * otherwise, so a release costs one field read.
   */
  freed: (() => void) | undefined = undefined;
}

/**
 * @internal The listeners of one group's {@link LoadCounter.freed}: added and removed one by one,
 * the hook set while there is at least one. A listener that throws does not stop the others.
 */
export class RoomListeners {
  readonly #counter: LoadCounter;
  readonly #listeners = new Set<() => void>();

  constructor(counter: LoadCounter) {
    this.#counter = counter;
  }

  /** Adds `listener`. @returns a function that removes it. */
  add(listener: () => void): () => void {
    this.#listeners.add(listener);
    this.#counter.freed = this.#fire;
    return () => {
      this.#listeners.delete(listener);
      if (this.#listeners.size === 0) this.#counter.freed = undefined;
    };
  }

  readonly #fire = (): void => {
    for (const listener of this.#listeners) {
      try {
        listener();
      } catch {
        // A listener's fault is its own: the lease that freed room has ended either way.
      }
    }
  };
}

/** @internal A worker that belongs to no group yet. */
export const NO_COUNTERS: readonly LoadCounter[] = Object.freeze([]);
