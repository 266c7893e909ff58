/**
 * Real OpenTelemetry SDK objects for the tests: a tracer provider that keeps finished spans in
 * memory, the W3C propagator registered globally, and a meter provider read on demand.
 */
import { propagation, type SpanKind, SpanStatusCode } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import {
  AggregationTemporality,
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';

export type { ReadableSpan, SpanKind };
export { SpanStatusCode };

/** A tracer whose finished spans `spans()` returns, in the order they ended. */
export function memoryTracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  return {
    provider,
    tracer: provider.getTracer('test'),
    spans: (): ReadableSpan[] => exporter.getFinishedSpans(),
    close: () => provider.shutdown(),
  };
}

/** Registers the W3C trace-context propagator globally; returns its undo. */
export function useW3CPropagator(): () => void {
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  return () => propagation.disable();
}

/** A reader collected by hand. */
class PullReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

export interface MetricPoint {
  readonly name: string;
  readonly unit: string;
  readonly attributes: Record<string, unknown>;
  /** A counter's sum, a histogram's count. */
  readonly value: number;
  /** A histogram's sum. */
  readonly sum: number | undefined;
}

/** A meter, and `collect()`: every point of every instrument now. */
export function memoryMetrics() {
  const reader = new PullReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter('test'),
    async collect(): Promise<MetricPoint[]> {
      const { resourceMetrics } = await reader.collect();
      const points: MetricPoint[] = [];
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          for (const point of metric.dataPoints as DataPoint<number | Histogram>[]) {
            const v = point.value;
            points.push({
              name: metric.descriptor.name,
              unit: metric.descriptor.unit,
              attributes: { ...point.attributes },
              value: typeof v === 'number' ? v : v.count,
              sum: typeof v === 'number' ? undefined : v.sum,
            });
          }
        }
      }
      return points;
    },
    close: () => provider.shutdown(),
  };
}

/** The span with `spanId`. */
export function byId(spans: readonly ReadableSpan[], spanId: string | undefined): ReadableSpan {
  const span = spans.find((s) => s.spanContext().spanId === spanId);
  if (span === undefined) throw new Error(`no span ${spanId}`);
  return span;
}
