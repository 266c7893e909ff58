/**
 * Which Prometheus metrics of vLLM and SGLang feed which `LoadReport` field, and how several
 * series of one metric combine (TensorRT-LLM's JSON iteration statistics are read by
 * `trtllm-iteration-stats.ts`). The table here is the contract `docs/http-transport.md` shows.
 *
 * @module
 * @internal
 */

/** @internal A value the transport gathers from a scrape (`generatedTokens` feeds throughput). */
export type LoadField =
  | 'runningRequests'
  | 'waitingRequests'
  | 'tokenUsage'
  | 'throughput'
  | 'generatedTokens';

/** @internal Every {@link LoadField}, in slot order. */
export const LOAD_FIELDS: readonly LoadField[] = Object.freeze([
  'runningRequests',
  'waitingRequests',
  'tokenUsage',
  'throughput',
  'generatedTokens',
]);

/** @internal How one metric feeds one field. */
export interface MetricRule {
  /** Slot of the field in {@link LOAD_FIELDS}. */
  readonly slot: number;
  /**
   * When several metrics feed one field, the lowest preference present wins (vLLM's
   * `kv_cache_usage_perc` before the older `gpu_cache_usage_perc`).
   */
  readonly preference: number;
  /**
   * How series of the metric combine: counts and rates add up across engines and models (but
   * series that differ only in a {@link RuntimeMetrics.replicaLabels} label are one engine's
   * state reported several times, and count once: their maximum); usage takes the fullest
   * series, since one saturated engine is what admission hits first.
   */
  readonly combine: 'sum' | 'max';
}

/** @internal The metrics one engine serves. */
export interface RuntimeMetrics {
  readonly runtime: 'vllm' | 'sglang';
  /**
   * Label that names a data-parallel rank in this engine's series. For a worker registered as one
   * rank (`dpRank` set), a series carrying this label counts only when it names that rank.
   */
  readonly rankLabel: string;
  /**
   * Labels that tell apart processes reporting the same engine state. SGLang started with
   * `--enable-metrics-for-all-schedulers` has every tensor-parallel scheduler publish the same
   * running and queued requests, told apart only by `tp_rank` (and `moe_ep_rank`, derived from
   * it): a sum over them would count each request once per rank.
   */
  readonly replicaLabels: readonly string[];
  /** Name prefixes of the engine's own metrics: any series with one shows the engine is there. */
  readonly prefixes: readonly string[];
  /** Rules by full metric name. */
  readonly rules: ReadonlyMap<string, MetricRule>;
}

function rule(field: LoadField, combine: 'sum' | 'max', preference = 0): MetricRule {
  return Object.freeze({ slot: LOAD_FIELDS.indexOf(field), preference, combine });
}

function table(
  prefixes: readonly string[],
  entries: [string, MetricRule][],
): Map<string, MetricRule> {
  const map = new Map<string, MetricRule>();
  for (const prefix of prefixes) for (const [name, r] of entries) map.set(prefix + name, r);
  return map;
}

/**
 * @internal The Prometheus client's process collector series read for `LoadReport.startedAt`:
 * when the process serving `/metrics` started, in seconds since the epoch. vLLM's OpenAI server
 * serves it when it runs one API server process (its default registry carries the process
 * collector); with several, and in SGLang, `/metrics` serves a registry holding only the
 * multiprocess collector, without it. TensorRT-LLM's JSON has none.
 */
export const START_TIME_METRIC = 'process_start_time_seconds';

/**
 * @internal Start times outside these bounds (seconds since the epoch: 2000-01-01 and
 * 2100-01-01) are ignored as absurd.
 */
export const START_TIME_BOUNDS_S: readonly [number, number] = Object.freeze([
  946_684_800, 4_102_444_800,
]);

/** @internal vLLM (V0 and V1 engines). */
export const VLLM_METRICS: RuntimeMetrics = Object.freeze({
  runtime: 'vllm',
  rankLabel: 'engine',
  replicaLabels: Object.freeze([]),
  prefixes: Object.freeze(['vllm:']),
  rules: table(
    ['vllm:'],
    [
      ['num_requests_running', rule('runningRequests', 'sum')],
      ['num_requests_waiting', rule('waitingRequests', 'sum')],
      ['kv_cache_usage_perc', rule('tokenUsage', 'max', 0)],
      ['gpu_cache_usage_perc', rule('tokenUsage', 'max', 1)],
      // V0 engines only; V1 drops it, and throughput then comes from the token counter.
      ['avg_generation_throughput_toks_per_s', rule('throughput', 'sum')],
      ['generation_tokens_total', rule('generatedTokens', 'sum')],
    ],
  ),
});

/** @internal SGLang (`sglang:` names, and `sglang_` as some versions and exporters write them). */
export const SGLANG_METRICS: RuntimeMetrics = Object.freeze({
  runtime: 'sglang',
  rankLabel: 'dp_rank',
  // Label names as SGLang's scheduler sets them (SchedulerMetricsMixin.init_metrics).
  replicaLabels: Object.freeze(['tp_rank', 'moe_ep_rank']),
  prefixes: Object.freeze(['sglang:', 'sglang_']),
  rules: table(
    ['sglang:', 'sglang_'],
    [
      ['num_running_reqs', rule('runningRequests', 'sum')],
      ['num_queue_reqs', rule('waitingRequests', 'sum')],
      ['token_usage', rule('tokenUsage', 'max')],
      ['gen_throughput', rule('throughput', 'sum')],
      ['generation_tokens_total', rule('generatedTokens', 'sum')],
    ],
  ),
});
