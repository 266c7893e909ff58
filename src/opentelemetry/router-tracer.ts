/**
 * `RouterTracer`: `Router.execute` under one span per call and a child span per attempt, with the
 * attempt's propagation headers handed to `send`.
 *
 * @module
 * @internal
 */
import { isHighSurrogate } from '../core/content-digest.js';
import { FleetRouteError } from '../core/errors.js';
import { fail } from '../core/options.js';
import type { SelectRequest } from '../policies/policy.js';
import type { DecisionEvent, FirstTokenEvent, UsageEvent } from '../router/observations.js';
import type { AttemptContext, TokenUsage } from '../router/retry-decision.js';
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

/** @internal The attempt span's event at its first token. */
export const FIRST_TOKEN_EVENT = 'fleetroute.first_token';

/**
 * The GenAI conventions' span attribute for the time from the request to the first chunk (s): on
 * the call span from the call's start, on an attempt span from the attempt's.
 */
const TIME_TO_FIRST_CHUNK = 'gen_ai.response.time_to_first_chunk';

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
  readonly span: OpenTelemetrySpan;
  attempts: number;
  /** Responses of attempts that failed with a status: the call may end returning one. */
  readonly failed: Set<unknown>;
  /** The call span has ended: late first tokens and usage reports leave it alone. */
  ended: boolean;
}

/** The attributes of a usage report, on the call span and the attempt's. */
function usageAttributes(event: UsageEvent): OpenTelemetryAttributes {
  const attributes: OpenTelemetryAttributes = {
    'gen_ai.usage.input_tokens': event.promptTokens,
    'gen_ai.usage.output_tokens': event.completionTokens,
  };
  if (event.cachedTokens !== undefined)
    attributes['gen_ai.usage.cache_read.input_tokens'] = event.cachedTokens;
  return attributes;
}

/**
 * @internal The {@link RouterTracing} of one router. Its `decision` listener keeps the last
 * decision: the router emits it synchronously just before that attempt's `send`, so the attempt
 * reads it first thing (and checks worker and attempt number before using it). Its `firstToken`
 * and `usage` listeners keep the last of each the same way: the router emits them synchronously
 * inside the attempt context's `firstToken()` and `usage()`, which the traced context wraps.
 */
export class RouterTracer implements RouterTracing {
  readonly #p: RouterTracerParts;
  #decision: DecisionEvent | undefined;
  #firstToken: FirstTokenEvent | undefined;
  #usage: UsageEvent | undefined;
  #closed = false;
  readonly #onDecision = (event: DecisionEvent): void => {
    this.#decision = event;
  };
  readonly #onFirstToken = (event: FirstTokenEvent): void => {
    this.#firstToken = event;
  };
  readonly #onUsage = (event: UsageEvent): void => {
    this.#usage = event;
  };

  constructor(parts: RouterTracerParts) {
    this.#p = parts;
    this.#listen(true);
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
    const shown = model === undefined ? undefined : spanModel(model);
    const attributes: OpenTelemetryAttributes = { ...callAttributes };
    if (shown !== undefined) attributes['gen_ai.request.model'] = shown;
    const span = tracer.startSpan(
      shown === undefined ? operationName : `${operationName} ${shown}`,
      { kind: api.SpanKind.CLIENT, attributes },
      parent,
    );
    const callContext = api.trace.setSpan(parent, span);
    const state: CallState = { span, attempts: 0, failed: new Set(), ended: false };
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
      state.ended = true;
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
    const end = new AttemptEnd(span, api.SpanStatusCode.ERROR);
    const traced: TracedAttemptContext = {
      signal: context.signal,
      attempt: context.attempt,
      matched: context.matched,
      ...this.#tokenHooks(state, context, end),
      headers,
    };
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

  /**
   * The attempt's `firstToken` and `usage`: each calls the router's, which emits this attempt's
   * event synchronously (if any: once per attempt), then puts that event on the attempt span and
   * the call span, while they are open.
   */
  #tokenHooks(
    state: CallState,
    context: AttemptContext,
    end: AttemptEnd,
  ): Pick<AttemptContext, 'firstToken' | 'usage'> {
    return {
      firstToken: () => {
        this.#firstToken = undefined;
        context.firstToken();
        const event = this.#takeFirstToken();
        if (event === undefined) return; // not the attempt's first
        end.firstToken(event.attemptMs / 1000);
        if (!state.ended)
          state.span.setAttribute(TIME_TO_FIRST_CHUNK, event.timeToFirstTokenMs / 1000);
      },
      usage: (usage: TokenUsage) => {
        this.#usage = undefined;
        context.usage(usage);
        const event = this.#takeUsage();
        if (event === undefined) return; // junk, or not the attempt's first
        const attributes = usageAttributes(event);
        end.usage(attributes);
        if (!state.ended)
          for (const [key, value] of Object.entries(attributes))
            state.span.setAttribute(key, value);
      },
    };
  }

  /** The `firstToken` event the router emitted last, if any, forgotten as it is read. */
  #takeFirstToken(): FirstTokenEvent | undefined {
    const event = this.#firstToken;
    this.#firstToken = undefined;
    return event;
  }

  /** The `usage` event the router emitted last, if any, forgotten as it is read. */
  #takeUsage(): UsageEvent | undefined {
    const event = this.#usage;
    this.#usage = undefined;
    return event;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listen(false);
    this.#p.meters.close();
    this.#decision = undefined;
    this.#firstToken = undefined;
    this.#usage = undefined;
  }

  #listen(on: boolean): void {
    const { router, meters } = this.#p;
    const method = on ? 'on' : 'off';
    router[method]('decision', this.#onDecision);
    router[method]('decision', meters.decision);
    router[method]('attempt', meters.attempt);
    router[method]('retry', meters.retry);
    router[method]('admission', meters.admission);
    router[method]('firstToken', this.#onFirstToken);
    router[method]('firstToken', meters.firstToken);
    router[method]('usage', this.#onUsage);
    router[method]('usage', meters.usage);
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

  /** The attempt's first token: a span event, and its time from the attempt's start (s). */
  firstToken(seconds: number): void {
    if (this.#ended) return;
    this.#span.setAttribute(TIME_TO_FIRST_CHUNK, seconds);
    this.#span.addEvent?.(FIRST_TOKEN_EVENT);
  }

  /** The attempt's token counts. */
  usage(attributes: OpenTelemetryAttributes): void {
    if (this.#ended) return;
    for (const [key, value] of Object.entries(attributes)) this.#span.setAttribute(key, value);
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

/** Most UTF-16 code units of a request's `model` copied into a span's name and attributes. */
const MAX_SPAN_MODEL = 256;

const utf8 = { encoder: new TextEncoder(), decoder: new TextDecoder() };

/**
 * `model` as a span shows it: whole up to {@link MAX_SPAN_MODEL} code units, else its first
 * {@link MAX_SPAN_MODEL} (one fewer when the cut would split a surrogate pair), copied — a
 * slice could keep the whole client string alive as long as the span — with any lone surrogate
 * as U+FFFD. The model comes from the client: a span never holds more of it than that.
 * Cost: O(1); a long model costs one encode and decode of 256 characters.
 */
function spanModel(model: string): string {
  if (model.length <= MAX_SPAN_MODEL) return model;
  const end = isHighSurrogate(model.charCodeAt(MAX_SPAN_MODEL - 1))
    ? MAX_SPAN_MODEL - 1
    : MAX_SPAN_MODEL;
  return utf8.decoder.decode(utf8.encoder.encode(model.slice(0, end)));
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
