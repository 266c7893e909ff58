/**
 * `RouterEvents`: a router's observation events — the listeners per event type, the emit that
 * survives a throwing listener, and the builders of every event the router itself reports
 * (decisions, probes, load rounds, status changes, engine restarts, breaker changes, calls with
 * no worker, shared-state changes, and how an `execute` call ended). The events of a call's
 * attempts are built by its {@link CallObserver}, which emits through this object.
 *
 * **Zero cost when unobserved.** Every builder returns before building anything while its event
 * type has no listener; the router reads {@link RouterEvents.listening} itself where even the
 * call would cost (around `policy.select`, an `execute` call, the reason of a no-worker).
 *
 * @module
 * @internal
 */
import { EventEmitter } from 'eventemitter3';
import type { NoWorkerReason } from '../core/errors.js';
import { type Logger, log } from '../core/logger.js';
import type { Policy, SelectRequest, WorkerRestart } from '../policies/policy.js';
import type { CircuitState } from '../resilience/circuit-breaker.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';
import type { WorkerStatus } from '../workers/worker-spec.js';
import {
  CallObserver,
  type ObservationSink,
  observeExecution,
  observesCalls,
} from './call-observer.js';
import type { PollRound } from './load-poller.js';
import type { DecisionEvent, RouterEventMap, RouterObservationType } from './observations.js';
import type { RetryLoop } from './retry-loop.js';
import type { SharedStateEvent } from './shared-state.js';

/**
 * @internal The observation events of one router. Emits: what its methods name, each only while
 * that event type has a listener · Locks: none · Cost: one object per event built; nothing for
 * an event type nobody listens to.
 */
export class RouterEvents implements ObservationSink {
  /** Listeners per event type, kept by `on`/`off`: an event nobody listens to is never built. */
  readonly listening: Record<RouterObservationType, number> = {
    circuitChanged: 0,
    decision: 0,
    attempt: 0,
    executed: 0,
    firstToken: 0,
    usage: 0,
    retry: 0,
    noWorker: 0,
    probe: 0,
    statusChanged: 0,
    workerRestarted: 0,
    loadsPolled: 0,
    sharedState: 0,
    admission: 0,
  };
  readonly #emitter = new EventEmitter<RouterEventMap>();
  readonly #logger: Logger | undefined;

  /** @param logger - where a throwing listener is reported (else a process warning). */
  constructor(logger: Logger | undefined) {
    this.#logger = logger;
  }

  /** Adds a listener and recounts its type. */
  on<K extends RouterObservationType>(type: K, listener: RouterEventMap[K]): void {
    this.#emitter.on(type, listener as never);
    this.listening[type] = this.#emitter.listenerCount(type);
  }

  /** Removes a listener and recounts its type. */
  off<K extends RouterObservationType>(type: K, listener: RouterEventMap[K]): void {
    this.#emitter.off(type, listener as never);
    this.listening[type] = this.#emitter.listenerCount(type);
  }

  /**
   * Emits an observation; a listener that throws is reported once per listener (a process
   * warning) and routing goes on.
   */
  emit<K extends RouterObservationType>(type: K, event: Parameters<RouterEventMap[K]>[0]): void {
    const listeners = this.#emitter.listeners(type) as ((e: typeof event) => void)[];
    for (const listener of listeners) {
      try {
        listener(event);
      } catch (error) {
        warnListener(this.#logger, listener, type, error);
      }
    }
  }

  /** The observer of an `execute` call: `undefined` while nobody listens to its attempts. */
  observer(request: SelectRequest): CallObserver | undefined {
    return observesCalls(this.listening) ? new CallObserver(this, request) : undefined;
  }

  /**
   * Runs `loop` and emits `executed` when it ends (see {@link observeExecution}). Call it only
   * while `executed` has a listener; otherwise run the loop alone.
   */
  execution<T>(
    request: SelectRequest,
    loop: RetryLoop<T>,
    signal: AbortSignal | undefined,
    closed: () => boolean,
  ): Promise<T> {
    return observeExecution(this, request, loop, signal, closed);
  }

  /**
   * `policy.select(candidates, request)`, timed, then a `decision` event with the policy's
   * explanation. Call it only while `decision` has a listener; otherwise select directly.
   * Cost: two clock reads and one object.
   */
  decide(
    policy: Policy,
    candidates: readonly Worker[],
    request: SelectRequest,
    model: string | undefined,
    attempt: number,
  ): Worker | undefined {
    const started = performance.now();
    const worker = policy.select(candidates, request);
    const durationMs = performance.now() - started;
    const why = policy.explain?.();
    const event: DecisionEvent = {
      type: 'decision',
      model,
      policy: policy.name,
      worker,
      branch: why?.branch,
      matched: why?.matched,
      attempt,
      durationMs,
    };
    this.emit('decision', event);
    return worker;
  }

  /** A health probe of `worker` ended. */
  probe(worker: Worker, ok: boolean, timedOut: boolean, durationMs: number): void {
    if (this.listening.probe === 0) return;
    this.emit('probe', {
      type: 'probe',
      workerId: worker.id,
      url: worker.url,
      ok,
      timedOut,
      durationMs,
    });
  }

  /** A load-polling round delivered `reports` to the policies. */
  loadsPolled(reports: ReadonlyMap<string, LoadReport>, round: PollRound): void {
    if (this.listening.loadsPolled === 0) return;
    this.emit('loadsPolled', {
      type: 'loadsPolled',
      reports: reports.size,
      failed: round.polled - reports.size,
      durationMs: round.durationMs,
      stale: round.stale,
      oldestReportAgeMs: round.oldestReportAgeMs,
    });
  }

  /** The registry's `statusChanged` for `worker`, forwarded. */
  statusChanged(workerId: string, worker: Worker, from: WorkerStatus, to: WorkerStatus): void {
    if (this.listening.statusChanged === 0) return;
    this.emit('statusChanged', { type: 'statusChanged', workerId, url: worker.url, from, to });
  }

  /** The engine behind `worker` restarted (the policies were told already). */
  workerRestarted(worker: Worker, detectedBy: WorkerRestart['detectedBy']): void {
    if (this.listening.workerRestarted === 0) return;
    this.emit('workerRestarted', {
      type: 'workerRestarted',
      workerId: worker.id,
      url: worker.url,
      detectedBy,
    });
  }

  /**
   * No worker was available for `request`. Call it only while `noWorker` has a listener (the
   * caller then works out the reason).
   */
  noWorker(request: SelectRequest, reason: NoWorkerReason): void {
    const model = typeof request.model === 'string' ? request.model : undefined;
    this.emit('noWorker', { type: 'noWorker', model, reason });
  }

  /** What the shared state reports (degraded, recovered, …). */
  sharedState(event: SharedStateEvent): void {
    if (this.listening.sharedState !== 0) this.emit('sharedState', event);
  }

  /**
   * Emits `circuitChanged`, straight through the emitter: called only through the breaker's
   * observer, so a listener that throws is caught by the breaker (and cannot break the lease or
   * probe that moved it).
   */
  circuitChanged(worker: Worker, from: CircuitState, to: CircuitState): void {
    this.#emitter.emit('circuitChanged', {
      type: 'circuitChanged',
      workerId: worker.id,
      url: worker.url,
      from,
      to,
    });
  }

  /** Removes every listener. */
  close(): void {
    this.#emitter.removeAllListeners();
  }
}

/** Listeners already reported as throwing (one warning each). */
const warned = new WeakSet<object>();

function warnListener(
  logger: Logger | undefined,
  listener: object,
  type: string,
  error: unknown,
): void {
  if (warned.has(listener)) return;
  warned.add(listener);
  const reason = error instanceof Error ? error.message : String(error);
  log(
    logger,
    'warn',
    'FLEETROUTE_LISTENER_THREW',
    `a router '${type}' listener threw (${reason}); routing goes on`,
    { event: type },
  );
}
