/**
 * One simulated engine's LoRA adapter slots: which adapters are loaded, which of them have
 * requests running, and the least recently used idle one to evict when a new adapter needs room.
 *
 * @module
 * @internal
 */

/** @internal What {@link AdapterSlots.acquire} did. */
export type SlotOutcome = 'resident' | 'loaded' | 'full';

/**
 * @internal `max` slots. Loaded adapters are kept in a `Map` in use order (least recently used
 * first) with their running requests; an adapter with none is idle and may be evicted. Every
 * operation is O(1) but eviction, O(slots).
 */
export class AdapterSlots {
  readonly #max: number;
  /** Adapter → requests running with it; insertion order is use order. */
  readonly #loaded = new Map<string, number>();
  /** Loads per adapter name are not kept: only the total. */
  loads = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Slots in all. */
  get max(): number {
    return this.#max;
  }

  /** Whether `adapter` is loaded. O(1). */
  has(adapter: string): boolean {
    return this.#loaded.has(adapter);
  }

  /**
   * A request of `adapter` starts running: `'resident'` when the adapter was loaded, `'loaded'`
   * when it was loaded now (into a free slot, or the slot of the least recently used idle
   * adapter, evicted), `'full'` — nothing changed — when every slot holds an adapter with
   * requests running.
   */
  acquire(adapter: string): SlotOutcome {
    const loaded = this.#loaded;
    const running = loaded.get(adapter);
    if (running !== undefined) {
      loaded.delete(adapter);
      loaded.set(adapter, running + 1);
      return 'resident';
    }
    if (loaded.size >= this.#max) {
      let victim: string | undefined;
      for (const [name, count] of loaded) {
        if (count === 0) {
          victim = name;
          break;
        }
      }
      if (victim === undefined) return 'full';
      loaded.delete(victim);
    }
    loaded.set(adapter, 1);
    this.loads++;
    return 'loaded';
  }

  /** A request of `adapter` finished. O(1). */
  release(adapter: string): void {
    const running = this.#loaded.get(adapter);
    if (running !== undefined && running > 0) this.#loaded.set(adapter, running - 1);
  }

  /** Whether a request of `adapter` could start now (resident, or a slot free or idle). O(slots). */
  admits(adapter: string): boolean {
    if (this.#loaded.has(adapter) || this.#loaded.size < this.#max) return true;
    for (const count of this.#loaded.values()) if (count === 0) return true;
    return false;
  }

  /** The loaded adapters, least recently used first. O(slots). */
  resident(): string[] {
    return [...this.#loaded.keys()];
  }

  /** The adapters with requests running. O(slots). */
  running(): string[] {
    const out: string[] = [];
    for (const [name, count] of this.#loaded) if (count > 0) out.push(name);
    return out;
  }

  /** The engine restarted: every adapter is unloaded; running requests keep theirs. O(slots). */
  restart(): void {
    for (const [name, count] of this.#loaded) if (count === 0) this.#loaded.delete(name);
  }
}
