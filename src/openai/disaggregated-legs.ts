/**
 * `DisaggregatedLegs`: the two legs of a prefill/decode-disaggregated completion — vLLM's
 * NIXL relay (prefill first, its `kv_transfer_params` to decode) and SGLang's bootstrap pair
 * (both legs at once, one room) — run inside the decode leg's attempt, so the decode worker is
 * picked first and both legs get the router's leases, retries and breakers.
 *
 * @module
 * @internal
 */
import { AbortScope } from '../core/abort.js';
import { FleetRouteError } from '../core/errors.js';
import { log } from '../core/logger.js';
import { prefillsLocally } from '../policies/conditional-disaggregation.js';
import type { SelectRequest } from '../policies/policy.js';
import type { AttemptContext } from '../router/retry-decision.js';
import type { Worker } from '../workers/worker.js';
import { readBounded } from './bytes.js';
import { type HeaderRecord, relayedHeaders } from './forwarded-headers.js';
import { errorAnswer, type FrontAnswer } from './front-answer.js';
import type { HandoffGuard } from './handoff-guard.js';
import type { ResolvedOpenAIHandlerOptions } from './openai-handler-options.js';

/** @internal What the legs borrow from the call that carries them. */
export interface LegHost {
  readonly options: ResolvedOpenAIHandlerOptions;
  readonly path: string;
  /** The call's request, as the decode leg routes it (`leg: 'decode'`). */
  readonly request: SelectRequest;
  /** The body as the client sent it (with the front's own changes). */
  readonly value: Readonly<Record<string, unknown>>;
  readonly guard: HandoffGuard;
  /** The client's message `clip`ped, for error answers. */
  clip(text: string): string;
  headersFor(worker: Worker): HeaderRecord;
  /** The body a single request to `worker` gets. */
  bodyFor(worker: Worker, attempt: number): Uint8Array;
  /** A leg's body to `worker`: `extra` written in, `omit` left out, then `bootstrap_room`. */
  legBody(
    worker: Worker,
    attempt: number,
    extra: Readonly<Record<string, unknown>>,
    omit: string | undefined,
    room: bigint | undefined,
  ): Uint8Array;
}

/**
 * @internal The reason a disaggregated call ends with an answer of its own (a prefill leg that
 * failed, no prefill worker): the decode leg's lease is released without an outcome, since the
 * decode worker did nothing wrong.
 */
export class LegAnswer extends Error {
  readonly answer: FrontAnswer;

  constructor(message: string, answer: FrontAnswer) {
    super(message);
    this.name = 'LegAnswer';
    this.answer = answer;
  }
}

/** A prefill attempt that failed with a status (its body bounded), or a refusal to relay. */
interface FailedLeg {
  readonly kind: 'failed';
  readonly status: number;
  readonly headers: Headers;
  readonly body: Uint8Array;
}

/** vLLM: the prefill leg answered; its transfer parameters go to the decode leg. */
interface NixlLeg {
  readonly kind: 'nixl';
  readonly status: number;
  readonly params: Readonly<Record<string, unknown>> | undefined;
}

/** SGLang: the prefill leg answered; its paired decode leg is on its way. */
interface PairedLeg {
  readonly kind: 'paired';
  readonly status: number;
  readonly decode: Promise<Response>;
}

type PrefillLeg = FailedLeg | NixlLeg | PairedLeg;

/** What vLLM's prefill leg asks for: compute the prompt, keep its blocks for a remote decode. */
const NIXL_PREFILL = Object.freeze({
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
});
/** `bootstrap_room` is a random integer in [0, 2⁶³ − 1]. */
const MAX_ROOM = (1n << 63n) - 1n;
const decoder = new TextDecoder();

/** One read of a body's reader. */
type ReadResult = Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']>>;

/**
 * @internal The legs of one call. `decode` is the decode leg's attempt: it decides whether the
 * prefill leg runs (conditional disaggregation), runs it as a router call of its own (`leg:
 * 'prefill'`), and resolves with the decode worker's response once its first byte arrived — the
 * hand-off done — with that byte still to read.
 */
export class DisaggregatedLegs {
  readonly #host: LegHost;
  readonly #promptTokens: number;

  constructor(host: LegHost, promptTokens: number) {
    this.#host = host;
    this.#promptTokens = promptTokens;
  }

  /**
   * @returns the decode worker's response.
   * @throws a {@link LegAnswer} (also the guard's abort reason) when the call ends on the
   *   prefill side; what a leg's `fetch` throws.
   */
  async decode(worker: Worker, context: AttemptContext): Promise<Response> {
    if (this.#local(context.matched)) return this.#single(worker, context);
    const requestId = `fleetroute-${crypto.randomUUID()}`;
    const prefill = await this.#prefill(worker, context, requestId);
    if (prefill === undefined) return this.#single(worker, context);
    const guard = this.#host.guard;
    if (prefill.kind === 'paired') {
      let response: Response;
      try {
        response = await prefill.decode;
      } catch (error) {
        guard.end();
        throw error;
      }
      return this.#handedOff(worker, response);
    }
    const h = this.#host;
    // The hand-off began when the prefill leg answered (`#nixl`): the guard holds a client's
    // abort until the decode leg's first byte.
    let response: Response;
    try {
      const params = prefill.params;
      const body =
        params === undefined
          ? h.bodyFor(worker, context.attempt)
          : h.legBody(
              worker,
              context.attempt,
              { kv_transfer_params: params },
              undefined,
              undefined,
            );
      response = await this.#fetch(worker, body, context.signal, requestId);
    } catch (error) {
      guard.end();
      throw error;
    }
    return this.#handedOff(worker, response);
  }

  /** Whether the decode worker prefills the prompt itself (conditional disaggregation). */
  #local(matched: number | undefined): boolean {
    const rule = this.#host.options.disaggregation.rule;
    if (rule === false) return false;
    const prompt = this.#promptTokens;
    const share = matched !== undefined && matched > 0 ? Math.min(matched, 1) : 0;
    return prefillsLocally(rule, prompt, share * prompt);
  }

  /** The request as a single one, to the decode worker: no hand-off to wait for. */
  #single(worker: Worker, context: AttemptContext): Promise<Response> {
    return this.#fetch(worker, this.#host.bodyFor(worker, context.attempt), context.signal);
  }

  #fetch(
    worker: Worker,
    body: Uint8Array,
    signal: AbortSignal,
    requestId?: string,
  ): Promise<Response> {
    const h = this.#host;
    const headers = h.headersFor(worker);
    return h.options.fetch(`${worker.baseUrl}${h.path}`, {
      method: 'POST',
      headers: requestId === undefined ? headers : { ...headers, 'x-request-id': requestId },
      body,
      signal,
    });
  }

  /**
   * The prefill leg, a router call among the model's prefill workers (retried on others).
   * @returns its outcome; `undefined` to send the request to the decode worker alone.
   */
  async #prefill(
    decodeWorker: Worker,
    context: AttemptContext,
    requestId: string,
  ): Promise<NixlLeg | PairedLeg | undefined> {
    const h = this.#host;
    let leg: PrefillLeg;
    try {
      leg = await h.options.router.execute<PrefillLeg>(
        { ...h.request, leg: 'prefill' },
        (worker, prefill) =>
          worker.runtime === 'sglang'
            ? this.#pair(decodeWorker, context, worker, prefill)
            : this.#nixl(worker, prefill, requestId),
        { signal: h.guard.signal },
      );
    } catch (error) {
      if (h.guard.signal.aborted) throw h.guard.signal.reason;
      if (FleetRouteError.is(error, 'NO_WORKER')) return this.#fallback(error.reason);
      const detail = error instanceof Error ? error.message : String(error);
      return this.#abandon(
        errorAnswer(502, `The prefill leg failed: ${h.clip(detail)}`, 'prefill_failed'),
      );
    }
    if (leg.kind !== 'failed' && leg.status >= 200 && leg.status < 300) return leg;
    // Every prefill attempt failed, or the prefill worker refused the request: the client gets
    // that answer (the decode worker would say the same of a bad request).
    const answer =
      leg.kind === 'failed'
        ? { status: leg.status, headers: relayedHeaders(leg.headers), body: leg.body }
        : errorAnswer(502, 'The prefill leg answered nothing usable.', 'prefill_failed');
    return this.#abandon(answer);
  }

  /** vLLM (NIXL): the prefill leg alone; its `kv_transfer_params` are read from its answer. */
  async #nixl(worker: Worker, context: AttemptContext, requestId: string): Promise<PrefillLeg> {
    const h = this.#host;
    const extra: Record<string, unknown> = {
      max_tokens: 1,
      stream: false,
      kv_transfer_params: NIXL_PREFILL,
    };
    if (h.value.max_completion_tokens !== undefined) extra.max_completion_tokens = 1;
    const body = h.legBody(worker, context.attempt, extra, 'stream_options', undefined);
    const response = await this.#fetch(worker, body, context.signal, requestId);
    if (!response.ok) return this.#failed(response);
    context.firstToken();
    const max = h.options.disaggregation.maxPrefillAnswerBytes;
    const bytes = await readBounded(response.body, max, 'refuse');
    if (bytes === undefined) throw new Error(`the prefill answer is longer than ${max} bytes`);
    const params = transferParams(bytes);
    // The prefill engine now holds the prompt's blocks for the decode leg to pull: from here on a
    // client's abort waits for the decode leg's first byte (`decode` ends the hand-off).
    h.guard.begin();
    return { kind: 'nixl', status: response.status, params };
  }

  /**
   * SGLang: the prefill leg and its decode leg at once, with the same bootstrap host, port and
   * room. A prefill that fails takes its decode leg down with it (a retry pairs a new one).
   */
  async #pair(
    decodeWorker: Worker,
    decodeContext: AttemptContext,
    worker: Worker,
    context: AttemptContext,
  ): Promise<PrefillLeg> {
    const h = this.#host;
    const room = randomRoom();
    const boot = {
      bootstrap_host: new URL(worker.baseUrl).hostname,
      bootstrap_port: worker.bootstrapPort ?? h.options.disaggregation.bootstrapPort,
    };
    const rank = worker.dpRank;
    const decodeFields = rank === undefined ? boot : { ...boot, disagg_prefill_dp_rank: rank };
    const decodeBody = h.legBody(
      decodeWorker,
      decodeContext.attempt,
      decodeFields,
      undefined,
      room,
    );
    const prefillBody = h.legBody(worker, context.attempt, boot, undefined, room);
    // Follows the decode attempt (the guard holds a client's abort back), and ends with a prefill
    // leg that failed.
    const pair = new AbortScope(decodeContext.signal);
    h.guard.begin();
    const decode = this.#fetch(decodeWorker, decodeBody, pair.signal);
    decode.catch(() => {});
    const unpair = (reason: unknown): void => {
      pair.abort(reason);
      h.guard.end();
    };
    let response: Response;
    try {
      response = await this.#fetch(worker, prefillBody, context.signal);
    } catch (error) {
      unpair(error);
      throw error;
    }
    if (!response.ok) {
      const failed = await this.#failed(response).finally(() =>
        unpair(new Error('the prefill leg failed')),
      );
      return failed;
    }
    context.firstToken();
    const d = h.options.disaggregation;
    drain(response.body, h.guard, d.maxPrefillAnswerBytes, d.handoffTimeoutMs);
    return { kind: 'paired', status: response.status, decode };
  }

  /** A prefill answer that is no success: its status and bounded body. */
  async #failed(response: Response): Promise<FailedLeg> {
    const limit = this.#host.options.maxErrorBodyBytes;
    const body = (await readBounded(response.body, limit, 'cut'))!;
    return { kind: 'failed', status: response.status, headers: response.headers, body };
  }

  /**
   * The decode leg answered: waits for its first byte (the hand-off done) before a client's
   * abort may reach it, then hands the response on with that byte still to read.
   */
  async #handedOff(worker: Worker, response: Response): Promise<Response> {
    const guard = this.#host.guard;
    const body = response.body;
    if (body === null || worker.circuitBreaker.config.failureStatuses.includes(response.status)) {
      guard.end();
      return response;
    }
    const reader = body.getReader();
    let first: ReadResult;
    try {
      first = await reader.read();
    } finally {
      guard.end();
    }
    return new Response(prepended(reader, first), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  }

  /** No prefill worker is available: `disaggregation.fallback` decides, and says so. */
  #fallback(reason: string | undefined): undefined {
    const h = this.#host;
    const fallback = h.options.disaggregation.fallback;
    const model = typeof h.request.model === 'string' ? h.request.model : '';
    log(
      h.options.logger,
      'warn',
      'FLEETROUTE_DISAGG_FALLBACK',
      fallback === 'decode_only'
        ? `no prefill worker is available for model ${JSON.stringify(model)}: the request goes to its decode worker alone`
        : `no prefill worker is available for model ${JSON.stringify(model)}: the request fails`,
      { model, fallback, reason },
    );
    if (fallback === 'decode_only') return undefined;
    const retryAfter = String(Math.min(h.options.retryAfterS, 3_600));
    return this.#abandon(
      errorAnswer(
        503,
        `No prefill worker is available for the model \`${h.clip(model)}\`; try again later.`,
        'no_prefill_worker',
        { 'retry-after': retryAfter },
      ),
    );
  }

  /** Ends the call with `answer`: the decode attempt is abandoned (no outcome for its worker). */
  #abandon(answer: FrontAnswer): never {
    const reason = new LegAnswer('the prefill leg ended the request', answer);
    this.#host.guard.abandon(reason);
    throw reason;
  }
}

/**
 * @internal The `kv_transfer_params` of a vLLM prefill answer: `undefined` when absent, `null`
 * or empty (the decode leg then gets the body unchanged).
 * @throws when the answer is no JSON object, or its `kv_transfer_params` no object.
 */
export function transferParams(bytes: Uint8Array): Readonly<Record<string, unknown>> | undefined {
  const answer: unknown = JSON.parse(decoder.decode(bytes));
  if (typeof answer !== 'object' || answer === null || Array.isArray(answer))
    throw new Error('the prefill answer is not a JSON object');
  const params = (answer as { kv_transfer_params?: unknown }).kv_transfer_params;
  if (params === undefined || params === null) return undefined;
  if (typeof params !== 'object' || Array.isArray(params))
    throw new Error("the prefill answer's kv_transfer_params is not an object");
  return Object.keys(params).length === 0 ? undefined : (params as Record<string, unknown>);
}

/** @internal A random `bootstrap_room`: an integer in [0, 2⁶³ − 1], from the platform's crypto. */
export function randomRoom(): bigint {
  const words = new BigUint64Array(1);
  crypto.getRandomValues(words);
  return words[0]! & MAX_ROOM;
}

/**
 * @internal `json` (an object's text) with `"bootstrap_room":<room>` as its last member: the
 * number written exactly, past what a JavaScript number holds.
 */
export function withRoom(json: string, room: bigint): string {
  const head = json.slice(0, json.lastIndexOf('}'));
  const empty = head.trimEnd().endsWith('{');
  return `${head}${empty ? '' : ','}"bootstrap_room":${room}}`;
}

/**
 * Reads an SGLang prefill leg's answer, which nobody uses, and drops it — within bounds: past
 * `maxBytes` it stops reading and cancels the answer once no hand-off is open (the prefill
 * engine is never cut while a decode leg waits for its KV cache), and `timeoutMs` after the call
 * ended it cancels the answer whatever is open (a hand-off is held that long at most, too).
 */
function drain(
  body: ReadableStream<Uint8Array> | null,
  guard: HandoffGuard,
  maxBytes: number,
  timeoutMs: number,
): void {
  if (body === null) return;
  const reader = body.getReader();
  const ended = guard.ended;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  let read = 0;
  const stop = (): void => {
    if (stopped) return;
    stopped = true;
    ended.removeEventListener('abort', arm);
    if (timer !== undefined) clearTimeout(timer);
    reader.cancel().catch(ignore);
  };
  function arm(): void {
    timer = setTimeout(stop, timeoutMs);
    timer.unref?.();
  }
  const next = (): void => {
    reader.read().then((r) => {
      if (r.done) return stop();
      read += r.value.byteLength;
      if (read > maxBytes) void guard.idle().then(stop);
      else if (!stopped) next();
    }, stop);
  };
  if (ended.aborted) arm();
  else ended.addEventListener('abort', arm, { once: true });
  next();
}

/** `first`, then the rest of `reader`, pulled as the reader of the result asks. */
function prepended(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  first: ReadResult,
): ReadableStream<Uint8Array> {
  let held: Uint8Array | undefined = first.done ? undefined : first.value;
  let done = first.done;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (held !== undefined) {
          controller.enqueue(held);
          held = undefined;
          return;
        }
        if (!done) {
          const next = await reader.read();
          done = next.done;
          if (!next.done) {
            controller.enqueue(next.value);
            return;
          }
        }
        controller.close();
      },
      cancel(reason) {
        return reader.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}

const ignore = (): void => {};
