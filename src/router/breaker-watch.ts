/**
 * `BreakerWatch`: follows the circuit breakers of a registry's workers for one router, and turns
 * their state changes into the router's `circuitChanged` events.
 *
 * @module
 * @internal
 */
import type { CircuitObserver, CircuitState } from '../resilience/circuit-breaker.js';
import type { Worker } from '../workers/worker.js';

/** @internal What the watch reports for one state change. */
export type BreakerChange = (worker: Worker, from: CircuitState, to: CircuitState) => void;

interface Watched {
  worker: Worker;
  readonly observer: CircuitObserver;
}

/**
 * @internal One observer per worker id, added to the worker's breaker. Breakers take several
 * observers, so every router on a registry sees every change; when the registry swaps a worker's
 * breaker (new settings), the new breaker keeps the observers, and {@link BreakerWatch.watch}
 * after a replace is a no-op for an observer already in place.
 *
 * Cost: one closure per worker; O(1) per watch / unwatch.
 */
export class BreakerWatch {
  readonly #watched = new Map<string, Watched>();
  readonly #onChange: BreakerChange;
  #closed = false;

  constructor(onChange: BreakerChange) {
    this.#onChange = onChange;
  }

  /** Observes `worker`'s breaker (a newer revision of a watched worker replaces the older one). */
  watch(worker: Worker): void {
    if (this.#closed) return;
    let entry = this.#watched.get(worker.id);
    if (entry === undefined) {
      const created: Watched = {
        worker,
        observer: (from, to) => {
          if (!this.#closed) this.#onChange(created.worker, from, to);
        },
      };
      entry = created;
      this.#watched.set(worker.id, entry);
    }
    entry.worker = worker;
    worker.circuitBreaker.addObserver(entry.observer);
  }

  /** Stops observing the worker with this id. */
  unwatch(worker: Worker): void {
    const entry = this.#watched.get(worker.id);
    if (entry === undefined) return;
    this.#watched.delete(worker.id);
    entry.worker.circuitBreaker.removeObserver(entry.observer);
  }

  /** Stops observing every breaker. Idempotent. */
  close(): void {
    this.#closed = true;
    for (const entry of this.#watched.values())
      entry.worker.circuitBreaker.removeObserver(entry.observer);
    this.#watched.clear();
  }
}
