/**
 * `RetryLoop`: the attempts of one `Router.execute` call, a different worker each, with a
 * replaceable decision and an observer between them.
 *
 * @module
 * @internal
 */
import { untilAborted } from '../core/abort.js';
import { FleetRouteError, type NoWorkerReason } from '../core/errors.js';
import { describe } from '../core/options.js';
import type { SelectRequest } from '../policies/policy.js';
import type { ResolvedRetryConfig } from '../resilience/retry-config.js';
import type { Worker, WorkerLease } from '../workers/worker.js';
import { retryAfterMs, sleep } from './retry.js';
import {
  type AttemptContext,
  defaultDelay,
  isDelay,
  type RetryDecision,
  type RetryEvent,
  type RetryOutcome,
  type ShouldRetry,
} from './retry-decision.js';

/** @internal One call: what to send, with which settings, under which signal. */
export interface RetryCall<T> {
  readonly request: SelectRequest;
  readonly send: (worker: Worker, context: AttemptContext) => Promise<T>;
  /** The call's settings: the router's, under the model's override. */
  readonly config: ResolvedRetryConfig;
  /** Aborts when the caller's signal aborts or the router closes. */
  readonly signal: AbortSignal;
  /** The call's admission, released once its first attempt holds a lease (or when it ends). */
  readonly admitted?: { release(): void } | undefined;
}

/** @internal Told of a call's attempts and retries, when someone listens. */
export interface RetryObserver {
  /** When the call started (`performance.now()`): the origin of its time to first token. */
  readonly started: number;
  attempt(
    worker: Worker,
    attempt: number,
    outcome: 'success' | 'status' | 'error' | 'aborted',
    status: number | undefined,
    error: unknown,
    durationMs: number,
  ): void;
  retry(
    worker: Worker,
    attempt: number,
    delayMs: number,
    cause: 'status' | 'error',
    status: number | undefined,
  ): void;
  noWorker(reason: NoWorkerReason): void;
  /** The attempt's first token, its first `firstToken()` call (`started`: the attempt's start). */
  firstToken(worker: Worker, attempt: number, started: number): void;
  /**
   * The attempt's `usage()` call.
   * @returns whether the report was valid and taken (later calls of the attempt are then ignored).
   */
  usage(worker: Worker, attempt: number, reported: unknown): boolean;
}

/** @internal What the router lends every loop: one object per router, shared by its calls. */
export interface RetryHost {
  /** The policy of `request`'s model over its workers, without the `tried` ones. */
  pick(request: SelectRequest, tried: ReadonlySet<Worker>): Worker | undefined;
  /** The share of the prompt the last pick's policy matched on the worker it picked. */
  matched?(): number | undefined;
  /** A lease on `worker`. */
  lease(worker: Worker): WorkerLease;
  /** Counts one attempt made, one retry scheduled, or one call that found no worker at all. */
  count(what: 'attempts' | 'retries' | 'noWorker'): void;
  /** Why no worker was available for `request` (asked only when none was). */
  noWorkerReason(request: SelectRequest): NoWorkerReason;
  readonly random: () => number;
  readonly shouldRetry: ShouldRetry | undefined;
  readonly onRetry: ((event: RetryEvent) => void) | undefined;
  /** Says a warning (the router's logger, else a process warning). */
  warn(message: string): void;
  /** The observer of a call (asked once per call); `undefined` when nobody listens. */
  observer(request: SelectRequest): RetryObserver | undefined;
}

/** An attempt that succeeded, or how it failed. */
type Attempted<T> = { readonly kind: 'success'; readonly value: T } | RetryOutcome;

/**
 * @internal The state machine of one call. Each attempt picks a worker not tried yet, leases it,
 * calls `send` (raced against the signal, so a `send` that ignores it is abandoned), and releases
 * the lease with the outcome: none when the caller aborted, since that says nothing about the
 * worker. A success is returned at once; a caller's abort, `close()`, and an error thrown with
 * `retryable: false` end the call at once. Any other failure is put to the decision unless it was
 * the last of `maxAttempts`; a delay is reported to `onRetry`, then waited out (cancelled by an
 * abort). When the call ends without success, the last response that had a status is returned,
 * else the last error is thrown. Run it once.
 *
 * Cost: one `Set` per call; one outcome object per failed attempt; one event per retry, only
 * when `onRetry` is given.
 */
export class RetryLoop<T> {
  readonly #call: RetryCall<T>;
  readonly #host: RetryHost;
  readonly #tried = new Set<Worker>();
  #response: { readonly value: T } | undefined;
  #succeeded = false;
  #error: unknown;
  #byDefault: RetryDecision | undefined;
  readonly #observer: RetryObserver | undefined;

  constructor(call: RetryCall<T>, host: RetryHost) {
    this.#call = call;
    this.#host = host;
    this.#observer = host.observer(call.request);
  }

  /**
   * @returns the first success; when no attempt succeeded, the last response that had a status.
   * @throws the last error when no attempt returned a status; `NO_WORKER` when no worker was
   *   available at all; the signal's reason as soon as it aborts; an error marked
   *   `retryable: false` as soon as it is thrown.
   */
  /** Whether the call ended with a success (else with the last failure response). */
  get succeeded(): boolean {
    return this.#succeeded;
  }

  /** Attempts made so far (`send` calls). */
  get attempts(): number {
    return this.#tried.size;
  }

  /** When the call's observer started timing it; `undefined` when nobody listens. */
  get started(): number | undefined {
    return this.#observer?.started;
  }

  async run(): Promise<T> {
    const { config, signal } = this.#call;
    for (let attempt = 1; ; attempt++) {
      if (signal.aborted) throw signal.reason;
      const worker = this.#host.pick(this.#call.request, this.#tried);
      if (worker === undefined) {
        if (this.#tried.size === 0) throw this.#noWorker();
        break; // every available worker has been tried
      }
      this.#tried.add(worker);
      const attempted = await this.#attempt(worker, attempt);
      if (attempted.kind === 'success') {
        this.#succeeded = true;
        return attempted.value;
      }
      if (attempt >= config.maxAttempts) break;
      const delayMs = this.#decide(attempted, attempt);
      if (signal.aborted) throw signal.reason; // the decision may have aborted the call
      if (delayMs === false) break;
      this.#host.count('retries');
      this.#observer?.retry(
        attempted.worker,
        attempt,
        delayMs,
        attempted.kind,
        attempted.kind === 'status' ? attempted.status : undefined,
      );
      this.#notify(attempt, delayMs, attempted);
      await sleep(delayMs, signal);
    }
    if (this.#response !== undefined) return this.#response.value;
    throw this.#error;
  }

  /** One attempt on `worker`, its lease released with the outcome. */
  async #attempt(worker: Worker, attempt: number): Promise<Attempted<T>> {
    const observer = this.#observer;
    if (observer === undefined) return this.#try(worker, attempt);
    const started = performance.now();
    let attempted: Attempted<T>;
    try {
      attempted = await this.#try(worker, attempt, started);
    } catch (thrown) {
      const aborted = this.#call.signal.aborted;
      observer.attempt(
        worker,
        attempt,
        aborted ? 'aborted' : 'error',
        undefined,
        aborted ? undefined : thrown,
        performance.now() - started,
      );
      throw thrown;
    }
    const ms = performance.now() - started;
    if (attempted.kind === 'success') {
      observer.attempt(worker, attempt, 'success', statusOf(attempted.value), undefined, ms);
    } else if (attempted.kind === 'status') {
      observer.attempt(worker, attempt, 'status', attempted.status, undefined, ms);
    } else {
      observer.attempt(worker, attempt, 'error', undefined, attempted.error, ms);
    }
    return attempted;
  }

  async #try(worker: Worker, attempt: number, started = 0): Promise<Attempted<T>> {
    const { request, send, signal } = this.#call;
    // Read before anything else can pick: it describes this attempt's pick.
    const matched = this.#host.matched?.();
    const lease = this.#host.lease(worker);
    this.#call.admitted?.release();
    this.#host.count('attempts');
    try {
      const context = this.#context(worker, attempt, lease, started, matched);
      const value = await untilAborted(Promise.resolve(send(worker, context)), signal);
      const status = statusOf(value);
      if (status === undefined || !worker.circuitBreaker.config.failureStatuses.includes(status)) {
        lease.release(status === undefined ? { ok: true } : { ok: true, status });
        return { kind: 'success', value };
      }
      // A Retry-After puts this worker in a cooldown (its breaker's), not the call in a wait.
      const hint = retryAfterMs(value);
      lease.release(
        hint === undefined ? { ok: false, status } : { ok: false, status, retryAfterMs: hint },
      );
      this.#response = { value };
      return { kind: 'status', status, response: value, retryAfterMs: hint, worker, request };
    } catch (thrown) {
      // An attempt the caller aborted says nothing about the worker.
      lease.release(signal.aborted ? undefined : { ok: false });
      if (signal.aborted) throw signal.reason;
      if (isFinal(thrown)) throw thrown;
      this.#error = thrown;
      return { kind: 'error', error: thrown, worker, request };
    }
  }

  /**
   * What `send` gets. Unobserved, `usage` is a shared no-op; observed, `firstToken` and `usage`
   * report to the observer once each per attempt (its first call, its first valid report).
   */
  #context(
    worker: Worker,
    attempt: number,
    lease: WorkerLease,
    started: number,
    matched: number | undefined,
  ): AttemptContext {
    const { signal } = this.#call;
    const observer = this.#observer;
    if (observer === undefined) {
      const firstToken = (): void => {
        lease.firstToken();
      };
      return { signal, attempt, matched, firstToken, usage: ignoreUsage };
    }
    let tokened = false;
    let counted = false;
    return {
      signal,
      attempt,
      matched,
      firstToken: () => {
        lease.firstToken();
        if (tokened) return;
        tokened = true;
        observer.firstToken(worker, attempt, started);
      },
      usage: (reported) => {
        if (!counted) counted = observer.usage(worker, attempt, reported);
      },
    };
  }

  /** The wait before the next attempt, or `false`: a decision that throws or answers junk stops. */
  #decide(outcome: RetryOutcome, attempt: number): number | false {
    const { config } = this.#call;
    const { random, shouldRetry } = this.#host;
    if (shouldRetry === undefined) return defaultDelay(config, outcome, attempt, random);
    this.#byDefault ??= (o, n) => defaultDelay(config, o, n, random);
    let answer: unknown;
    try {
      answer = shouldRetry(outcome, attempt, this.#byDefault);
    } catch (error) {
      warnOnce(
        this.#host,
        shouldRetry,
        `retry.shouldRetry threw (${describeError(error)}); the call stops retrying`,
      );
      return false;
    }
    if (answer === false || isDelay(answer)) return answer;
    warnOnce(
      this.#host,
      shouldRetry,
      `retry.shouldRetry returned ${describe(answer)}, not a delay in ms or false; the call stops retrying`,
    );
    return false;
  }

  /** Tells `onRetry`; an observer that throws (or rejects) does not break the call. */
  #notify(attempt: number, delayMs: number, outcome: RetryOutcome): void {
    const onRetry = this.#host.onRetry;
    if (onRetry === undefined) return;
    try {
      const result: unknown = onRetry({ attempt, delayMs, outcome, worker: outcome.worker });
      if (result instanceof Promise)
        result.catch((error) => warnThrown(this.#host, onRetry, error));
    } catch (error) {
      warnThrown(this.#host, onRetry, error);
    }
  }

  #noWorker(): FleetRouteError {
    const request = this.#call.request;
    const reason = this.#host.noWorkerReason(request);
    this.#host.count('noWorker');
    this.#observer?.noWorker(reason);
    const model = JSON.stringify(typeof request.model === 'string' ? request.model : '');
    const why =
      reason === 'unknown_model'
        ? 'no registered worker serves it'
        : 'none of its workers is available now';
    return new FleetRouteError('NO_WORKER', `no worker is available for model ${model}: ${why}`, {
      reason,
    });
  }
}

/** The `usage` of an unobserved attempt: one function for every call. */
const ignoreUsage = (): void => {};

/** @internal The numeric `status` of a returned response, if it has one. */
export function statusOf(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const status = (value as { status?: unknown }).status;
  return typeof status === 'number' && Number.isFinite(status) ? status : undefined;
}

/** An error `send` marked as not worth another attempt (`retryable: false`). */
function isFinal(thrown: unknown): boolean {
  return (
    typeof thrown === 'object' &&
    thrown !== null &&
    (thrown as { retryable?: unknown }).retryable === false
  );
}

function describeError(error: unknown): string {
  return error instanceof Error ? `${error.name}: ${error.message}` : describe(error);
}

function warnThrown(host: RetryHost, onRetry: (event: RetryEvent) => void, error: unknown): void {
  warnOnce(host, onRetry, `retry.onRetry threw (${describeError(error)}); the call went on`);
}

/** The hooks already reported: one warning per function, however many calls it breaks. */
const warned = new WeakSet<object>();

/** A warning `FLEETROUTE_RETRY_HOOK` (the host's logger), the first time `hook` misbehaves. */
function warnOnce(host: RetryHost, hook: object, message: string): void {
  if (warned.has(hook)) return;
  warned.add(hook);
  host.warn(message);
}
