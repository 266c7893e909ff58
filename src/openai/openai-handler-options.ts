/**
 * The options of the OpenAI front (`createOpenAIHandler` and its framework adapters), declared
 * once.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import { type Logger, readLogger } from '../core/logger.js';
import { callback, custom, integer, OptionTable } from '../core/option-table.js';
import { fail, readBoolean, readString } from '../core/options.js';
import type { Router } from '../router/router.js';
import type { Worker } from '../workers/worker.js';
import {
  type DisaggregationOptions,
  type ResolvedDisaggregationOptions,
  resolveDisaggregationOptions,
} from './disaggregation-options.js';
import {
  type OpenAIRequestOptions,
  type ResolvedOpenAIRequestOptions,
  resolveOpenAIRequestOptions,
} from './openai-request.js';

/** The `fetch` the front calls workers with. @public */
export type OpenAIFetch = (url: string, init: RequestInit) => Promise<Response>;

/** What {@link OpenAIHandlerOptions.rewriteBody} is told about the attempt. @public */
export interface RewriteContext {
  /** The worker this attempt goes to. */
  readonly worker: Worker;
  /** The route, such as `/v1/chat/completions`. */
  readonly path: string;
  /** 1 for the first attempt, 2, 3… for retries on other workers. */
  readonly attempt: number;
}

/**
 * Options of {@link createOpenAIHandler} (and of the Node, Express and Fastify adapters, which
 * take the same).
 *
 * @public
 */
export interface OpenAIHandlerOptions {
  /**
   * The router that picks a worker for each request (started or not: the handler starts it). Its
   * registry lists the models of `GET /v1/models` and tells an unknown model from a busy fleet.
   */
  readonly router: Router;
  /**
   * Sent as `Authorization: Bearer <key>` to a worker that has no `apiKey` of its own (a worker's
   * own key always wins), or a function that gives each worker's key. The client's own
   * `Authorization` never reaches a worker (it is meant for this service).
   * @defaultValue none (no `Authorization` header, unless the worker has its own key)
   */
  readonly apiKey?: string | ((worker: Worker) => string | undefined);
  /**
   * Largest request body read (bytes). A larger one is answered 413 without reading the rest.
   * @defaultValue 16777216 (16 MiB; a 128 K-token chat with a few images fits)
   */
  readonly maxBodyBytes?: number;
  /**
   * The client's headers passed to the worker: `'all'` (every header but hop-by-hop ones,
   * `Authorization` and `Cookie`), or a list of names (case-insensitive). Hop-by-hop headers are
   * never passed.
   * @defaultValue 'all'
   */
  readonly forwardHeaders?: 'all' | readonly string[];
  /**
   * More POST routes forwarded by the same rules as the completion routes, such as
   * `/v1/embeddings`, `/v1/responses` or `/v1/rerank` (routed on their `model`, and on `input` as
   * text when it is one).
   * @defaultValue none (only `/v1/chat/completions` and `/v1/completions`)
   */
  readonly routes?: readonly string[];
  /**
   * How a request becomes the router's input (`openAIRequest`'s options): where the routing key
   * comes from, which headers reach the policies, the routing text's limits.
   * @defaultValue `openAIRequest`'s defaults
   */
  readonly request?: OpenAIRequestOptions;
  /**
   * Rewrites the body sent to a worker, once per attempt (after the handler's own changes): return
   * a new body, or `undefined` to send it as it is. Called synchronously; what it throws fails that
   * attempt (and the call moves on to another worker).
   * @defaultValue none
   */
  readonly rewriteBody?: (
    body: Readonly<Record<string, unknown>>,
    context: RewriteContext,
  ) => Record<string, unknown> | undefined;
  /**
   * Ask a streaming engine for its final token counts (`stream_options.include_usage`) when the
   * client did not, so usage reaches the router's `usage` event and the metrics; the usage chunk
   * the client did not ask for is cut out of its stream.
   * @defaultValue true
   */
  readonly streamUsage?: boolean;
  /**
   * Largest body read from a failed attempt (a 5xx, a 429) to relay if every attempt fails; the
   * rest is cancelled so the connection is freed.
   * @defaultValue 65536
   */
  readonly maxErrorBodyBytes?: number;
  /**
   * A response header naming the worker (its URL) that served the answer, for debugging. Off by
   * default: worker addresses are internal.
   * @defaultValue none
   */
  readonly workerHeader?: string;
  /**
   * `Retry-After` (seconds) of the 503 answered when the model's workers are all unavailable.
   * @defaultValue 1
   */
  readonly retryAfterS?: number;
  /**
   * Pass the request's priority (`SelectRequest.priority`, from `request.priorityHeader` or
   * `priorityField`) to engines that schedule by it, in the body's `priority` field, by the
   * worker's `runtime`: `vllm` gets its negation (vLLM runs lower values first; start it with
   * `--scheduling-policy priority`), `sglang` the value as it is (higher first;
   * `--enable-priority-scheduling`); other runtimes get nothing. A priority of 0 (the default) is
   * never written, so an engine without priority scheduling sees no change for ordinary
   * requests. Off by default: an engine without priority scheduling refuses a non-zero one.
   * @defaultValue false
   */
  readonly forwardPriority?: boolean;
  /**
   * The `fetch` the handler calls workers with (an undici `fetch` with its own dispatcher, say),
   * as `fetch(url, { method: 'POST', headers, body, signal })` with `headers` a plain record of
   * lower-case names and `body` a `Uint8Array`.
   * @defaultValue `globalThis.fetch`
   */
  readonly fetch?: OpenAIFetch;
  /**
   * Where the handler says what went wrong on its side (a hook that threw, an answer that broke
   * midway, a disaggregation fallback): `logger.warn(fields, message)`. pino, bunyan and
   * `console` fit.
   * @defaultValue none (process warnings)
   */
  readonly logger?: Logger;
  /**
   * How a completion for a model that has prefill and decode workers runs its two legs: the
   * fallback when no prefill worker is available, conditional disaggregation, SGLang's default
   * bootstrap port (see {@link DisaggregationOptions}).
   * @defaultValue `DisaggregationOptions`' defaults
   */
  readonly disaggregation?: DisaggregationOptions;
}

/** @internal The options resolved. */
export interface ResolvedOpenAIHandlerOptions {
  readonly router: Router;
  readonly apiKey: string | ((worker: Worker) => string | undefined) | undefined;
  readonly maxBodyBytes: number;
  readonly forwardHeaders: 'all' | ReadonlySet<string>;
  readonly routes: ReadonlySet<string>;
  readonly request: ResolvedOpenAIRequestOptions;
  readonly rewriteBody: OpenAIHandlerOptions['rewriteBody'];
  readonly streamUsage: boolean;
  readonly maxErrorBodyBytes: number;
  readonly workerHeader: string | undefined;
  readonly retryAfterS: number;
  readonly forwardPriority: boolean;
  readonly fetch: OpenAIFetch;
  readonly logger: Logger | undefined;
  readonly disaggregation: ResolvedDisaggregationOptions;
}

/** The routes every handler serves. */
export const COMPLETION_ROUTES: readonly string[] = ['/v1/chat/completions', '/v1/completions'];

/** A header name: an RFC 9110 token. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** A route: a path of printable ASCII without query or fragment. */
const ROUTE = /^\/[\x21-\x22\x24-\x3e\x40-\x7e]*$/;

/** @internal The handler's options (unknown ones are refused). */
export const OPENAI_HANDLER_OPTIONS = new OptionTable(
  'createOpenAIHandler',
  'OpenAIHandlerOptions',
  {
    apiKey: custom<ResolvedOpenAIHandlerOptions['apiKey']>(undefined, readApiKey, 'none'),
    maxBodyBytes: integer(16_777_216, 1, 1_073_741_824),
    forwardHeaders: custom<'all' | ReadonlySet<string>>('all', readHeaderList, "'all'"),
    routes: custom<ReadonlySet<string>>(new Set(), readRoutes, 'none'),
    request: custom<ResolvedOpenAIRequestOptions>(
      resolveOpenAIRequestOptions(),
      (_field, value) => resolveOpenAIRequestOptions(value as OpenAIRequestOptions),
      "`openAIRequest`'s defaults",
    ),
    rewriteBody: callback<NonNullable<OpenAIHandlerOptions['rewriteBody']>>(
      'a function',
      undefined,
      'none',
    ),
    streamUsage: custom(true, (field, value, d) => readBoolean(field, value, d)),
    maxErrorBodyBytes: integer(65_536, 0, 16_777_216),
    workerHeader: custom<string | undefined>(
      undefined,
      (field, value) => readHeaderName(field, value),
      'none',
    ),
    retryAfterS: integer(1, 0, 86_400),
    forwardPriority: custom(false, (field, value, d) => readBoolean(field, value, d)),
    fetch: callback<OpenAIFetch>('a fetch function', undefined, '`globalThis.fetch`'),
    logger: custom<Logger | undefined>(
      undefined,
      (field, value) => readLogger(field, value),
      'none',
    ),
    disaggregation: custom<ResolvedDisaggregationOptions>(
      resolveDisaggregationOptions(undefined),
      (_field, value) => resolveDisaggregationOptions(value),
      "`DisaggregationOptions`' defaults",
    ),
  },
  ['router'],
);

/**
 * @internal Validates the options and fills in the defaults.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 */
export function resolveOpenAIHandlerOptions(input: unknown): ResolvedOpenAIHandlerOptions {
  const o = OPENAI_HANDLER_OPTIONS.read(input);
  const router = readRouter('createOpenAIHandler.router', (input as { router?: unknown }).router);
  const fetchFn = o.fetch ?? (globalThis.fetch as OpenAIFetch | undefined);
  if (typeof fetchFn !== 'function')
    throw invalidArgument(
      'createOpenAIHandler.fetch is required where globalThis.fetch is missing',
    );
  return Object.freeze({ ...o, router, fetch: fetchFn });
}

function readRouter(field: string, value: unknown): Router {
  // A Router from another copy of the package is fine: its shape is what counts.
  const r = value as Partial<Router> | null;
  if (
    typeof r !== 'object' ||
    r === null ||
    typeof r.execute !== 'function' ||
    typeof r.ready !== 'function' ||
    typeof r.registry?.getModels !== 'function'
  )
    fail(field, 'a Router', value);
  return value as Router;
}

function readApiKey(field: string, value: unknown): ResolvedOpenAIHandlerOptions['apiKey'] {
  if (typeof value === 'function') return value as (worker: Worker) => string | undefined;
  if (
    typeof value !== 'string' ||
    !/^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/.test(value) ||
    value.length > 16_384
  ) {
    // The key itself never reaches a message.
    const got = typeof value === 'string' ? `a string of ${value.length} characters` : typeof value;
    throw invalidArgument(
      `${field} must be printable ASCII without leading or trailing spaces (at most 16384 characters), or a function; got ${got}`,
    );
  }
  return value;
}

function readHeaderName(field: string, value: unknown): string {
  const name = readString(field, value, 256);
  if (!TOKEN.test(name)) fail(field, 'a header name', value);
  return name.toLowerCase();
}

function readHeaderList(field: string, value: unknown): 'all' | ReadonlySet<string> {
  if (value === 'all') return 'all';
  if (!Array.isArray(value)) fail(field, "'all' or an array of header names", value);
  return new Set(value.map((name, i) => readHeaderName(`${field}[${i}]`, name)));
}

function readRoutes(field: string, value: unknown): ReadonlySet<string> {
  if (!Array.isArray(value)) fail(field, 'an array of paths', value);
  const routes = new Set<string>();
  value.forEach((route, i) => {
    const path = readString(`${field}[${i}]`, route, 1_024);
    if (!ROUTE.test(path))
      fail(`${field}[${i}]`, "a path starting with '/' (no query or fragment)", route);
    routes.add(path);
  });
  return routes;
}
