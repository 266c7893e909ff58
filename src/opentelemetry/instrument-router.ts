/**
 * `instrumentRouter`: a router's calls traced, and its events measured, with OpenTelemetry.
 *
 * @module
 */
import { custom, OptionTable } from '../core/option-table.js';
import { fail, readString } from '../core/options.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { Router } from '../router/router.js';
import type {
  OpenTelemetryAttributes,
  OpenTelemetryMeter,
  OpenTelemetryTracer,
} from './api-types.js';
import { loadOpenTelemetryApi } from './load-api.js';
import { RouterMeters } from './router-meters.js';
import { RouterTracer } from './router-tracer.js';
import type { RouterTracing } from './router-tracing.js';
import { scopeVersion } from './scope-version.js';

/** Options of {@link instrumentRouter}. @public */
export interface OpenTelemetryOptions {
  /**
   * Where the spans go: any OpenTelemetry `Tracer`.
   * @defaultValue the global tracer, `trace.getTracer('fleetroute', version)`
   */
  readonly tracer?: OpenTelemetryTracer;
  /**
   * Where the metrics go: any OpenTelemetry `Meter`. Its instruments are created once, here.
   * @defaultValue the global meter, `metrics.getMeter('fleetroute', version)`
   */
  readonly meter?: OpenTelemetryMeter;
  /**
   * `gen_ai.operation.name` of every call span, and the first word of its name (`chat`,
   * `text_completion`, `embeddings`…). At most 64 characters.
   * @defaultValue 'chat'
   */
  readonly operationName?: string;
  /**
   * `gen_ai.provider.name` of every call span and operation point (`openai`, `vllm`…). At most 64
   * characters.
   * @defaultValue none
   */
  readonly providerName?: string;
  /**
   * The registry whose served models may appear in metric attributes: a decision's or a call's
   * model is written as `gen_ai.request.model` only when `workers.getModels()` lists it, so a
   * request cannot grow the series. Its workers' in-flight and prefilling requests are also
   * observed at each collection (`fleetroute.worker.in_flight`, `fleetroute.worker.prefilling`).
   * Cost: O(models) per decision, call, first token and usage report; O(workers) per collection.
   * @defaultValue none: metric points carry no model, and no per-worker counts are observed
   */
  readonly workers?: WorkerRegistry;
}

function readName(field: string, value: unknown): string {
  return readString(field, value, 64);
}

function readObjectWith(methods: readonly string[], rule: string) {
  return <T>(field: string, value: unknown): T => {
    const o = value as Record<string, unknown> | null;
    if (typeof o !== 'object' || o === null || methods.some((m) => typeof o[m] !== 'function')) {
      fail(field, rule, value);
    }
    return value as T;
  };
}

/** @internal The options of {@link instrumentRouter}, declared once. */
export const OPENTELEMETRY_OPTIONS = new OptionTable('instrumentRouter', 'OpenTelemetryOptions', {
  tracer: custom<OpenTelemetryTracer | undefined>(
    undefined,
    readObjectWith(['startSpan'], 'a Tracer (an object with startSpan)'),
    'the global tracer',
  ),
  meter: custom<OpenTelemetryMeter | undefined>(
    undefined,
    readObjectWith(['createCounter', 'createHistogram'], 'a Meter'),
    'the global meter',
  ),
  operationName: custom('chat', readName),
  providerName: custom<string | undefined>(undefined, readName, 'none'),
  workers: custom<WorkerRegistry | undefined>(
    undefined,
    readObjectWith(['getModels', 'getAll'], 'a WorkerRegistry'),
    'none',
  ),
});

/**
 * Instruments `router` with OpenTelemetry: {@link RouterTracing.execute} traces a call (a span
 * per call, a child per attempt, the attempt's `traceparent` handed to `send`), and the router's
 * events become metrics on the meter — `fleetroute.decisions`, `fleetroute.attempts`,
 * `fleetroute.retries`, `fleetroute.select.duration`, `gen_ai.client.operation.time_to_first_chunk`,
 * `gen_ai.client.token.usage`, `fleetroute.usage.cache_read.input_tokens`, and
 * `gen_ai.client.operation.duration` per traced call; with `workers`, each worker's in-flight and
 * prefilling requests at collection. The event metrics count every decision, attempt, retry,
 * first token and usage report of the router, traced or not. Loads the optional peer
 * `@opentelemetry/api` on first use.
 *
 * Cost: a `decision`, an `attempt`, a `retry`, a `firstToken` and a `usage` listener on the
 * router (the router builds those events from now on); per event one attributes object and one
 * instrument call (two for a usage report).
 *
 * @param router - the router to observe; its calls are untouched unless made through the result.
 * @returns the tracing; `close()` it to remove its listeners.
 * @throws {@link FleetRouteError} (as a rejection) `INVALID_ARGUMENT` for a `router` that is not
 *   one or a bad option (named); `MISSING_DEPENDENCY` when `@opentelemetry/api` is not installed.
 *
 * @example
 * ```ts
 * import { instrumentRouter } from 'fleetroute/opentelemetry';
 *
 * const tracing = await instrumentRouter(router, { providerName: 'vllm', workers: registry });
 * const response = await tracing.execute({ model, text }, (worker, { signal, headers }) =>
 *   fetch(`${worker.baseUrl}/v1/chat/completions`, { method: 'POST', body, signal, headers }),
 * );
 * ```
 * @public
 */
export async function instrumentRouter(
  router: Router,
  options: OpenTelemetryOptions = {},
): Promise<RouterTracing> {
  const r = router as Partial<Record<'execute' | 'on' | 'off', unknown>> | null;
  if (
    typeof r !== 'object' ||
    r === null ||
    typeof r.execute !== 'function' ||
    typeof r.on !== 'function' ||
    typeof r.off !== 'function'
  ) {
    fail('router', 'a Router', router);
  }
  const o = OPENTELEMETRY_OPTIONS.read(options);
  const api = await loadOpenTelemetryApi();
  const version = scopeVersion();
  const base: OpenTelemetryAttributes = { 'gen_ai.operation.name': o.operationName };
  if (o.providerName !== undefined) base['gen_ai.provider.name'] = o.providerName;
  Object.freeze(base);
  const meter = o.meter ?? api.metrics.getMeter('fleetroute', version);
  return new RouterTracer({
    router,
    api,
    tracer: o.tracer ?? api.trace.getTracer('fleetroute', version),
    meters: new RouterMeters(meter, o.workers, base),
    operationName: o.operationName,
    callAttributes: base,
  });
}
