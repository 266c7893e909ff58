/**
 * `ModelDiscovery`: asks a ready wildcard worker which models it serves, and records the answer
 * in the registry.
 *
 * @module
 * @internal
 */
import { AbortScopes, type ScopeTimeout } from '../core/abort.js';
import { backgroundTimeout, callWithDeadline } from '../core/bounded-wait.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { Transport } from '../transport/transport.js';
import { type Worker, workerInternals } from '../workers/worker.js';
import { isModelId, MAX_MODELS_PER_WORKER, type WorkerSpec } from '../workers/worker-spec.js';
import { TaskLimiter } from './task-limiter.js';

/** @internal Counters for the router's stats. */
export interface ModelDiscoveryStats {
  /** Calls to `transport.models`. */
  calls: number;
  /** Workers whose models were recorded. */
  discovered: number;
  /** Calls that failed, timed out, or answered nothing usable. */
  failures: number;
}

/**
 * @internal For a worker registered without models (a wildcard), once it is `ready`: one call to
 * `transport.models(worker, signal)`, bounded by `timeoutMs`; the valid ids of the answer
 * (those {@link isModelId} accepts, the rule of `spec.models`; at most
 * {@link MAX_MODELS_PER_WORKER}, duplicates dropped) become the worker's models through
 * `registry.replace(id, spec, { expectedRevision })`, so a `replaced` event fires and every index
 * follows. An answer about a revision that changed meanwhile is dropped. A worker that answers no
 * usable id stays a wildcard. Each revision is asked once; after a failure, the next call to
 * {@link ModelDiscovery.consider} for that revision (the next successful probe) asks again.
 * Workers registered with models are never asked.
 */
export class ModelDiscovery {
  readonly #registry: WorkerRegistry;
  readonly #models: NonNullable<Transport['models']>;
  readonly #timeout: ScopeTimeout;
  readonly #limiter: TaskLimiter;
  /** Worker id → the revision asked about (in flight or done). */
  readonly #asked = new Map<string, number>();
  /** The calls in flight, aborted by `close()`. */
  readonly #calls = new AbortScopes();
  readonly stats: ModelDiscoveryStats = { calls: 0, discovered: 0, failures: 0 };
  #closed = false;

  constructor(
    registry: WorkerRegistry,
    models: NonNullable<Transport['models']>,
    timeoutMs: number,
    maxInFlight: number,
  ) {
    this.#registry = registry;
    this.#models = models;
    this.#timeout = backgroundTimeout(timeoutMs);
    this.#limiter = new TaskLimiter(maxInFlight);
  }

  /** Asks `worker` for its models if it is a ready wildcard not asked about at this revision. */
  consider(worker: Worker): void {
    if (this.#closed || !worker.isWildcard || worker.status !== 'ready') return;
    if (this.#asked.get(worker.id) === worker.revision) return;
    this.#asked.set(worker.id, worker.revision);
    this.#limiter.run(() => this.#discover(worker));
  }

  /** Forgets a removed worker. */
  forget(id: string): void {
    this.#asked.delete(id);
  }

  /** Aborts every call in flight; nothing more is asked. */
  close(): void {
    this.#closed = true;
    this.#calls.abortAll();
    this.#limiter.clear();
    this.#asked.clear();
  }

  async #discover(worker: Worker): Promise<void> {
    if (this.#closed) return;
    this.stats.calls++;
    const ids = await this.#call(worker);
    if (this.#closed) return;
    const current = this.#registry.get(worker.id);
    if (ids === undefined || ids.length === 0) {
      this.stats.failures++;
      // Ask again at the next chance (a later probe), unless the worker changed or left.
      if (current?.revision === worker.revision) this.#asked.delete(worker.id);
      return;
    }
    if (current === undefined || current.revision !== worker.revision || !current.isWildcard)
      return;
    try {
      // The resolved spec reads back as a spec: every field the worker was registered with.
      const spec = { ...workerInternals.specOf(current), models: ids } as WorkerSpec;
      await this.#registry.replace(worker.id, spec, { expectedRevision: worker.revision });
      this.stats.discovered++;
    } catch {
      // Replaced, removed or closed meanwhile: the answer no longer applies.
    }
  }

  /** The transport's answer, validated, or `undefined` (failed, timed out, aborted). */
  async #call(worker: Worker): Promise<string[] | undefined> {
    const scope = this.#calls.open(undefined, this.#timeout);
    const answer = await callWithDeadline((signal) => this.#models(worker, signal), scope);
    this.#calls.close(scope);
    return validIds(answer);
  }
}

/** The usable model ids of an untrusted answer, in order, without duplicates. */
function validIds(answer: unknown): string[] | undefined {
  if (!Array.isArray(answer)) return undefined;
  const ids = new Set<string>();
  const n = Math.min(answer.length, 100 * MAX_MODELS_PER_WORKER);
  for (let i = 0; i < n && ids.size < MAX_MODELS_PER_WORKER; i++) {
    const id: unknown = answer[i];
    if (isModelId(id)) ids.add(id);
  }
  return [...ids];
}
