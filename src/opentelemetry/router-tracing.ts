/**
 * What {@link instrumentRouter} returns: `execute` traced, and `close`.
 *
 * @module
 */
import type { SelectRequest } from '../policies/policy.js';
import type { AttemptContext } from '../router/retry-decision.js';
import type { Worker } from '../workers/worker.js';
import type { OpenTelemetryContext } from './api-types.js';

/**
 * What a traced `send` gets besides the worker: the router's {@link AttemptContext}, and the
 * attempt span's propagation headers.
 *
 * @public
 */
export interface TracedAttemptContext extends AttemptContext {
  /**
   * The propagation headers of this attempt's span (`propagation.inject`): with the W3C
   * propagator registered, a `traceparent` (and a `tracestate` when the trace has one) whose
   * parent is the attempt span. Empty when no propagator is registered. A new object per attempt,
   * yours to change: `fetch(url, { headers: { ...context.headers, … } })`.
   */
  readonly headers: Record<string, string>;
}

/** The `send` of {@link RouterTracing.execute}. @public */
export type TracedSend<T> = (worker: Worker, context: TracedAttemptContext) => Promise<T>;

/** Options of {@link RouterTracing.execute}. @public */
export interface TracedExecuteOptions {
  /** Passed to `router.execute`: aborts the call. */
  readonly signal?: AbortSignal;
  /**
   * The parent of the call's span.
   * @defaultValue the active context (`context.active()`)
   */
  readonly context?: OpenTelemetryContext;
}

/**
 * A router's calls traced with OpenTelemetry, and its events counted as metrics, from
 * {@link instrumentRouter}.
 *
 * @public
 */
export interface RouterTracing {
  /**
   * `router.execute(request, send, { signal })` under one span (kind CLIENT, named
   * `{operation} {model}`, the request's model cut to its first 256 characters, as in
   * `gen_ai.request.model`) covering every attempt and wait, with a child span per attempt
   * (`fleetroute.attempt`, kind CLIENT). Each `send` runs inside its attempt span's context and
   * receives the span's propagation headers in `context.headers`. The call span gets status
   * ERROR and `error.type` when the call throws, or returns a response whose status the worker's
   * breaker counts as a failure; an attempt span the same for its own outcome.
   *
   * Cost per call, besides the router's: one span, and per attempt one span, one
   * `propagation.inject`, one context and one headers object.
   *
   * @returns what `router.execute` returns.
   * @throws what `router.execute` throws; {@link FleetRouteError} `CLOSED` after {@link close};
   *   `INVALID_ARGUMENT` for a `send` that is not a function or a `context` that is not a
   *   Context.
   */
  execute<T>(
    request: SelectRequest,
    send: TracedSend<T>,
    options?: TracedExecuteOptions,
  ): Promise<T>;

  /**
   * Removes every listener this tracing put on the router: its metrics stop, and `execute`
   * rejects with `CLOSED`. Idempotent. Spans already started still end. The router is not
   * closed.
   */
  close(): void;
}
