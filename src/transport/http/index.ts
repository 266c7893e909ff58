/**
 * `fleetroute/http`: a ready transport for vLLM, SGLang and TensorRT-LLM workers over HTTP, and
 * the Prometheus text-format parser it reads `/metrics` with.
 *
 * @packageDocumentation
 */

export type { HttpTransport } from './http-transport.js';
export { httpTransport } from './http-transport.js';
export type { FetchFunction, HttpTransportOptions } from './http-transport-options.js';
export type { PrometheusMetricType, PrometheusSample } from './prometheus-sample.js';
export type { PrometheusParseOptions, PrometheusParseResult } from './prometheus-text.js';
export { parsePrometheusText } from './prometheus-text.js';
export type { HttpTransportWarning, HttpTransportWarningCode } from './transport-warning.js';
