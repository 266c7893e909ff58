/**
 * `RouterTracer`: `Router.execute` under one span per call and a child span per attempt, with the
 * attempt's propagation headers handed to `send`.
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';
import { fail } from '../core/options.js';
import type { SelectRequest } from '../policies/policy.js';
import type { DecisionEvent } from '../router/observations.js';
import type { AttemptContext } from '../router/retry-decision.js';
import type { Router } from '../router/router.js';
import type { Worker } from '../workers/worker.js';
import type {
  OpenTelemetryAttributes,
  OpenTelemetryContext,
  OpenTelemetrySpan,
  OpenTelemetryTracer,
} from './api-types.js';
import { errorType, serverOf, statusErrorType, statusOf } from './attributes.js';
import type { OtelApi } from './load-api.js';
import type { RouterMeters } from './router-meters.js';
import type {
  RouterTracing,
  TracedAttemptContext,
  TracedExecuteOptions,
  TracedSend,
} from './router-tracing.js';

/** @internal The attempt span's name. */
export const ATTEMPT_SPAN_NAME = 'fleetroute.attempt';

/** @internal What a tracer is built from. */
export interface RouterTracerParts {
  readonly router: Router;
  readonly api: OtelApi;
  readonly tracer: OpenTelemetryTracer;
  readonly meters: RouterMeters;
  readonly operationName: string;
  /** The attributes every call span starts with (`gen_ai.operation.name`, the provider). */
  readonly callAttributes: OpenTelemetryAttributes;
}

/** One call's bookkeeping. */
interface CallState {
  attempts: number;
  /** Responses of attempts that failed with a status: the call may end returning one. */
  readonly failed: Set<unknown>;
}

/**
 * @internal The {@link RouterTracing} of one router. Its `decision` listener keeps the last
 * decision: the router emits it synchronously just before that attempt's `send`, so the attempt
 * reads it first thing (and checks worker and attempt number before using it).
 */
export class RouterTracer implements RouterTracing {
  readonly #p: RouterTracerParts;
  #decision: DecisionEvent | undefined;
  #closed = false;
  readonly #onDecision = (event: DecisionEvent): void => {
    this.#decision = event;
  };

  constructor(parts: RouterTracerParts) {
    this.#p = parts;
    const { router, meters } = parts;
    router.on('decision', this.#onDecision);
    router.on('decision', meters.decision);
    router.on('attempt', meters.attempt);
    router.on('retry', meters.retry);
  }

  async execute<T>(
    request: SelectRequest,
    send: TracedSend<T>,
    options: TracedExecuteOptions = {},
  ): Promise<T> {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the router tracing is closed');
    if (typeof send !== 'function') fail('send', 'a function', send);
    const parent = readParent(this.#p.api, options?.context);
    const { tracer, api, meters, operationName, callAttributes } = this.#p;
    const model = modelOf(request);
    const attributes: OpenTelemetryAttributes = { ...callAttributes };
    if (model !== undefined) attributes['gen_ai.request.model'] = model;
    const span = tracer.startSpan(
      model === undefined ? operationName : `${operationName} ${model}`,
      { kind: api.SpanKind.CLIENT, attributes },
      parent,
    );
    const callContext = api.trace.setSpan(parent, span);
    const state: CallState = { attempts: 0, failed: new Set() };
    const started = performance.now();
    let failure: string | undefined;
    try {
      const signal = options?.signal;
      const value = await this.#p.router.execute<T>(
        request,
        (worker, context) => this.#attempt(state, callContext, worker, context, send),
        signal === undefined ? {} : { signal },
      );
      if (state.failed.has(value)) failure = statusErrorType(statusOf(value) as number);
      return value;
    } catch (error) {
      failure = errorType(error);
      throw error;
    } finally {
      span.setAttribute('fleetroute.attempts', state.attempts);
      if (failure !== undefined) {
        span.setAttribute('error.type', failure);
        span.setStatus({ code: api.SpanStatusCode.ERROR });
      }
      span.end();
      const seconds = (performance.now() - started) / 1000;
      meters.operation({ model, errorType: failure, seconds });
    }
  }

  /** One attempt: its span, its headers, `send` run in its context, the span ended with the outcome. */
  async #attempt<T>(
    state: CallState,
    callContext: OpenTelemetryContext,
    worker: Worker,
    context: AttemptContext,
    send: TracedSend<T>,
  ): Promise<T> {
    // First, while the decision of this attempt is still the last one.
    const decision = this.#decision;
    this.#decision = undefined;
    state.attempts++;
    const { api, tracer } = this.#p;
    const span = tracer.startSpan(
      ATTEMPT_SPAN_NAME,
      { kind: api.SpanKind.CLIENT, attributes: attemptAttributes(worker, context, decision) },
      callContext,
    );
    const attemptContext = api.trace.setSpan(callContext, span);
    const headers: Record<string, string> = {};
    api.propagation.inject(attemptContext, headers);
    const traced: TracedAttemptContext = {
      signal: context.signal,
      attempt: context.attempt,
      firstToken: context.firstToken,
      usage: context.usage,
      headers,
    };
    const end = new AttemptEnd(span, api.SpanStatusCode.ERROR);
    // The router abandons a `send` that ignores its signal: the span ends at the abort.
    const onAbort = (): void => end.aborted(context.signal.reason);
    context.signal.addEventListener('abort', onAbort, { once: true });
    try {
      const value = await api.context.with(attemptContext, () => send(worker, traced));
      if (end.settled(worker, statusOf(value))) state.failed.add(value);
      return value;
    } catch (error) {
      if (context.signal.aborted) end.aborted(context.signal.reason);
      else end.failed(error);
      throw error;
    } finally {
      context.signal.removeEventListener('abort', onAbort);
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const { router, meters } = this.#p;
    router.off('decision', this.#onDecision);
    router.off('decision', meters.decision);
    router.off('attempt', meters.attempt);
    router.off('retry', meters.retry);
    this.#decision = undefined;
  }
}

/** Ends an attempt's span once, with the first outcome known. */
class AttemptEnd {
  readonly #span: OpenTelemetrySpan;
  readonly #error: number;
  #ended = false;

  constructor(span: OpenTelemetrySpan, errorCode: number) {
    this.#span = span;
    this.#error = errorCode;
  }

  /**
   * `send` resolved: a success, or a failure status of the worker's breaker (as the router
   * judges it).
   * @returns whether it was a failure status.
   */
  settled(worker: Worker, status: number | undefined): boolean {
    const failure =
      status !== undefined && worker.circuitBreaker.config.failureStatuses.includes(status);
    if (!this.#ended && status !== undefined) {
      this.#span.setAttribute('http.response.status_code', status);
    }
    this.#end(failure ? 'status' : 'success', failure ? statusErrorType(status) : undefined);
    return failure;
  }

  failed(error: unknown): void {
    this.#end('error', errorType(error));
  }

  aborted(reason: unknown): void {
    this.#end('aborted', errorType(reason));
  }

  #end(outcome: 'success' | 'status' | 'error' | 'aborted', failure: string | undefined): void {
    if (this.#ended) return;
    this.#ended = true;
    const span = this.#span;
    span.setAttribute('fleetroute.outcome', outcome);
    if (failure !== undefined) {
      span.setAttribute('error.type', failure);
      span.setStatus({ code: this.#error });
    }
    span.end();
  }
}

/** The attempt span's attributes: worker, attempt number, and the decision when it is this one's. */
function attemptAttributes(
  worker: Worker,
  context: AttemptContext,
  decision: DecisionEvent | undefined,
): OpenTelemetryAttributes {
  const attributes: OpenTelemetryAttributes = { 'fleetroute.attempt': context.attempt };
  const server = serverOf(worker);
  if (server !== undefined) {
    attributes['server.address'] = server.address;
    attributes['server.port'] = server.port;
  }
  if (
    decision !== undefined &&
    decision.worker === worker &&
    decision.attempt === context.attempt
  ) {
    attributes['fleetroute.policy'] = decision.policy;
    if (decision.branch !== undefined) attributes['fleetroute.branch'] = decision.branch;
  }
  return attributes;
}

function modelOf(request: unknown): string | undefined {
  if (typeof request !== 'object' || request === null) return undefined;
  const model = (request as { model?: unknown }).model;
  return typeof model === 'string' && model.length > 0 ? model : undefined;
}

/** The call span's parent: the given context, else the active one. */
function readParent(api: OtelApi, given: unknown): OpenTelemetryContext {
  if (given === undefined) return api.context.active();
  if (
    typeof given !== 'object' ||
    given === null ||
    typeof (given as OpenTelemetryContext).getValue !== 'function'
  ) {
    fail('context', 'an OpenTelemetry Context', given);
  }
  return given as OpenTelemetryContext;
}
