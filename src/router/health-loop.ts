/**
 * The health loop: probes every worker on its own schedule through the transport and moves its
 * status through the state machine.
 *
 * @module
 * @internal
 */
import { AbortScope } from '../core/abort.js';
import { backgroundTimeout, callWithDeadline } from '../core/bounded-wait.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import { type ResolvedHealthConfig, resolveHealthConfig } from '../resilience/health-config.js';
import type { Transport } from '../transport/transport.js';
import type { Worker } from '../workers/worker.js';
import type { WorkerStatus } from '../workers/worker-spec.js';
import { TaskLimiter } from './task-limiter.js';

/** One worker's probe bookkeeping. */
interface Probed {
  readonly id: string;
  config: ResolvedHealthConfig;
  successes: number;
  failures: number;
  /** +1 on every replace: an answer for an older generation is discarded. */
  generation: number;
  /** A probe failed while the worker's breaker was open, and none has succeeded since. */
  failedWhileOpen: boolean;
  timer: ReturnType<typeof setTimeout> | undefined;
  /**
   * Whether this loop took the worker out of `ready` on failed probes and has not seen it ready
   * since (see {@link HealthLoop.cameBack}). Kept across a replace: the engine failed either way.
   */
  down: boolean;
  /** The probe in flight, aborted when probing stops or the worker is replaced. */
  scope: AbortScope | undefined;
  stopped: boolean;
}

/** What the loop reports about its work (for the router's stats). @internal */
export interface HealthLoopStats {
  probes: number;
  failures: number;
  timeouts: number;
  transitions: number;
}

const TERMINAL: ReadonlySet<WorkerStatus> = new Set(['failed', 'draining']);

/**
 * @internal The state machine, per worker (s = successThreshold, f = failureThreshold):
 * pending → ready after s consecutive successes, → failed after 10·f consecutive failures;
 * ready → not_ready after f consecutive failures; not_ready → ready after s successes, → failed
 * after 3·f consecutive failures. `failed` and `draining` are terminal: probing stops (and a
 * failed worker is removed when `removeFailed` is set). A probe's answer is applied with the
 * revision seen when it was launched and the status seen when it arrived, so an answer about a
 * replaced worker, or one overtaken by a status set meanwhile, changes nothing. New workers are
 * probed at once, then every `startupIntervalMs` while on their way to ready (backing off while
 * a pending worker keeps failing), then every `intervalMs`.
 *
 * Probes also end an open breaker's wait: when the loop moves a worker from `not_ready` back to
 * `ready`, or a probe succeeds after one failed while the worker's breaker was open, an open
 * breaker turns half-open at once (`CircuitBreaker.halfOpen`), so a restarted engine gets trial
 * requests within a probe interval rather than after `openMs`.
 */
export class HealthLoop {
  readonly #registry: WorkerRegistry;
  readonly #transport: Transport;
  readonly #config: ResolvedHealthConfig;
  readonly #limiter: TaskLimiter;
  readonly #workers = new Map<string, Probed>();
  readonly stats: HealthLoopStats = { probes: 0, failures: 0, timeouts: 0, transitions: 0 };
  /** Told of every probe's answer, when someone listens (see `Router`'s `probe` event). */
  readonly #onProbe:
    | ((worker: Worker, ok: boolean, timedOut: boolean, ms: number) => void)
    | undefined;
  #closed = false;

  constructor(
    registry: WorkerRegistry,
    transport: Transport,
    config: ResolvedHealthConfig,
    maxInFlight: number,
    onProbe?: (worker: Worker, ok: boolean, timedOut: boolean, ms: number) => void,
  ) {
    this.#registry = registry;
    this.#transport = transport;
    this.#config = config;
    this.#limiter = new TaskLimiter(maxInFlight);
    this.#onProbe = onProbe;
  }

  /** Starts (or restarts, after a replace) probing a worker, with a probe right away. */
  track(worker: Worker): void {
    if (this.#closed) return;
    let probed = this.#workers.get(worker.id);
    if (probed === undefined) {
      probed = {
        id: worker.id,
        config: this.#configFor(worker),
        successes: 0,
        failures: 0,
        generation: 0,
        failedWhileOpen: false,
        timer: undefined,
        down: false,
        scope: undefined,
        stopped: false,
      };
      this.#workers.set(worker.id, probed);
    } else {
      // A replace: forget the counts, discard the answer in flight, probe the new revision now.
      probed.generation++;
      probed.successes = 0;
      probed.failures = 0;
      probed.failedWhileOpen = false;
      probed.config = this.#configFor(worker);
      probed.scope?.abort();
      probed.stopped = false;
    }
    if (TERMINAL.has(worker.status)) {
      this.#stop(probed);
      return;
    }
    this.#schedule(probed, 0);
  }

  /** Stops probing a worker (removed, or terminal). */
  untrack(id: string): void {
    const probed = this.#workers.get(id);
    if (probed === undefined) return;
    this.#stop(probed);
    this.#workers.delete(id);
  }

  /** A status set from outside: terminal statuses stop the probes. */
  statusChanged(worker: Worker): void {
    const probed = this.#workers.get(worker.id);
    if (probed !== undefined && TERMINAL.has(worker.status)) this.#stop(probed);
  }

  /**
   * Asked when a worker goes from `not_ready` to `ready` (whoever set it): whether this loop had
   * taken it out of `ready` on failed probes — the engine failed and is back, so it may have
   * restarted with an empty cache. Clears the mark, so one comeback answers `true` once. O(1).
   */
  cameBack(id: string): boolean {
    const probed = this.#workers.get(id);
    if (probed === undefined || !probed.down) return false;
    probed.down = false;
    return true;
  }

  /** Stops every timer and aborts every probe. Probes that ignore the abort are abandoned. */
  close(): void {
    this.#closed = true;
    for (const probed of this.#workers.values()) this.#stop(probed);
    this.#workers.clear();
    this.#limiter.clear();
  }

  #configFor(worker: Worker): ResolvedHealthConfig {
    return worker.health === undefined
      ? this.#config
      : resolveHealthConfig(worker.health, 'health', this.#config);
  }

  #stop(probed: Probed): void {
    probed.stopped = true;
    if (probed.timer !== undefined) clearTimeout(probed.timer);
    probed.timer = undefined;
    probed.scope?.abort();
    probed.scope = undefined;
  }

  #schedule(probed: Probed, delay: number): void {
    if (probed.stopped || this.#closed) return;
    if (probed.timer !== undefined) clearTimeout(probed.timer);
    probed.timer = setTimeout(() => {
      probed.timer = undefined;
      this.#limiter.run(() => this.#probe(probed));
    }, delay);
    probed.timer.unref?.();
  }

  /** One probe, bounded by the timeout; resolves when it is settled or abandoned. */
  async #probe(probed: Probed): Promise<void> {
    const worker = this.#registry.get(probed.id);
    if (probed.stopped || this.#closed || worker === undefined) return;
    const generation = probed.generation;
    const revision = worker.revision;
    this.stats.probes++;
    const scope = new AbortScope(undefined, backgroundTimeout(probed.config.timeoutMs));
    probed.scope = scope;
    const started = performance.now();
    const healthy = await callWithDeadline(
      (signal) => this.#transport.probe(worker, signal),
      scope,
    );
    if (probed.scope === scope) probed.scope = undefined;
    if (scope.timedOut) this.stats.timeouts++;
    if (!this.#closed)
      this.#onProbe?.(worker, healthy === true, scope.timedOut, performance.now() - started);
    // Stopped, closed or replaced meanwhile: the answer no longer applies.
    if (probed.stopped || this.#closed || probed.generation !== generation) return;
    this.#answer(probed, healthy === true, revision);
  }

  /** Applies one probe's answer about `revision` and schedules the next probe. */
  #answer(probed: Probed, healthy: boolean, revision: number): void {
    const worker = this.#registry.get(probed.id);
    if (worker === undefined || worker.revision !== revision) return; // an answer about the past
    this.#watchBreaker(probed, healthy, worker);
    const from = worker.status;
    // Made ready by someone else since this loop took it down: that comeback has passed.
    if (from === 'ready') probed.down = false;
    const to = this.#decide(probed, healthy, from);
    if (to !== undefined) void this.#commit(probed, from, to, revision); // never rejects
    this.#schedule(probed, this.#nextDelay(probed, healthy, from, to));
  }

  /**
   * A probe that failed while the breaker was open, then one that succeeded: the worker is back,
   * so an open breaker need not wait out `openMs` (a no-op on a breaker that is not open).
   */
  #watchBreaker(probed: Probed, healthy: boolean, worker: Worker): void {
    const breaker = worker.circuitBreaker;
    if (!healthy) {
      if (breaker.state === 'open') probed.failedWhileOpen = true;
    } else if (probed.failedWhileOpen) {
      probed.failedWhileOpen = false;
      breaker.halfOpen();
    }
  }

  /**
   * Counts one probe's answer and decides the transition it calls for, from the status the
   * worker had when the answer arrived (`undefined`: none).
   */
  #decide(probed: Probed, healthy: boolean, status: WorkerStatus): WorkerStatus | undefined {
    const { successThreshold: s, failureThreshold: f } = probed.config;
    if (healthy) {
      probed.failures = 0;
      probed.successes++;
      if ((status === 'pending' || status === 'not_ready') && probed.successes >= s) return 'ready';
      return undefined;
    }
    this.stats.failures++;
    probed.successes = 0;
    probed.failures++;
    if (status === 'ready' && probed.failures >= f) return 'not_ready';
    if (status === 'not_ready' && probed.failures >= 3 * f) return 'failed';
    if (status === 'pending' && probed.failures >= 10 * f) return 'failed';
    return undefined;
  }

  /**
   * When to probe next: soon while a worker is on its way to ready (a success short of the
   * threshold, or a pending worker backing off from `startupIntervalMs`), else `intervalMs`.
   */
  #nextDelay(
    probed: Probed,
    healthy: boolean,
    from: WorkerStatus,
    to: WorkerStatus | undefined,
  ): number {
    const { intervalMs, startupIntervalMs } = probed.config;
    if (to !== undefined || from === 'ready') return intervalMs;
    if (healthy) return Math.min(startupIntervalMs, intervalMs);
    if (from !== 'pending') return intervalMs;
    const backoff = startupIntervalMs * 2 ** Math.min(probed.failures - 1, 30);
    return Math.min(backoff, intervalMs);
  }

  /**
   * Applies a decided transition, only if the worker is still at the revision and in the status
   * the decision was made from: a status set meanwhile (a `draining` from the operator, say)
   * wins, and the answer is dropped.
   */
  async #commit(
    probed: Probed,
    from: WorkerStatus,
    to: WorkerStatus,
    revision: number,
  ): Promise<void> {
    // Marked before the change, whose `statusChanged` event is emitted before the call returns.
    const down = from === 'ready' && to === 'not_ready';
    if (down) probed.down = true;
    try {
      const changed = await this.#registry.transitionStatus(probed.id, to, {
        expectedRevision: revision,
        expectedStatus: from,
      });
      if (changed === undefined) {
        if (down) probed.down = false;
        return; // a status set meanwhile wins
      }
      this.stats.transitions++;
      // Back from not_ready: the worker serves again, so its breaker admits trials now.
      if (from === 'not_ready' && to === 'ready')
        this.#registry.get(probed.id)?.circuitBreaker.halfOpen();
      if (to === 'failed') {
        this.#stop(probed);
        if (probed.config.removeFailed) await this.#registry.remove(probed.id);
      }
    } catch {
      // Replaced, removed or closed meanwhile: the answer no longer applies.
      if (down) probed.down = false;
    }
  }
}
