/**
 * `EngineRestarts`: a router's restart detection — the engine start times its load reports carry,
 * and what a restart sets off: every policy's `workerRestarted`, then the `workerRestarted`
 * event.
 *
 * @module
 * @internal
 */
import type { Policy, WorkerRestart } from '../policies/policy.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { LoadReport } from '../workers/load-report.js';
import { type Worker, workerInternals } from '../workers/worker.js';
import type { RouterEvents } from './router-events.js';
import { StartTimes } from './start-times.js';

/** What `workerRestarted` is told: shared, frozen, so a restart allocates nothing for it. */
const BY_HEALTH: WorkerRestart = Object.freeze({ detectedBy: 'health' });
const BY_START_TIME: WorkerRestart = Object.freeze({ detectedBy: 'start_time' });

/**
 * @internal A restart shows two ways: a load report's `startedAt` differs from the one seen before
 * for its worker ({@link EngineRestarts.observe}), or the health loop saw a ready worker fail and
 * come back ({@link EngineRestarts.cameBack}). Either way every policy's `workerRestarted(url,
 * { detectedBy })` is called (one that throws does not stop the others), then `workerRestarted`
 * is emitted. Emits: `workerRestarted` · Cost: O(policies) per restart; O(reports) per round.
 */
export class EngineRestarts {
  /** Each worker's engine start time from its load reports: a change is a restart. */
  readonly #startTimes = new StartTimes();
  readonly #registry: WorkerRegistry;
  readonly #policies: () => readonly Policy[];
  readonly #events: RouterEvents;
  readonly #onStartChanged = (url: string): void => {
    const worker = this.#registry.getByUrl(url);
    if (worker !== undefined) this.#restarted(worker, 'start_time');
  };

  /** @param policies - every policy of the router, read at each restart. */
  constructor(registry: WorkerRegistry, policies: () => readonly Policy[], events: RouterEvents) {
    this.#registry = registry;
    this.#policies = policies;
    this.#events = events;
  }

  /**
   * Reads the start times of a round of reports, before the policies get it: each worker whose
   * start time changed restarted (`start_time`), in the reports' order.
   */
  observe(reports: ReadonlyMap<string, LoadReport>): void {
    this.#startTimes.observe(reports, this.#onStartChanged);
  }

  /** The health loop saw `worker` fail and come back: it restarted (`health`). */
  cameBack(worker: Worker): void {
    // Its next start time is a first value, not a second restart.
    this.#startTimes.forget(worker.url);
    this.#restarted(worker, 'health');
  }

  /** Forgets the start time of a worker removed from the registry. O(1). */
  forget(url: string): void {
    this.#startTimes.forget(url);
  }

  /**
   * The engine behind `worker` restarted: every policy forgets what it believed its cache held
   * (`workerRestarted(url, { detectedBy })`; one that throws does not stop the others), then
   * `workerRestarted` is emitted.
   */
  #restarted(worker: Worker, detectedBy: WorkerRestart['detectedBy']): void {
    const restart = detectedBy === 'health' ? BY_HEALTH : BY_START_TIME;
    // A restarted engine may run at another speed (another GPU, another version).
    workerInternals.runtimeOf(worker).forgetPrefillSpeed();
    for (const policy of this.#policies()) {
      try {
        policy.workerRestarted?.(worker.url, restart);
      } catch {
        // A policy that throws must not stop the others.
      }
    }
    this.#events.workerRestarted(worker, detectedBy);
  }
}
