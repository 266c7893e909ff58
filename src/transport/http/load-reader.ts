/**
 * `LoadReader`: turns one `/metrics` scrape of a vLLM or SGLang worker into a `LoadReport`.
 *
 * @module
 * @internal
 */
import type { LoadReport } from '../../policies/policy.js';
import type { RuntimeType } from '../../workers/worker-spec.js';
import { parsePrometheusText } from './prometheus-text.js';
import {
  LOAD_FIELDS,
  type RuntimeMetrics,
  SGLANG_METRICS,
  VLLM_METRICS,
} from './runtime-metrics.js';
import { ThroughputTracker } from './throughput-tracker.js';

/** @internal What the reader needs to know about the scraped worker. */
export interface ScrapedWorker {
  readonly url: string;
  readonly runtime: RuntimeType;
  readonly dpRank?: number | undefined;
}

type MutableLoadReport = { -readonly [K in keyof LoadReport]: LoadReport[K] };

const RUNNING = LOAD_FIELDS.indexOf('runningRequests');
const WAITING = LOAD_FIELDS.indexOf('waitingRequests');
const USAGE = LOAD_FIELDS.indexOf('tokenUsage');
const THROUGHPUT = LOAD_FIELDS.indexOf('throughput');
const GENERATED = LOAD_FIELDS.indexOf('generatedTokens');

const EITHER: readonly RuntimeMetrics[] = Object.freeze([VLLM_METRICS, SGLANG_METRICS]);
const ONLY_VLLM: readonly RuntimeMetrics[] = Object.freeze([VLLM_METRICS]);
const ONLY_SGLANG: readonly RuntimeMetrics[] = Object.freeze([SGLANG_METRICS]);

function namesOf(families: readonly RuntimeMetrics[]): (name: string) => boolean {
  const names = new Set<string>();
  for (const family of families) for (const name of family.rules.keys()) names.add(name);
  return (name) => names.has(name);
}

const FILTERS = new Map<readonly RuntimeMetrics[], (name: string) => boolean>(
  [EITHER, ONLY_VLLM, ONLY_SGLANG].map((families) => [families, namesOf(families)]),
);

/**
 * @internal One value per {@link LOAD_FIELDS} slot gathered from `samples` by `family`'s rules:
 * non-finite and negative values are dropped; the most preferred metric present feeds a field;
 * its series are summed or maxed. `undefined` when no series counted.
 */
export function gather(
  samples: readonly { name: string; labels: Readonly<Record<string, string>>; value: number }[],
  family: RuntimeMetrics,
  dpRank: number | undefined,
): Float64Array | undefined {
  const values = new Float64Array(LOAD_FIELDS.length).fill(Number.NaN);
  const preference = new Float64Array(LOAD_FIELDS.length).fill(Number.POSITIVE_INFINITY);
  const rank = dpRank === undefined ? undefined : String(dpRank);
  let counted = false;
  for (const sample of samples) {
    const rule = family.rules.get(sample.name);
    const value = sample.value;
    if (rule === undefined || !Number.isFinite(value) || value < 0) continue;
    if (rank !== undefined) {
      const seriesRank = sample.labels[family.rankLabel];
      if (seriesRank !== undefined && seriesRank !== rank) continue;
    }
    const slot = rule.slot;
    if (rule.preference < preference[slot]!) {
      preference[slot] = rule.preference;
      values[slot] = value;
    } else if (rule.preference === preference[slot]) {
      values[slot] =
        rule.combine === 'sum' ? values[slot]! + value : Math.max(values[slot]!, value);
    }
    counted = true;
  }
  return counted ? values : undefined;
}

/**
 * @internal Reads scrapes into reports. Holds the throughput tracker, so one reader serves one
 * transport. Not safe to share between transports with different clocks.
 */
export class LoadReader {
  readonly #tracker: ThroughputTracker;

  constructor(maxTrackedWorkers: number) {
    this.#tracker = new ThroughputTracker(maxTrackedWorkers);
  }

  /**
   * The report in `text`, scraped from `worker` at `at`: the worker's own runtime's metrics when
   * it is `vllm` or `sglang`, otherwise vLLM's when any is present, else SGLang's.
   *
   * @returns the report (with `at`), or `undefined` when the text holds no usable value.
   * Cost: one parse of `text`, O(length), allocating only for the handful of metrics read.
   */
  read(text: string, worker: ScrapedWorker, at: number): LoadReport | undefined {
    const families =
      worker.runtime === 'vllm' ? ONLY_VLLM : worker.runtime === 'sglang' ? ONLY_SGLANG : EITHER;
    const { samples } = parsePrometheusText(text, { filter: FILTERS.get(families)! });
    let values: Float64Array | undefined;
    for (const family of families) {
      values = gather(samples, family, worker.dpRank);
      if (values !== undefined) break;
    }
    if (values === undefined) return undefined;

    const report: MutableLoadReport = {};
    if (!Number.isNaN(values[RUNNING]!)) report.runningRequests = values[RUNNING]!;
    if (!Number.isNaN(values[WAITING]!)) report.waitingRequests = values[WAITING]!;
    if (!Number.isNaN(values[USAGE]!)) report.tokenUsage = Math.min(1, values[USAGE]!);
    let throughput = values[THROUGHPUT]!;
    if (Number.isNaN(throughput) && !Number.isNaN(values[GENERATED]!)) {
      throughput = this.#tracker.observe(worker.url, values[GENERATED]!, at);
    }
    if (Number.isFinite(throughput)) report.throughput = throughput;
    if (Object.keys(report).length === 0) return undefined;
    report.at = at;
    return report;
  }
}
