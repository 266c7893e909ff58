/**
 * `fleetroute/opentelemetry`: a router's calls as OpenTelemetry traces — one span per
 * `execute`, a child per attempt, the attempt's `traceparent` handed to `send` — and its
 * observation events as OpenTelemetry metrics. `@opentelemetry/api` is an optional peer
 * dependency, loaded by {@link instrumentRouter}; the types here are structural, so any 1.x
 * `Tracer` and `Meter` fit.
 *
 * @packageDocumentation
 */

export type {
  OpenTelemetryAttributes,
  OpenTelemetryAttributeValue,
  OpenTelemetryContext,
  OpenTelemetryCounter,
  OpenTelemetryHistogram,
  OpenTelemetryInstrumentOptions,
  OpenTelemetryMeter,
  OpenTelemetryObservable,
  OpenTelemetryObservableResult,
  OpenTelemetrySpan,
  OpenTelemetrySpanOptions,
  OpenTelemetryTracer,
} from './api-types.js';
export type { OpenTelemetryOptions } from './instrument-router.js';
export { instrumentRouter } from './instrument-router.js';
export type {
  RouterTracing,
  TracedAttemptContext,
  TracedExecuteOptions,
  TracedSend,
} from './router-tracing.js';
