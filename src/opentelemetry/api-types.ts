/**
 * The few members of the OpenTelemetry API that `fleetroute/opentelemetry` calls, typed here so
 * the published declarations never name the optional peer: a `Tracer` and a `Meter` of
 * `@opentelemetry/api` (any 1.x) fit them as they are.
 *
 * @module
 */

/** An attribute value: what spans and metric points carry here. @public */
export type OpenTelemetryAttributeValue = string | number | boolean;

/** Attributes of a span or a metric point. @public */
export type OpenTelemetryAttributes = Record<string, OpenTelemetryAttributeValue>;

/**
 * An OpenTelemetry `Context` (`context.active()`, `trace.setSpan(…)`): the parent of a call's
 * span, when given to {@link RouterTracing.execute}.
 *
 * @public
 */
export interface OpenTelemetryContext {
  getValue(key: symbol): unknown;
}

/** The members of an OpenTelemetry `Span` that are called here. @public */
export interface OpenTelemetrySpan {
  setAttribute(key: string, value: OpenTelemetryAttributeValue): unknown;
  setStatus(status: { code: number; message?: string }): unknown;
  /** Every `Span` of `@opentelemetry/api` 1.x has it; a span without it gets no events. */
  addEvent?(name: string, attributes?: OpenTelemetryAttributes): unknown;
  end(): void;
}

/** The span options passed to {@link OpenTelemetryTracer.startSpan}. @public */
export interface OpenTelemetrySpanOptions {
  /** `SpanKind` (`CLIENT` here). */
  kind?: number;
  attributes?: OpenTelemetryAttributes;
}

/** The member of an OpenTelemetry `Tracer` that is called here. @public */
export interface OpenTelemetryTracer {
  startSpan(
    name: string,
    options?: OpenTelemetrySpanOptions,
    context?: OpenTelemetryContext,
  ): OpenTelemetrySpan;
}

/** The options passed when an instrument is created. @public */
export interface OpenTelemetryInstrumentOptions {
  description?: string;
  unit?: string;
  /** Histogram bucket boundaries, a hint SDKs since API 1.7 follow (older ones ignore it). */
  advice?: { explicitBucketBoundaries?: number[] };
}

/** The member of an OpenTelemetry `Counter` that is called here. @public */
export interface OpenTelemetryCounter {
  add(value: number, attributes?: OpenTelemetryAttributes): void;
}

/** The member of an OpenTelemetry `Histogram` that is called here. @public */
export interface OpenTelemetryHistogram {
  record(value: number, attributes?: OpenTelemetryAttributes): void;
}

/** What an observable instrument's callback reports through (`ObservableResult`). @public */
export interface OpenTelemetryObservableResult {
  observe(value: number, attributes?: OpenTelemetryAttributes): void;
}

/** The members of an OpenTelemetry observable instrument that are called here. @public */
export interface OpenTelemetryObservable {
  addCallback(callback: (result: OpenTelemetryObservableResult) => void): void;
  removeCallback(callback: (result: OpenTelemetryObservableResult) => void): void;
}

/** The members of an OpenTelemetry `Meter` that are called here. @public */
export interface OpenTelemetryMeter {
  createCounter(name: string, options?: OpenTelemetryInstrumentOptions): OpenTelemetryCounter;
  createHistogram(name: string, options?: OpenTelemetryInstrumentOptions): OpenTelemetryHistogram;
  /**
   * Every `Meter` of `@opentelemetry/api` 1.x has it; a meter without it gets no per-worker
   * in-flight and prefilling instruments.
   */
  createObservableUpDownCounter?(
    name: string,
    options?: OpenTelemetryInstrumentOptions,
  ): OpenTelemetryObservable;
}
