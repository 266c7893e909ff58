/**
 * What a registry's mutations change once they hold their URL's lock: the index, the ids (live
 * and reserved), the breakers, the retry overrides — and the one event each change emits.
 *
 * @module
 * @internal
 */
import { type Worker, workerInternals } from '../workers/worker.js';
import { WorkerRuntime } from '../workers/worker-runtime.js';
import type { ResolvedWorkerSpec, WorkerStatus } from '../workers/worker-spec.js';
import type { EventHub } from './event-hub.js';
import { ModelRetryConfigs } from './model-retry-configs.js';
import type { StatusTransition } from './registry-options.js';
import type { WorkerBreakers } from './worker-breakers.js';
import type { WorkerIndex } from './worker-index.js';

/**
 * @internal The registry's state behind its locks. Every method that changes a worker applies
 * the whole change — index, breaker, retry overrides — then emits its one event; the caller holds
 * the worker URL's lock and has validated everything first (the registry's section 5 rule).
 */
export class RegistryState {
  readonly index: WorkerIndex;
  readonly hub: EventHub;
  readonly breakers: WorkerBreakers;
  readonly retryConfigs = new ModelRetryConfigs();
  /** Normalised URL → the id reserved for its next registration. */
  readonly #reserved = new Map<string, string>();
  readonly #defaultStatus: WorkerStatus;
  #nextId = 1;

  constructor(
    index: WorkerIndex,
    hub: EventHub,
    breakers: WorkerBreakers,
    defaultStatus: WorkerStatus,
  ) {
    this.index = index;
    this.hub = hub;
    this.breakers = breakers;
    this.#defaultStatus = defaultStatus;
  }

  /** Ids reserved for URLs no live worker has yet. O(1). */
  get reservations(): number {
    return this.#reserved.size;
  }

  /** The id of the live worker with exactly this URL, else the id reserved for it. O(1). */
  idOf(url: string): string | undefined {
    return this.index.idByUrl(url) ?? this.#reserved.get(url);
  }

  /** The live worker's id for `url`, else its reservation, else a new reservation. O(1). */
  reserve(url: string): string {
    const live = this.index.idByUrl(url);
    if (live !== undefined) return live;
    let id = this.#reserved.get(url);
    if (id === undefined) {
      id = this.#newId();
      this.#reserved.set(url, id);
    }
    return id;
  }

  /** Forgets the reservation of `url`, if any. O(1). */
  dropReservation(url: string): void {
    this.#reserved.delete(url);
  }

  /**
   * Adds a worker for `spec` under the id reserved for its URL (or a new one), with a new breaker.
   * Emits: `registered`. @returns the worker, at revision 0.
   */
  register(spec: ResolvedWorkerSpec): Worker {
    const id = this.#reserved.get(spec.url) ?? this.#newId();
    this.#reserved.delete(spec.url);
    const runtime = new WorkerRuntime(
      spec.status ?? this.#defaultStatus,
      this.breakers.create(spec),
    );
    const worker = workerInternals.create(id, 0, spec, runtime);
    this.index.add(worker);
    this.hub.emit({ type: 'registered', seq: 0, workerId: id, worker, status: runtime.status });
    return worker;
  }

  /**
   * The next revision of `current` with `spec` (same runtime; a new breaker when its settings
   * changed); drops the retry overrides of models no worker names any more.
   * Emits: `replaced`. @returns the new worker object.
   */
  replace(current: Worker, spec: ResolvedWorkerSpec): Worker {
    const runtime = workerInternals.runtimeOf(current);
    this.breakers.refresh(runtime, spec);
    const next = workerInternals.create(current.id, current.revision + 1, spec, runtime);
    this.index.replace(current, next);
    this.retryConfigs.dropOrphans(current.models, (m) => this.index.hasModel(m));
    this.hub.emit({ type: 'replaced', seq: 0, workerId: current.id, old: current, new: next });
    return next;
  }

  /** Takes `worker` out (it is never live again). Emits: `removed`. @returns the worker. */
  remove(worker: Worker): Worker {
    this.index.remove(worker);
    workerInternals.runtimeOf(worker).live = false;
    this.retryConfigs.dropOrphans(worker.models, (m) => this.index.hasModel(m));
    this.hub.emit({ type: 'removed', seq: 0, workerId: worker.id, worker });
    return worker;
  }

  /**
   * Sets `worker`'s status to `to`, unless it has it already, or `onlyFrom` is given and its
   * status is another. Emits: `statusChanged` on a change.
   * @returns `{ from, to }`, or `undefined` when nothing changed.
   */
  setStatus(
    worker: Worker,
    to: WorkerStatus,
    onlyFrom: WorkerStatus | undefined,
  ): StatusTransition | undefined {
    const runtime = workerInternals.runtimeOf(worker);
    const from = runtime.status;
    if (from === to || (onlyFrom !== undefined && from !== onlyFrom)) return undefined;
    runtime.status = to;
    this.hub.emit({ type: 'statusChanged', seq: 0, workerId: worker.id, worker, from, to });
    return { from, to };
  }

  /** Brings every worker's breaker in line with the current defaults. Emits nothing. O(n). */
  refreshBreakers(): void {
    for (const worker of this.index.all()) {
      this.breakers.refresh(workerInternals.runtimeOf(worker), workerInternals.specOf(worker));
    }
  }

  #newId(): string {
    return `worker-${this.#nextId++}`;
  }
}
