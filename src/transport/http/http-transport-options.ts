/**
 * Options of `httpTransport`, their defaults and their validation.
 *
 * @module
 */
import { invalidArgument } from '../../core/errors.js';
import { type Logger, log, readLogger } from '../../core/logger.js';
import {
  callback,
  custom,
  derived,
  duration,
  integer,
  OptionTable,
} from '../../core/option-table.js';
import { fail, readString } from '../../core/options.js';
import { emitProcessWarning, type HttpTransportWarning } from './transport-warning.js';

/**
 * The fetch function the transport calls: the global `fetch`, undici's `fetch`, or a wrapper of
 * either (to add a dispatcher, TLS options, tracing…). It receives a URL string and an init with
 * `method`, `headers` (a plain record), `signal` and `redirect: 'manual'`, and must honour the
 * signal.
 *
 * @public
 */
export type FetchFunction = (url: string, init: RequestInit) => Promise<Response>;

/**
 * How `httpTransport` reaches workers. Durations are in milliseconds, sizes in bytes.
 *
 * @public
 */
export interface HttpTransportOptions {
  /**
   * The fetch implementation. Read once, when the transport is created.
   * @defaultValue `globalThis.fetch` (Node 20's built-in, undici-based fetch)
   */
  readonly fetch?: FetchFunction;
  /**
   * Key sent as `Authorization: Bearer <key>` to workers that have no `apiKey` of their own (a
   * worker's own key always wins). Printable ASCII without leading or trailing spaces, at most
   * 16,384 characters. Never logged, never part of an error message.
   * @defaultValue none (no `Authorization` header)
   */
  readonly apiKey?: string;
  /**
   * Deadline of each call (ms), from the request until the body has been read. A call also ends
   * when the router's signal fires, whichever comes first.
   * @defaultValue 5000
   */
  readonly timeoutMs?: number;
  /**
   * Largest `/metrics` or `/v1/models` body read (bytes). A larger body is cancelled (its
   * connection closed) and the call fails as if the worker had not answered. Memory per call is
   * about twice this.
   * @defaultValue 4194304 (4 MiB; a vLLM scrape with histograms is typically 20–200 KiB)
   */
  readonly maxBodyBytes?: number;
  /** Path of the health endpoint, appended to `worker.baseUrl`. @defaultValue '/health' */
  readonly healthPath?: string;
  /**
   * Path of the metrics endpoint: Prometheus text for vLLM and SGLang, the JSON iteration
   * statistics for TensorRT-LLM (`trtllm-serve` serves both kinds at `/metrics`).
   * @defaultValue '/metrics'
   */
  readonly metricsPath?: string;
  /** Path of the OpenAI-compatible model list. @defaultValue '/v1/models' */
  readonly modelsPath?: string;
  /**
   * Time source (ms) for a report's `at` and for throughput derived from token counters.
   * @defaultValue `performance.timeOrigin + performance.now()` (epoch milliseconds that never
   * step backwards)
   */
  readonly clock?: () => number;
  /**
   * Workers whose last generated-token count is remembered to derive `throughput` from two
   * scrapes (least recently scraped forgotten first); 0 turns that derivation off. About 100
   * bytes per worker. The same number bounds the (warning, worker) pairs remembered so that
   * `onWarning` hears of each once (4096 of them when this is 0).
   * @defaultValue 4096
   */
  readonly maxTrackedWorkers?: number;
  /**
   * Called when a worker's load cannot be read for a reason that will not go away by itself
   * (see {@link HttpTransportWarning}: an SGLang worker started without `--enable-metrics`, a
   * metrics body over `maxBodyBytes`…), at most once per worker URL and warning code. Called
   * synchronously inside `loads`; whatever it throws is ignored. Pass `() => {}` to silence.
   * @defaultValue `process.emitWarning(warning.message, { code: 'FLEETROUTE_' + warning.code })`
   * (for example `FLEETROUTE_METRICS_MISSING`), once per worker and code
   */
  readonly onWarning?: (warning: HttpTransportWarning) => void;
  /**
   * Where the warnings go when `onWarning` is not given: `logger.warn({ code, url, runtime, … },
   * message)`, `code` as `FLEETROUTE_METRICS_MISSING`. pino, bunyan and `console` fit.
   * @defaultValue none (process warnings, as `onWarning`'s default)
   */
  readonly logger?: Logger;
}

/** {@link HttpTransportOptions} with every default filled in. @internal */
export interface ResolvedHttpTransportOptions {
  readonly fetch: FetchFunction;
  readonly apiKey: string | undefined;
  readonly timeoutMs: number;
  readonly maxBodyBytes: number;
  readonly healthPath: string;
  readonly metricsPath: string;
  readonly modelsPath: string;
  readonly clock: () => number;
  readonly maxTrackedWorkers: number;
  readonly onWarning: (warning: HttpTransportWarning) => void;
}

/** Longest API key accepted (the registry's limit for `spec.apiKey`). */
const MAX_API_KEY_LENGTH = 16_384;
const MAX_PATH_LENGTH = 2_048;
/** Printable ASCII, no leading or trailing space: safe as an HTTP header value as is. */
const HEADER_SAFE = /^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$/;
/** A path: starts with `/`, printable ASCII without spaces and without a fragment. */
const PATH = /^\/[\x21-\x22\x24-\x7e]*$/;

const epochClock = (): number => performance.timeOrigin + performance.now();

/**
 * @internal Whether `key` can be sent in an `Authorization` header unchanged (printable ASCII,
 * no leading or trailing space, at most 16,384 characters).
 */
export function isUsableApiKey(key: string): boolean {
  return key.length <= MAX_API_KEY_LENGTH && HEADER_SAFE.test(key);
}

/**
 * @internal Default of {@link HttpTransportOptions.maxTrackedWorkers}, and the bound of the
 * warnings remembered when that option is 0.
 */
export const DEFAULT_MAX_TRACKED_WORKERS = 4_096;

/** @internal The transport's options (unknown ones are rejected, so a typo fails fast). */
export const HTTP_TRANSPORT_OPTIONS = new OptionTable('httpTransport', 'HttpTransportOptions', {
  // Read when the transport is created: `globalThis.fetch` at that moment.
  fetch: custom<FetchFunction>(
    derived(() => globalThis.fetch as FetchFunction),
    (field, value) => {
      if (typeof value !== 'function') fail(field, 'a fetch function', value);
      return value as FetchFunction;
    },
    '`globalThis.fetch`',
  ),
  apiKey: custom<string | undefined>(undefined, (_field, value) => readApiKey(value), 'none'),
  timeoutMs: duration(5_000),
  maxBodyBytes: integer(4_194_304, 1, 1_073_741_824),
  healthPath: custom('/health', readPath),
  metricsPath: custom('/metrics', readPath),
  modelsPath: custom('/v1/models', readPath),
  clock: callback<() => number>(
    'a function returning milliseconds',
    epochClock,
    '`performance.timeOrigin + performance.now()`',
  ),
  maxTrackedWorkers: integer(DEFAULT_MAX_TRACKED_WORKERS, 0, 1_048_576),
  onWarning: callback<(warning: HttpTransportWarning) => void>(
    'a function',
    undefined,
    '`process.emitWarning(',
  ),
  logger: custom<Logger | undefined>(undefined, (field, value) => readLogger(field, value), 'none'),
});

/**
 * Validates `input` and fills in defaults. Unknown fields are rejected, so a typo fails fast.
 * The message for a bad `apiKey` describes the rule, never the key.
 *
 * @throws FleetRouteError `INVALID_ARGUMENT` naming the first bad field.
 * @internal
 */
export function resolveHttpTransportOptions(input: unknown): ResolvedHttpTransportOptions {
  const o = HTTP_TRANSPORT_OPTIONS.read(input);
  if (typeof o.fetch !== 'function') fail('httpTransport.fetch', 'a fetch function', o.fetch);
  const logger = o.logger;
  const onWarning =
    o.onWarning ??
    (logger === undefined
      ? emitProcessWarning
      : (warning: HttpTransportWarning) => {
          const { message, code, ...fields } = warning;
          log(logger, 'warn', `FLEETROUTE_${code}` as const, message, fields);
        });
  return Object.freeze({ ...o, onWarning }) as ResolvedHttpTransportOptions;
}

function readApiKey(value: unknown): string | undefined {
  if (typeof value !== 'string' || !isUsableApiKey(value)) {
    // Describe the value's kind and length only: the key itself must never reach a message.
    const got = typeof value === 'string' ? `a string of ${value.length} characters` : typeof value;
    throw invalidArgument(
      `httpTransport.apiKey must be printable ASCII without leading or trailing spaces, at most ${MAX_API_KEY_LENGTH} characters, got ${got}`,
    );
  }
  return value;
}

function readPath(field: string, value: unknown): string {
  const path = readString(field, value, MAX_PATH_LENGTH);
  if (!PATH.test(path)) fail(field, "a path starting with '/' (printable ASCII, no '#')", value);
  return path;
}
