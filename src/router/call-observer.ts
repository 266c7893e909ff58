/**
 * The observation events of `Router.execute` calls — each attempt, retry, first token and token
 * report, a call no worker could take, and how the call ended — built only while someone
 * listens.
 *
 * @module
 * @internal
 */
import type { NoWorkerReason } from '../core/errors.js';
import { FleetRouteError } from '../core/errors.js';
import type { SelectRequest } from '../policies/policy.js';
import type { Worker } from '../workers/worker.js';
import type {
  AttemptEvent,
  ExecutedEvent,
  FirstTokenEvent,
  RetryScheduledEvent,
  RouterEventMap,
  RouterObservationType,
  UsageEvent,
} from './observations.js';
import type { TokenUsage } from './retry-decision.js';
import { type RetryLoop, type RetryObserver, statusOf } from './retry-loop.js';

/** @internal What the event builders need of a router: its listener counts and its emit. */
export interface ObservationSink {
  /** Listeners per event type, kept current by the router's `on`/`off`. */
  readonly listening: Readonly<Record<RouterObservationType, number>>;
  /** Emits to every listener of `type`; one that throws is caught and reported. */
  emit<K extends RouterObservationType>(type: K, event: Parameters<RouterEventMap[K]>[0]): void;
}

/** @internal The largest token count a usage report may carry (2³¹). */
export const MAX_TOKEN_COUNT = 2 ** 31;

/** @internal Whether a call needs an observer: someone listens to one of the events of its attempts. */
export function observesCalls(listening: Readonly<Record<RouterObservationType, number>>): boolean {
  const l = listening;
  return l.attempt + l.retry + l.noWorker + l.firstToken + l.usage !== 0;
}

/**
 * @internal A call's observer: built per call (one object), only while someone listens; each
 * method builds its event only while that event has a listener. Cost per event: one object; a
 * first token also reads the clock once.
 */
export class CallObserver implements RetryObserver {
  readonly started = performance.now();
  readonly #sink: ObservationSink;
  readonly #model: string | undefined;

  constructor(sink: ObservationSink, request: SelectRequest) {
    this.#sink = sink;
    this.#model = modelOf(request);
  }

  attempt(
    worker: Worker,
    attempt: number,
    outcome: AttemptEvent['outcome'],
    status: number | undefined,
    error: unknown,
    durationMs: number,
  ): void {
    if (this.#sink.listening.attempt === 0) return;
    const event: AttemptEvent = {
      type: 'attempt',
      model: this.#model,
      worker,
      attempt,
      outcome,
      status,
      error,
      durationMs,
    };
    this.#sink.emit('attempt', event);
  }

  retry(
    worker: Worker,
    attempt: number,
    delayMs: number,
    cause: RetryScheduledEvent['cause'],
    status: number | undefined,
  ): void {
    if (this.#sink.listening.retry === 0) return;
    const event: RetryScheduledEvent = {
      type: 'retry',
      model: this.#model,
      worker,
      attempt,
      delayMs,
      cause,
      status,
    };
    this.#sink.emit('retry', event);
  }

  noWorker(reason: NoWorkerReason): void {
    if (this.#sink.listening.noWorker !== 0)
      this.#sink.emit('noWorker', { type: 'noWorker', model: this.#model, reason });
  }

  firstToken(worker: Worker, attempt: number, attemptStarted: number): void {
    if (this.#sink.listening.firstToken === 0) return;
    const now = performance.now();
    const event: FirstTokenEvent = {
      type: 'firstToken',
      model: this.#model,
      worker,
      attempt,
      timeToFirstTokenMs: now - this.started,
      attemptMs: now - attemptStarted,
    };
    this.#sink.emit('firstToken', event);
  }

  usage(worker: Worker, attempt: number, reported: unknown): boolean {
    if (this.#sink.listening.usage === 0) return false;
    const usage = readTokenUsage(reported);
    if (usage === undefined) return false;
    const event: UsageEvent = {
      type: 'usage',
      model: this.#model,
      worker,
      attempt,
      promptTokens: usage.promptTokens,
      completionTokens: usage.completionTokens,
      cachedTokens: usage.cachedTokens,
    };
    this.#sink.emit('usage', event);
    return true;
  }
}

/**
 * @internal Runs `loop` and reports how the call ended (`executed`), whatever it returns or
 * throws. Its duration starts where the call's observer started timing (so a first token is
 * never later than the call's end), else now.
 *
 * @param closed - whether the router has closed (read once the call ended).
 */
export async function observeExecution<T>(
  sink: ObservationSink,
  request: SelectRequest,
  loop: RetryLoop<T>,
  signal: AbortSignal | undefined,
  closed: () => boolean,
): Promise<T> {
  const model = modelOf(request);
  const started = loop.started ?? performance.now();
  const report = (outcome: ExecutedEvent['outcome'], status: number | undefined): void => {
    if (sink.listening.executed === 0) return;
    sink.emit('executed', {
      type: 'executed',
      model,
      outcome,
      attempts: loop.attempts,
      status,
      durationMs: performance.now() - started,
    });
  };
  let value: T;
  try {
    value = await loop.run();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    report(
      signal?.aborted
        ? 'aborted'
        : code === 'NO_WORKER' && error instanceof FleetRouteError
          ? 'no_worker'
          : closed()
            ? 'closed'
            : 'error',
      undefined,
    );
    throw error;
  }
  report(loop.succeeded ? 'success' : 'failed', statusOf(value));
  return value;
}

/**
 * @internal `reported` as token counts when it is one: an object whose `promptTokens` and
 * `completionTokens` are integers in [0, 2³¹], and whose `cachedTokens`, when present, is one
 * too and at most `promptTokens`; else `undefined`. Never throws (a getter that throws reads as
 * junk). Cost: three property reads.
 */
export function readTokenUsage(reported: unknown): TokenUsage | undefined {
  if (typeof reported !== 'object' || reported === null) return undefined;
  let prompt: unknown;
  let completion: unknown;
  let cached: unknown;
  try {
    const r = reported as Record<string, unknown>;
    prompt = r.promptTokens;
    completion = r.completionTokens;
    cached = r.cachedTokens;
  } catch {
    return undefined;
  }
  if (!isTokenCount(prompt) || !isTokenCount(completion)) return undefined;
  if (cached === undefined) return { promptTokens: prompt, completionTokens: completion };
  if (!isTokenCount(cached) || cached > prompt) return undefined;
  return { promptTokens: prompt, completionTokens: completion, cachedTokens: cached };
}

function isTokenCount(value: unknown): value is number {
  return (
    typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKEN_COUNT
  );
}

function modelOf(request: SelectRequest): string | undefined {
  return typeof request.model === 'string' ? request.model : undefined;
}
