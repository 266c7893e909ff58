/**
 * `httpTransport`: the ready `Transport` for vLLM, SGLang and TensorRT-LLM workers over HTTP.
 *
 * @module
 */
import { FleetRouteError, invalidArgument } from '../../core/errors.js';
import type { LoadReport } from '../../workers/load-report.js';
import type { Worker } from '../../workers/worker.js';
import type { Transport } from '../transport.js';
import { CallDeadline } from './call-deadline.js';
import {
  DEFAULT_MAX_TRACKED_WORKERS,
  type FetchFunction,
  type HttpTransportOptions,
  isUsableApiKey,
  type ResolvedHttpTransportOptions,
  resolveHttpTransportOptions,
} from './http-transport-options.js';
import { LoadReader } from './load-reader.js';
import { readModelIds } from './model-list.js';
import { discardLateResponse, drainBody, readBody } from './response-body.js';
import { transportFailure } from './transport-failure.js';
import { metricsMissingMessage, metricsTooLargeMessage, WarningLog } from './transport-warning.js';

/**
 * The HTTP transport: a {@link Transport} whose three methods are all present. The `signal`
 * of each method is optional here (the timeout still applies), so the transport can be called
 * directly as well as by a router.
 *
 * Every call is one `GET <worker.baseUrl><path>` that ends within `timeoutMs` or soon after
 * `signal` fires, leaving no timer, listener or open body behind. Authentication:
 * `Authorization: Bearer <key>` with the worker's `apiKey`, else the transport's. Redirects are
 * not followed (a 3xx is a failure), so the key never travels to another host.
 *
 * @public
 */
export interface HttpTransport extends Transport {
  /**
   * `GET <baseUrl>/health` (the `healthPath`): whether the worker answers 2xx. The body is
   * drained (up to 64 KiB, so the connection can be reused) or cancelled; a 2xx whose body
   * never finishes still counts as healthy once the deadline ends the wait.
   *
   * Cost: one request; no body buffered.
   *
   * @returns `true` on 2xx; `false` on any other status, a network error, a timeout or an abort.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` (as a rejection) only when `worker` is not
   *   a worker or `signal` not a signal; never for the worker's behaviour.
   */
  probe(worker: Worker, signal?: AbortSignal): Promise<boolean>;
  /**
   * `GET <baseUrl>/metrics` (the `metricsPath`): the worker's load, from the Prometheus text of
   * vLLM and SGLang or the JSON iteration statistics of TensorRT-LLM's `trtllm-serve`. See
   * `docs/http-transport.md` for the mapping of each engine.
   *
   * A 404, a body with no metric of the worker's engine, or a body over `maxBodyBytes` is also
   * reported once per worker through the `onWarning` option (an SGLang worker started without
   * `--enable-metrics` answers 404).
   *
   * Cost: one request; the body (at most `maxBodyBytes`) is buffered and parsed once, in time
   * linear in its size whatever it holds.
   *
   * @returns a report with the fields found and `at` (the time of the scrape), or `undefined`
   *   when the worker answers non-2xx, the body exceeds `maxBodyBytes`, no known metric has a
   *   usable value, or the call fails, times out or is aborted.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` (as a rejection) only for bad arguments.
   */
  loads(worker: Worker, signal?: AbortSignal): Promise<LoadReport | undefined>;
  /**
   * `GET <baseUrl>/v1/models` (OpenAI format): the ids in `data[].id`, in order, without repeats.
   * An empty list means the worker answered with no model; it is never a fallback for a failure.
   *
   * Cost: one request; the body (at most `maxBodyBytes`) is buffered and parsed once.
   *
   * @returns the model ids.
   * @throws {@link FleetRouteError} (as a rejection) with code `TRANSPORT_FAILED` when the call
   *   fails, times out or is aborted, the status is not 2xx, or the body is too large, not JSON,
   *   or not a model list; `INVALID_ARGUMENT` for bad arguments. A router treats any rejection as
   *   "models unknown". The message names the URL and what went wrong, never a key or the body.
   */
  models(worker: Worker, signal?: AbortSignal): Promise<string[]>;
}

const ACCEPT_ANY = '*/*';
const ACCEPT_PROMETHEUS = 'text/plain;version=0.0.4;q=1,*/*;q=0.1';
const ACCEPT_JSON = 'application/json';

function noop(): void {}

function isResponse(value: unknown): value is Response {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as Response).status === 'number' &&
    typeof (value as Response).headers?.get === 'function'
  );
}

function isSuccess(response: Response): boolean {
  return response.status >= 200 && response.status <= 299;
}

/** Validates the arguments every method takes (programming errors, reported as such). */
function checkArguments(worker: unknown, signal: unknown): asserts worker is Worker {
  const w = worker as Partial<Worker> | null | undefined;
  if (typeof w?.baseUrl !== 'string' || typeof w.url !== 'string')
    throw invalidArgument('worker must be a Worker from a WorkerRegistry');
  if (
    signal !== undefined &&
    (typeof (signal as AbortSignal | null)?.aborted !== 'boolean' ||
      typeof (signal as AbortSignal).addEventListener !== 'function')
  ) {
    throw invalidArgument('signal must be an AbortSignal or undefined');
  }
}

class HttpTransportImpl implements HttpTransport {
  readonly #options: ResolvedHttpTransportOptions;
  readonly #fetch: FetchFunction;
  readonly #loads: LoadReader;
  readonly #warnings: WarningLog;

  constructor(options: ResolvedHttpTransportOptions) {
    this.#options = options;
    this.#fetch = options.fetch;
    this.#loads = new LoadReader(options.maxTrackedWorkers);
    this.#warnings = new WarningLog(
      options.onWarning,
      options.maxTrackedWorkers || DEFAULT_MAX_TRACKED_WORKERS,
    );
  }

  async probe(worker: Worker, signal?: AbortSignal): Promise<boolean> {
    checkArguments(worker, signal);
    try {
      return await this.#get(
        worker,
        this.#options.healthPath,
        ACCEPT_ANY,
        signal,
        async (response, deadline) => {
          await drainBody(response, deadline);
          return isSuccess(response);
        },
      );
    } catch {
      return false;
    }
  }

  async loads(worker: Worker, signal?: AbortSignal): Promise<LoadReport | undefined> {
    checkArguments(worker, signal);
    try {
      return await this.#get(
        worker,
        this.#options.metricsPath,
        ACCEPT_PROMETHEUS,
        signal,
        async (response, deadline) => {
          if (!isSuccess(response)) {
            await drainBody(response, deadline);
            if (response.status === 404) this.#metricsMissing(worker, 404);
            return undefined;
          }
          const maxBodyBytes = this.#options.maxBodyBytes;
          const text = await readBody(response, maxBodyBytes, deadline, true);
          if (text === undefined) {
            this.#warnings.warn({
              code: 'METRICS_TOO_LARGE',
              url: worker.url,
              runtime: worker.runtime,
              maxBodyBytes,
              message: metricsTooLargeMessage(this.#metricsUrl(worker), maxBodyBytes),
            });
            return undefined;
          }
          const { report, recognised } = this.#loads.scrape(text, worker, this.#options.clock());
          if (!recognised) this.#metricsMissing(worker, response.status);
          return report;
        },
      );
    } catch {
      return undefined;
    }
  }

  async models(worker: Worker, signal?: AbortSignal): Promise<string[]> {
    checkArguments(worker, signal);
    const url = worker.baseUrl + this.#options.modelsPath;
    return this.#get(
      worker,
      this.#options.modelsPath,
      ACCEPT_JSON,
      signal,
      async (response, deadline) => {
        if (!isSuccess(response)) {
          await drainBody(response, deadline);
          throw transportFailure(url, `the worker answered ${response.status}`);
        }
        const maxBytes = this.#options.maxBodyBytes;
        const text = await readBody(response, maxBytes, deadline, true);
        if (text === undefined)
          throw transportFailure(url, `the body is larger than ${maxBytes} bytes`);
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          // The parser's message quotes the body; it stays out of the error.
          throw transportFailure(url, 'the body is not JSON');
        }
        const ids = readModelIds(body);
        if (typeof ids === 'string') throw transportFailure(url, `not a model list: ${ids}`);
        return ids;
      },
    );
  }

  #metricsUrl(worker: Worker): string {
    return worker.baseUrl + this.#options.metricsPath;
  }

  #metricsMissing(worker: Worker, status: number): void {
    this.#warnings.warn({
      code: 'METRICS_MISSING',
      url: worker.url,
      runtime: worker.runtime,
      status,
      message: metricsMissingMessage(worker.runtime, this.#metricsUrl(worker), status),
    });
  }

  /**
   * One `GET` of `path` on `worker` under a fresh deadline, handing the response to `read`
   * (which runs under the same deadline). Every failure becomes a `TRANSPORT_FAILED` error.
   */
  async #get<T>(
    worker: Worker,
    path: string,
    accept: string,
    signal: AbortSignal | undefined,
    read: (response: Response, deadline: CallDeadline) => Promise<T>,
  ): Promise<T> {
    const url = worker.baseUrl + path;
    const key = worker.apiKey ?? this.#options.apiKey;
    // A key that is not a valid header value would make fetch throw an error quoting it.
    if (key !== undefined && !isUsableApiKey(key))
      throw transportFailure(url, "the worker's apiKey is not a valid HTTP header value");
    const headers: Record<string, string> = { accept };
    if (key !== undefined) headers.authorization = `Bearer ${key}`;

    const deadline = new CallDeadline(signal, this.#options.timeoutMs);
    try {
      if (deadline.signal.aborted) throw deadline.signal.reason;
      const pending = Promise.resolve(
        this.#fetch(url, { method: 'GET', headers, signal: deadline.signal, redirect: 'manual' }),
      );
      let response: Response;
      try {
        response = await deadline.race(pending);
      } catch (error) {
        pending.then(discardLateResponse, noop);
        throw error;
      }
      if (!isResponse(response)) throw transportFailure(url, 'fetch resolved to a non-Response');
      return await read(response, deadline);
    } catch (error) {
      if (error instanceof FleetRouteError) throw error;
      throw transportFailure(url, deadline.reason ?? 'the request failed', error);
    } finally {
      deadline.dispose();
    }
  }
}

/**
 * Creates the HTTP transport for vLLM, SGLang and TensorRT-LLM workers (see
 * {@link HttpTransport} for what each method does and how it fails). The transport holds no
 * connection of its own: connections belong to the fetch implementation's pool (Node's global
 * dispatcher by default), so there is nothing to close. It keeps one small record per worker for
 * throughput and one per (warning, worker) pair already reported (each bounded by
 * `maxTrackedWorkers`).
 *
 * @param options - see {@link HttpTransportOptions}; every field is optional.
 * @returns the transport.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad or unknown option.
 *
 * @example
 * ```ts
 * import { WorkerRegistry } from 'fleetroute';
 * import { httpTransport } from 'fleetroute/http';
 *
 * const transport = httpTransport({ apiKey: process.env.WORKER_KEY, timeoutMs: 2_000 });
 * const registry = await WorkerRegistry.create();
 * const worker = await registry.register({ url: 'http://10.0.0.7:8000', runtime: 'vllm' });
 * if (await transport.probe(worker)) console.log(await transport.loads(worker));
 * ```
 * @public
 */
export function httpTransport(options: HttpTransportOptions = {}): HttpTransport {
  return new HttpTransportImpl(resolveHttpTransportOptions(options));
}
