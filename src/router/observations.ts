/**
 * What a `Router` reports as it routes: typed observation events, built only when someone
 * listens, for metrics, traces and logs.
 *
 * @module
 */
import type { AdmissionEvent } from '../admission/admission-events.js';
import type { NoWorkerReason } from '../core/errors.js';
import type { PolicyName, WorkerRestart } from '../policies/policy.js';
import type { CircuitState } from '../resilience/circuit-breaker.js';
import type { Worker } from '../workers/worker.js';
import type { WorkerStatus } from '../workers/worker-spec.js';
import type { SharedStateEvent } from './shared-state.js';

/** A worker's circuit breaker changed state. @public */
export interface CircuitChangedEvent {
  readonly type: 'circuitChanged';
  readonly workerId: string;
  readonly url: string;
  readonly from: CircuitState;
  readonly to: CircuitState;
}

/**
 * A policy picked a worker (or none) for a request: `router.select`, and every attempt of
 * `router.execute`.
 *
 * @public
 */
export interface DecisionEvent {
  readonly type: 'decision';
  /** The request's model (`undefined`: none named). */
  readonly model: string | undefined;
  /** The policy that decided. */
  readonly policy: PolicyName;
  /** The worker picked; `undefined` when none was available. */
  readonly worker: Worker | undefined;
  /**
   * Why, as the policy tells it (`Policy.explain`): `cache_aware`'s reason (`cache_hit`,
   * `cache_miss`, `event_overlap`, …); `undefined` for policies that do not say.
   */
  readonly branch: string | undefined;
  /** `cache_aware`: the share of the prompt its match covered (0 … 1), when it matched. */
  readonly matched: number | undefined;
  /** 1 for `select` and a call's first attempt; 2, 3, … for retries. */
  readonly attempt: number;
  /** Time the policy took to decide, in ms (`performance.now` resolution). */
  readonly durationMs: number;
}

/** One attempt of `router.execute` ended. @public */
export interface AttemptEvent {
  readonly type: 'attempt';
  readonly model: string | undefined;
  readonly worker: Worker;
  readonly attempt: number;
  /**
   * `success`: `send` resolved with a success; `status`: it resolved with a failure status
   * (the breaker's `failureStatuses`); `error`: it threw; `aborted`: the caller's signal ended it.
   */
  readonly outcome: 'success' | 'status' | 'error' | 'aborted';
  /** The response's status, when it had one. */
  readonly status: number | undefined;
  /** What `send` threw, for `error`. */
  readonly error: unknown;
  /** From the lease to the outcome, in ms. */
  readonly durationMs: number;
}

/**
 * An attempt of `router.execute` produced its first output token (`firstToken()` was called):
 * once per attempt, at its first call.
 *
 * @public
 */
export interface FirstTokenEvent {
  readonly type: 'firstToken';
  readonly model: string | undefined;
  readonly worker: Worker;
  readonly attempt: number;
  /** From the start of the `execute` call to the first token, in ms: what the caller waited, retries included. */
  readonly timeToFirstTokenMs: number;
  /** From the start of this attempt to the first token, in ms: the worker's own time to first token. */
  readonly attemptMs: number;
}

/**
 * An attempt of `router.execute` reported its answer's token counts (`usage()`): once per
 * attempt, at its first valid report.
 *
 * @public
 */
export interface UsageEvent {
  readonly type: 'usage';
  readonly model: string | undefined;
  readonly worker: Worker;
  readonly attempt: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  /** Prompt tokens the engine served from its prefix cache; `undefined` when it did not say. */
  readonly cachedTokens: number | undefined;
}

/** A `router.execute` call ended. @public */
export interface ExecutedEvent {
  readonly type: 'executed';
  readonly model: string | undefined;
  /**
   * `success`: it returned a success; `failed`: it returned a failure response (every attempt
   * failed); `error`: it threw what `send` threw; `no_worker`: no worker was available;
   * `aborted`: the caller's signal ended it; `closed`: the router closed.
   */
  readonly outcome: 'success' | 'failed' | 'error' | 'no_worker' | 'aborted' | 'closed';
  /** Attempts made (`send` calls). */
  readonly attempts: number;
  /** The returned response's status, when it had one. */
  readonly status: number | undefined;
  /** From the call to its end, retries and waits included, in ms. */
  readonly durationMs: number;
}

/** `router.execute` will try another worker after `delayMs`. @public */
export interface RetryScheduledEvent {
  readonly type: 'retry';
  readonly model: string | undefined;
  /** The worker of the failed attempt. */
  readonly worker: Worker;
  /** The failed attempt's number. */
  readonly attempt: number;
  readonly delayMs: number;
  /** What failed: a failure status, or a thrown error. */
  readonly cause: 'status' | 'error';
  readonly status: number | undefined;
}

/** No worker was available for a request. @public */
export interface NoWorkerEvent {
  readonly type: 'noWorker';
  readonly model: string | undefined;
  /**
   * Why, as on the `NO_WORKER` error `execute` throws: `unknown_model` when no registered worker
   * serves the model (for `selectPair`: no prefill or no decode worker is registered),
   * `unavailable` when some do but none is available now.
   */
  readonly reason: NoWorkerReason;
}

/** A health probe answered (or failed, or timed out). @public */
export interface ProbeEvent {
  readonly type: 'probe';
  readonly workerId: string;
  readonly url: string;
  readonly ok: boolean;
  /** The probe was cut off by the health config's `timeoutMs`. */
  readonly timedOut: boolean;
  readonly durationMs: number;
}

/** A worker's status changed (the registry's `statusChanged`, forwarded). @public */
export interface WorkerStatusEvent {
  readonly type: 'statusChanged';
  readonly workerId: string;
  readonly url: string;
  readonly from: WorkerStatus;
  readonly to: WorkerStatus;
}

/**
 * The engine behind a worker restarted, so its prefix cache is empty; every policy was told
 * (`Policy.workerRestarted`, with the same `detectedBy`), and `cache_aware` forgot what it
 * believed that cache held (on a start-time detection, what it learned before the worker's
 * previous report).
 *
 * @public
 */
export interface WorkerRestartedEvent {
  readonly type: 'workerRestarted';
  readonly workerId: string;
  readonly url: string;
  /**
   * How the restart showed: `health`, the health loop had taken the worker out of `ready` on
   * failed probes and it is `ready` again; `start_time`, its load report's `startedAt` (the
   * engine's `process_start_time_seconds`) changed from the one seen before — a restart too
   * quick for the health loop to notice.
   */
  readonly detectedBy: WorkerRestart['detectedBy'];
}

/** A load-polling round delivered its reports to the policies. @public */
export interface LoadsPolledEvent {
  readonly type: 'loadsPolled';
  /** Workers whose report arrived in this round. */
  readonly reports: number;
  /** Workers polled whose report did not (failed, timed out, or unreadable). */
  readonly failed: number;
  readonly durationMs: number;
  /**
   * Ready workers whose last report is older than `loadPolling.staleAfterMs` (their policies
   * route them by in-flight counts alone).
   */
  readonly stale: number;
  /** How old the oldest last report among the ready workers is, in ms (0: all fresh). */
  readonly oldestReportAgeMs: number;
}

/** Every observation event of a `Router`, discriminated on `type`. @public */
export type RouterObservation =
  | CircuitChangedEvent
  | DecisionEvent
  | AttemptEvent
  | ExecutedEvent
  | FirstTokenEvent
  | UsageEvent
  | RetryScheduledEvent
  | NoWorkerEvent
  | ProbeEvent
  | WorkerStatusEvent
  | WorkerRestartedEvent
  | LoadsPolledEvent
  | SharedStateEvent
  | AdmissionEvent;

/** Listener signatures of `router.on(...)`: one per event `type`. @public */
export interface RouterEventMap {
  circuitChanged: (event: CircuitChangedEvent) => void;
  decision: (event: DecisionEvent) => void;
  attempt: (event: AttemptEvent) => void;
  executed: (event: ExecutedEvent) => void;
  firstToken: (event: FirstTokenEvent) => void;
  usage: (event: UsageEvent) => void;
  retry: (event: RetryScheduledEvent) => void;
  noWorker: (event: NoWorkerEvent) => void;
  probe: (event: ProbeEvent) => void;
  statusChanged: (event: WorkerStatusEvent) => void;
  workerRestarted: (event: WorkerRestartedEvent) => void;
  loadsPolled: (event: LoadsPolledEvent) => void;
  sharedState: (event: SharedStateEvent) => void;
  admission: (event: AdmissionEvent) => void;
}

/** The `type` of a {@link RouterObservation}. @public */
export type RouterObservationType = keyof RouterEventMap;
