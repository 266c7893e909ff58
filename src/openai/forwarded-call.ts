/**
 * `ForwardedCall`: one OpenAI request carried to the workers through `Router.execute` — each
 * attempt a `fetch` to one worker, the answer committed to the client only once a worker answered
 * with a status that is not a failure, and streamed from then on. For a model served by prefill
 * and decode workers, each attempt is a decode leg that runs its prefill leg first or alongside
 * (`DisaggregatedLegs`), a client's abort held back during the hand-off (`HandoffGuard`).
 *
 * @module
 * @internal
 */
import { AbortScope } from '../core/abort.js';
import { FleetRouteError } from '../core/errors.js';
import { log } from '../core/logger.js';
import { requestTokens } from '../policies/least-load/score.js';
import type { SelectRequest } from '../policies/policy.js';
import type { AttemptContext } from '../router/retry-decision.js';
import { dataParallelHint } from '../workers/data-parallel.js';
import type { Worker } from '../workers/worker.js';
import { watchAnswer } from './answer-watch.js';
import { readBounded } from './bytes.js';
import { DisaggregatedLegs, LegAnswer, type LegHost, withRoom } from './disaggregated-legs.js';
import { type HeaderRecord, relayedHeaders } from './forwarded-headers.js';
import { errorAnswer, type FrontAnswer } from './front-answer.js';
import { HandoffGuard } from './handoff-guard.js';
import type { ResolvedOpenAIHandlerOptions } from './openai-handler-options.js';
import { UpstreamAnswer } from './upstream-answer.js';

/** @internal What `send` returns for a failed attempt, relayed when every attempt failed. */
interface FailedAttempt {
  readonly status: number;
  readonly headers: Headers;
  readonly body: Uint8Array;
}

/** @internal What `send` returns once a committed answer has ended. */
interface RelayedAttempt {
  readonly status: number;
}

/** @internal The body as the worker gets it. */
export interface OutgoingBody {
  /** The parsed body (for `rewriteBody`). */
  readonly value: Readonly<Record<string, unknown>>;
  /** Its bytes, as sent when nothing rewrites it. */
  readonly bytes: Uint8Array;
  /** The front asked for usage the client did not: cut the usage chunk out of the stream. */
  readonly stripUsage: boolean;
}

const encoder = new TextEncoder();
/** A `Retry-After` given to the client is at most this (s). */
const MAX_RETRY_AFTER_S = 3_600;

/**
 * @internal One call. `run()` resolves with the answer for the client as soon as there is one: a
 * committed stream (while its attempt goes on relaying it), the last failure response when every
 * attempt failed, or an error answer. The client going away (`signal`), or cancelling the stream,
 * aborts the attempt in flight.
 */
export class ForwardedCall {
  readonly #o: ResolvedOpenAIHandlerOptions;
  readonly #path: string;
  readonly #select: SelectRequest;
  readonly #body: OutgoingBody;
  readonly #headers: HeaderRecord;
  /** Fires when the client goes away or cancels; aborts the call's attempt in flight. */
  readonly #signal: AbortSignal;
  readonly #abort: (reason?: unknown) => void;
  /** A scope of the call's own, when the adapter gave no way to fire its signal. */
  readonly #scope: AbortScope | undefined;
  #committed: ((answer: FrontAnswer) => void) | undefined;
  /** The client has its answer (a committed stream): what `execute` ends with is not needed. */
  #answered = false;
  /** The body with the priority written in, per runtime (`forwardPriority`). */
  readonly #prioritised = new Map<string, OutgoingBody>();
  /** A disaggregated call's legs; `undefined` for a single request. */
  readonly #legs: DisaggregatedLegs | undefined;
  /** What holds a client's abort back during a hand-off (a disaggregated call). */
  readonly #guard: HandoffGuard | undefined;
  /** The request as the router routes it (its decode leg, for a disaggregated call). */
  readonly #request: SelectRequest;

  constructor(
    options: ResolvedOpenAIHandlerOptions,
    path: string,
    select: SelectRequest,
    body: OutgoingBody,
    headers: HeaderRecord,
    signal: AbortSignal | undefined,
    abort: ((reason?: unknown) => void) | undefined,
    disaggregated = false,
  ) {
    this.#o = options;
    this.#path = path;
    this.#select = select;
    this.#body = body;
    this.#headers = headers;
    if (signal !== undefined && abort !== undefined) {
      this.#signal = signal;
      this.#abort = abort;
    } else {
      const scope = new AbortScope(signal);
      this.#scope = scope;
      this.#signal = scope.signal;
      this.#abort = (reason) => scope.abort(reason);
    }
    this.#request = disaggregated ? { ...select, leg: 'decode' } : select;
    if (!disaggregated) return;
    const guard = new HandoffGuard(this.#signal, options.disaggregation.handoffTimeoutMs);
    this.#guard = guard;
    const host: LegHost = {
      options,
      path,
      request: this.#request,
      value: body.value,
      guard,
      clip,
      headersFor: (worker) => this.#headersFor(worker),
      bodyFor: (worker, attempt) => this.#bodyFor(worker, attempt),
      legBody: (worker, attempt, extra, omit, room) =>
        this.#legBody(worker, attempt, extra, omit, room),
    };
    this.#legs = new DisaggregatedLegs(host, requestTokens(select, 0));
  }

  /** @returns the client's answer (never rejects). */
  run(): Promise<FrontAnswer> {
    return new Promise<FrontAnswer>((resolve) => {
      this.#committed = (answer) => {
        this.#answered = true;
        resolve(answer);
      };
      this.#o.router
        .execute<FailedAttempt | RelayedAttempt>(
          this.#request,
          (worker, context) => this.#attempt(worker, context),
          { signal: this.#guard?.signal ?? this.#signal },
        )
        .then(
          (last) => {
            if (!this.#answered) resolve(this.#relayFailure(last));
          },
          (error: unknown) => {
            if (!this.#answered) resolve(this.#failure(error));
          },
        )
        .finally(() => {
          this.#scope?.dispose();
          this.#guard?.dispose();
        });
    });
  }

  /** One attempt: a failure status is returned (bounded body) for `execute` to retry elsewhere. */
  async #attempt(worker: Worker, context: AttemptContext): Promise<FailedAttempt | RelayedAttempt> {
    const response =
      this.#legs !== undefined
        ? await this.#legs.decode(worker, context)
        : await this.#o.fetch(`${worker.baseUrl}${this.#path}`, {
            method: 'POST',
            headers: this.#headersFor(worker),
            body: this.#bodyFor(worker, context.attempt),
            signal: context.signal,
          });
    if (worker.circuitBreaker.config.failureStatuses.includes(response.status)) {
      const body = (await readBounded(response.body, this.#o.maxErrorBodyBytes, 'cut'))!;
      return { status: response.status, headers: response.headers, body };
    }
    return this.#relay(worker, context, response);
  }

  /** Commits `response` to the client and resolves when it has been relayed to the end. */
  #relay(worker: Worker, context: AttemptContext, response: Response): Promise<RelayedAttempt> {
    const headers = relayedHeaders(response.headers);
    if (this.#o.workerHeader !== undefined) headers[this.#o.workerHeader] = worker.url;
    const commit = this.#committed!;
    const status = response.status;
    const signal = this.#guard?.signal ?? this.#signal;
    if (signal.aborted) {
      response.body?.cancel().catch(() => {});
      return Promise.reject(signal.reason);
    }
    if (response.body === null) {
      context.firstToken();
      commit({ status, headers, body: undefined });
      return Promise.resolve({ status });
    }
    const contentType = response.headers.get('content-type');
    const events = (contentType ?? '').toLowerCase().includes('text/event-stream');
    return new Promise<RelayedAttempt>((resolve, reject) => {
      const watch = watchAnswer(contentType, context, this.#body.stripUsage);
      const answer = new UpstreamAnswer(response.body!, watch, events, {
        finished: (usage) => {
          if (usage !== undefined) context.usage(usage);
          resolve({ status });
        },
        broke: (error) => {
          // The client left first: the worker's stream failed because the front aborted it.
          if (this.#signal.aborted) {
            reject(this.#signal.reason);
            return;
          }
          log(
            this.#o.logger,
            'warn',
            'FLEETROUTE_ANSWER_BROKE',
            `an answer from ${worker.url} broke off midway`,
            {
              url: worker.url,
              error: error instanceof Error ? error.message : String(error),
            },
          );
          // Not retried: the client has part of this answer already.
          reject(
            Object.assign(new Error("the worker's answer broke off midway", { cause: error }), {
              retryable: false,
            }),
          );
        },
        cancelled: (reason) => {
          this.#abort(reason);
          reject(reason);
        },
      });
      commit({ status, headers, body: answer });
    });
  }

  /** The call's headers, with the worker's key: a plain record (`fetch` builds its own `Headers`). */
  #headersFor(worker: Worker): HeaderRecord {
    const key =
      worker.apiKey ??
      (typeof this.#o.apiKey === 'function' ? this.#o.apiKey(worker) : this.#o.apiKey);
    const rank = dataParallelHint(worker)?.headers;
    if (key === undefined && rank === undefined) return this.#headers;
    return {
      ...this.#headers,
      ...rank,
      ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
    };
  }

  #bodyFor(worker: Worker, attempt: number): Uint8Array {
    const body = this.#withRank(worker, this.#withPriority(worker));
    const rewritten = this.#rewritten(worker, attempt, body.value);
    return rewritten === undefined ? body.bytes : encoder.encode(JSON.stringify(rewritten));
  }

  /**
   * The body of one leg of a disaggregated request to `worker`: as a single request's, with
   * `extra` written in and `omit` left out, then rewritten (`rewriteBody`), then with
   * `bootstrap_room` spliced in as an exact integer.
   */
  #legBody(
    worker: Worker,
    attempt: number,
    extra: Readonly<Record<string, unknown>>,
    omit: string | undefined,
    room: bigint | undefined,
  ): Uint8Array {
    const value: Record<string, unknown> = {
      ...this.#withRank(worker, this.#withPriority(worker)).value,
      ...extra,
    };
    if (omit !== undefined) delete value[omit];
    const json = JSON.stringify(this.#rewritten(worker, attempt, value) ?? value);
    return encoder.encode(room === undefined ? json : withRoom(json, room));
  }

  /** `value` as `rewriteBody` rewrites it; `undefined` when nothing does. */
  #rewritten(
    worker: Worker,
    attempt: number,
    value: Readonly<Record<string, unknown>>,
  ): Record<string, unknown> | undefined {
    const rewrite = this.#o.rewriteBody;
    if (rewrite === undefined) return undefined;
    const rewritten = rewrite(value, { worker, path: this.#path, attempt });
    if (rewritten === undefined) return undefined;
    if (typeof rewritten !== 'object' || rewritten === null)
      throw new FleetRouteError(
        'INVALID_ARGUMENT',
        'createOpenAIHandler.rewriteBody must return an object or undefined',
      );
    return rewritten;
  }

  /**
   * The body with the request's priority in the engine's own terms (`forwardPriority`): negated
   * for vLLM (lower first), as it is for SGLang (higher first); the body as it came for other
   * runtimes, a priority of 0, or none. One encoding per runtime per call.
   */
  #withPriority(worker: Worker): OutgoingBody {
    const priority = this.#select.priority;
    const runtime = worker.runtime;
    if (
      !this.#o.forwardPriority ||
      priority === undefined ||
      priority === 0 ||
      (runtime !== 'vllm' && runtime !== 'sglang')
    )
      return this.#body;
    const cached = this.#prioritised.get(runtime);
    if (cached !== undefined) return cached;
    const value = { ...this.#body.value, priority: runtime === 'vllm' ? -priority : priority };
    const body = {
      value,
      bytes: encoder.encode(JSON.stringify(value)),
      stripUsage: this.#body.stripUsage,
    };
    this.#prioritised.set(runtime, body);
    return body;
  }

  /** `body` with the fields that steer it to `worker`'s data-parallel rank, if it needs any. */
  #withRank(worker: Worker, body: OutgoingBody): OutgoingBody {
    const fields = dataParallelHint(worker)?.body;
    if (fields === undefined || Object.keys(fields).length === 0) return body;
    const value = { ...body.value, ...fields };
    return { value, bytes: encoder.encode(JSON.stringify(value)), stripUsage: body.stripUsage };
  }

  /** Every attempt failed with a status: the last one, as the worker sent it. */
  #relayFailure(last: FailedAttempt | RelayedAttempt): FrontAnswer {
    if (!('body' in last)) return errorAnswer(502, 'the worker answered nothing', 'upstream_error');
    return { status: last.status, headers: relayedHeaders(last.headers), body: last.body };
  }

  /** Why the call failed, as the client is told it. */
  #failure(error: unknown): FrontAnswer {
    if (error instanceof LegAnswer) return error.answer;
    if (this.#signal.aborted)
      return errorAnswer(499, 'the client closed the request', 'client_closed');
    if (FleetRouteError.is(error, 'NO_WORKER')) {
      const model = this.#select.model;
      // A request naming no model is never "unknown": the fleet is just not ready for it.
      const unknown =
        model !== undefined &&
        (error.reason === 'unknown_model' ||
          this.#o.router.registry.getByModel(model).length === 0);
      if (unknown)
        return errorAnswer(
          404,
          `The model \`${clip(model ?? '')}\` does not exist.`,
          'model_not_found',
          undefined,
          'model',
        );
      const retryAfter = String(Math.min(this.#o.retryAfterS, MAX_RETRY_AFTER_S));
      return errorAnswer(
        503,
        `No worker is available for the model \`${clip(model ?? '')}\`; try again later.`,
        'no_worker_available',
        { 'retry-after': retryAfter },
      );
    }
    if (FleetRouteError.is(error, 'SATURATED')) {
      // Rounded up: a client that waits what it is told never comes back too early.
      const seconds = Math.ceil((error.retryAfterMs ?? 1_000) / 1_000);
      return errorAnswer(
        429,
        `Every worker for the model \`${clip(this.#select.model ?? '')}\` is busy; try again later.`,
        'saturated',
        { 'retry-after': String(Math.min(seconds, MAX_RETRY_AFTER_S)) },
      );
    }
    if (FleetRouteError.is(error, 'CLOSED'))
      return errorAnswer(503, 'The service is shutting down.', 'shutting_down');
    const detail = error instanceof Error ? error.message : String(error);
    return errorAnswer(502, `No worker could answer: ${clip(detail)}`, 'upstream_error');
  }
}

/** A client-given string as a message shows it: at most 256 characters. */
export function clip(text: string): string {
  return text.length <= 256 ? text : `${text.slice(0, 256)}…`;
}
