/**
 * The data types of a Prometheus text-format parse: a sample, and the metric types a `# TYPE`
 * line may declare. Shared by the parser and its line scanner.
 *
 * @module
 */

/**
 * Metric types a `# TYPE` line may declare (the classic text format's five, plus the OpenMetrics
 * names, which some exporters emit in the classic format too).
 *
 * @public
 */
export type PrometheusMetricType =
  | 'counter'
  | 'gauge'
  | 'histogram'
  | 'summary'
  | 'untyped'
  | 'unknown'
  | 'info'
  | 'stateset'
  | 'gaugehistogram';

/**
 * One sample line: `name{label="value",…} value [timestamp]`. Histogram and summary series are
 * ordinary samples named `<family>_bucket` (with an `le` label), `<family>_sum` and
 * `<family>_count` (or with a `quantile` label); the parser does not group them.
 *
 * @public
 */
export interface PrometheusSample {
  /** The metric name, as written (`vllm:num_requests_running`, `…_bucket`). */
  readonly name: string;
  /**
   * Label names to unescaped values. An object without a prototype, so a label named
   * `__proto__` or `constructor` is an ordinary key. Samples without labels share one frozen
   * empty object.
   */
  readonly labels: Readonly<Record<string, string>>;
  /** The value; `NaN`, `+Inf` and `-Inf` are kept as `NaN`, `Infinity` and `-Infinity`. */
  readonly value: number;
  /** The optional timestamp (milliseconds since the epoch), or `undefined` when absent. */
  readonly timestampMs: number | undefined;
}
