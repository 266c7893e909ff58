/**
 * Warnings of the HTTP transport: a worker whose load can never be read, said once per worker
 * instead of failing silently on every poll.
 *
 * @module
 */
import { log } from '../../core/logger.js';
import type { RuntimeType } from '../../workers/worker-spec.js';

/**
 * A condition that makes a worker's load unreadable, reported through the `onWarning` option of
 * `httpTransport` at most once per worker URL and code. `url` is the worker's URL (as
 * registered); `message` names the request and says what to change, and never holds a key or
 * the response body.
 *
 * - `METRICS_MISSING`: the metrics endpoint answered 404, or answered 2xx without any metric of
 *   the worker's engine (`status` says which). An SGLang worker started without
 *   `--enable-metrics` serves no `/metrics` at all; a TensorRT-LLM worker whose `/metrics` is not
 *   its JSON statistics array, or a vLLM worker behind a proxy that rewrites the path, look the
 *   same.
 * - `METRICS_TOO_LARGE`: the metrics body exceeded `maxBodyBytes` and was cancelled.
 *
 * @public
 */
export type HttpTransportWarning =
  | {
      readonly code: 'METRICS_MISSING';
      readonly url: string;
      readonly runtime: RuntimeType;
      /** The HTTP status of the scrape (404, or the 2xx whose body held no known metric). */
      readonly status: number;
      readonly message: string;
    }
  | {
      readonly code: 'METRICS_TOO_LARGE';
      readonly url: string;
      readonly runtime: RuntimeType;
      /** The bound the body exceeded. */
      readonly maxBodyBytes: number;
      readonly message: string;
    };

/** Every {@link HttpTransportWarning} code. @public */
export type HttpTransportWarningCode = HttpTransportWarning['code'];

/**
 * @internal The default `onWarning`: a Node process warning with the code
 * `FLEETROUTE_<code>` (`FLEETROUTE_METRICS_MISSING`), where `process.emitWarning` exists.
 */
export function emitProcessWarning(warning: HttpTransportWarning): void {
  log(undefined, 'warn', `FLEETROUTE_${warning.code}` as const, warning.message);
}

/** What to do about a worker that serves no metrics of its engine, by runtime. */
const MISSING_HINT: Readonly<Record<RuntimeType, string>> = Object.freeze({
  sglang:
    'SGLang serves /metrics only when started with --enable-metrics; without it no load is ever read',
  vllm: 'vLLM serves its vllm: metrics at /metrics by default; check metricsPath and any proxy in front of the worker',
  trtllm:
    'trtllm-serve serves a JSON array of iteration statistics at /metrics; the PyTorch backend fills it only with enable_iter_perf_stats: true in the YAML given to --extra_llm_api_options',
  unspecified:
    'no vLLM, SGLang or TensorRT-LLM metrics were found; set the worker runtime and check that the engine publishes metrics',
});

/** @internal The message of a `METRICS_MISSING` warning for `GET <metricsUrl>`. */
export function metricsMissingMessage(
  runtime: RuntimeType,
  metricsUrl: string,
  status: number,
): string {
  const what = status === 404 ? 'answered 404' : `answered ${status} without any known metric`;
  return `GET ${metricsUrl} ${what}: ${MISSING_HINT[runtime]}.`;
}

/** @internal The message of a `METRICS_TOO_LARGE` warning. */
export function metricsTooLargeMessage(metricsUrl: string, maxBodyBytes: number): string {
  return `GET ${metricsUrl} returned a body larger than maxBodyBytes (${maxBodyBytes} bytes); it was cancelled and no load was read. Raise maxBodyBytes if the worker's scrape is legitimately that large.`;
}

/**
 * @internal Calls the handler at most once per (code, worker URL), remembering at most
 * `capacity` pairs (least recently warned forgotten first, so a fleet larger than that may hear
 * of one worker again). A handler that throws is ignored: a warning never fails a call.
 * Cost: O(1) per warning; about 100 bytes per remembered pair.
 */
export class WarningLog {
  readonly #handler: (warning: HttpTransportWarning) => void;
  readonly #capacity: number;
  readonly #warned = new Set<string>();

  constructor(handler: (warning: HttpTransportWarning) => void, capacity: number) {
    this.#handler = handler;
    this.#capacity = capacity;
  }

  /** Pairs remembered now. */
  get size(): number {
    return this.#warned.size;
  }

  /** Hands `warning` to the handler unless its (code, url) pair was already reported. */
  warn(warning: HttpTransportWarning): void {
    const key = `${warning.code} ${warning.url}`;
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    if (this.#warned.size > this.#capacity) {
      const oldest = this.#warned.values().next();
      if (oldest.done !== true) this.#warned.delete(oldest.value);
    }
    try {
      this.#handler(warning);
    } catch {
      // A broken handler must not turn a load poll into a failure.
    }
  }
}
