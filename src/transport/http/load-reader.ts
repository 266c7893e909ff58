/**
 * `LoadReader`: turns one `/metrics` scrape of a vLLM, SGLang or TensorRT-LLM worker into a
 * `LoadReport`.
 *
 * @module
 * @internal
 */
import type { AdapterReport, LoadReport } from '../../workers/load-report.js';
import type { RuntimeType } from '../../workers/worker-spec.js';
import { LORA_METRICS, MAX_LORA_SERIES, readAdapters } from './lora-metrics.js';
import { gather } from './prometheus-load.js';
import { parsePrometheusText } from './prometheus-text.js';
import {
  LOAD_FIELDS,
  type RuntimeMetrics,
  SGLANG_METRICS,
  START_TIME_BOUNDS_S,
  START_TIME_METRIC,
  VLLM_METRICS,
} from './runtime-metrics.js';
import { ThroughputTracker } from './throughput-tracker.js';
import { readIterationStats } from './trtllm-iteration-stats.js';

/** @internal What the reader needs to know about the scraped worker. */
export interface ScrapedWorker {
  readonly url: string;
  readonly runtime: RuntimeType;
  readonly dpRank?: number | undefined;
}

/** @internal What one scrape said. */
export interface LoadReading {
  /** The report, or `undefined` when the body holds no usable value. */
  readonly report: LoadReport | undefined;
  /**
   * Whether the body came from the engine the worker's runtime names (any supported engine for
   * `unspecified`): a series with the engine's name prefix, or TensorRT-LLM's statistics array.
   * `false` is what an SGLang worker started without `--enable-metrics`, an HTML error page or
   * another engine's metrics look like.
   */
  readonly recognised: boolean;
}

type MutableLoadReport = { -readonly [K in keyof LoadReport]: LoadReport[K] };

const RUNNING = LOAD_FIELDS.indexOf('runningRequests');
const WAITING = LOAD_FIELDS.indexOf('waitingRequests');
const USAGE = LOAD_FIELDS.indexOf('tokenUsage');
const THROUGHPUT = LOAD_FIELDS.indexOf('throughput');
const GENERATED = LOAD_FIELDS.indexOf('generatedTokens');

/** No load value: a scrape that holds only LoRA metrics. */
const NO_VALUES = new Float64Array(LOAD_FIELDS.length).fill(Number.NaN);

const EITHER: readonly RuntimeMetrics[] = Object.freeze([VLLM_METRICS, SGLANG_METRICS]);
const ONLY_VLLM: readonly RuntimeMetrics[] = Object.freeze([VLLM_METRICS]);
const ONLY_SGLANG: readonly RuntimeMetrics[] = Object.freeze([SGLANG_METRICS]);

interface FamilyNames {
  readonly names: ReadonlySet<string>;
  readonly prefixes: readonly string[];
}

function namesOf(families: readonly RuntimeMetrics[]): FamilyNames {
  const names = new Set<string>();
  const prefixes: string[] = [];
  for (const family of families) {
    for (const name of family.rules.keys()) names.add(name);
    prefixes.push(...family.prefixes);
  }
  return { names, prefixes };
}

const NAMES = new Map<readonly RuntimeMetrics[], FamilyNames>(
  [EITHER, ONLY_VLLM, ONLY_SGLANG].map((families) => [families, namesOf(families)]),
);

/**
 * Series of the mapped metrics read per scrape; later lines of those metrics are skipped after
 * their name, like unmapped lines. A real scrape holds a few dozen to about a thousand (SGLang
 * at TP 8 × DP 32 with every scheduler publishing: 1,280), so only a hostile body reaches it,
 * and the cost of a scrape stays near that of reading names.
 */
export const MAX_LOAD_SERIES = 2_048;

/**
 * Series of {@link START_TIME_METRIC} read per scrape: one per process behind the endpoint (a
 * federated or aggregated scrape holds several); later ones are skipped after their name.
 */
export const MAX_START_TIME_SERIES = 64;

const SPACE = 0x20;
const TAB = 0x09;
const LF = 0x0a;
const CR = 0x0d;
const BOM = 0xfeff;
const OPEN_BRACKET = 0x5b;

/** Whether the first non-blank character of `text` opens a JSON array. Cost: O(leading blanks). */
function isJsonArray(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c !== SPACE && c !== TAB && c !== LF && c !== CR && c !== BOM) return c === OPEN_BRACKET;
  }
  return false;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
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
   * The load in `text`, scraped from `worker` at `at`. The body decides the format: a JSON array
   * is TensorRT-LLM's iteration statistics (read for `trtllm` and `unspecified` workers only);
   * anything else is Prometheus text, read for the worker's own engine when it is `vllm` or
   * `sglang`, otherwise vLLM's metrics when any is usable, else SGLang's.
   *
   * Cost: one parse of `text`, O(length), allocating only for the handful of metrics read, at
   * most {@link MAX_LOAD_SERIES} series of them (a JSON body is parsed whole: memory about a few
   * times its size, bounded by `maxBodyBytes`).
   * @returns the report (with `at`) and whether the body came from the expected engine.
   */
  scrape(text: string, worker: ScrapedWorker, at: number): LoadReading {
    const runtime = worker.runtime;
    if (isJsonArray(text)) {
      if (runtime === 'vllm' || runtime === 'sglang')
        return { report: undefined, recognised: false };
      const { values, recognised } = readIterationStats(parseJson(text), worker.dpRank);
      return { report: this.#report(values, worker, at), recognised };
    }
    const families = runtime === 'vllm' ? ONLY_VLLM : runtime === 'sglang' ? ONLY_SGLANG : EITHER;
    const { names, prefixes } = NAMES.get(families)!;
    let recognised = false;
    let accepted = 0;
    let startTimes = 0;
    let loraSeries = 0;
    const readsLora = runtime !== 'sglang';
    const filter = (name: string): boolean => {
      if (!recognised) recognised = prefixes.some((prefix) => name.startsWith(prefix));
      if (readsLora && LORA_METRICS.has(name)) {
        if (loraSeries === MAX_LORA_SERIES) return false;
        loraSeries++;
        return true;
      }
      if (name === START_TIME_METRIC) {
        if (startTimes === MAX_START_TIME_SERIES) return false;
        startTimes++;
        return true;
      }
      if (accepted === MAX_LOAD_SERIES || !names.has(name)) return false;
      accepted++;
      return true;
    };
    const { samples } = parsePrometheusText(text, { filter });
    let values: Float64Array | undefined;
    for (const family of families) {
      values = gather(samples, family, worker.dpRank);
      if (values !== undefined) break;
    }
    const startedAt = startTimes === 0 ? Number.NaN : startTimeOf(samples);
    const adapters = loraSeries === 0 ? undefined : readAdapters(samples, worker.dpRank);
    return { report: this.#report(values, worker, at, startedAt, adapters), recognised };
  }

  /** The report alone of {@link LoadReader.scrape}. */
  read(text: string, worker: ScrapedWorker, at: number): LoadReport | undefined {
    return this.scrape(text, worker, at).report;
  }

  #report(
    values: Float64Array | undefined,
    worker: ScrapedWorker,
    at: number,
    startedAt = Number.NaN,
    adapters?: AdapterReport,
  ): LoadReport | undefined {
    if (values === undefined && adapters === undefined) return undefined;
    const report: MutableLoadReport = {};
    if (values === undefined) values = NO_VALUES;
    if (Number.isFinite(values[RUNNING]!)) report.runningRequests = values[RUNNING]!;
    if (Number.isFinite(values[WAITING]!)) report.waitingRequests = values[WAITING]!;
    if (Number.isFinite(values[USAGE]!)) report.tokenUsage = Math.min(1, values[USAGE]!);
    let throughput = values[THROUGHPUT]!;
    const generated = values[GENERATED]!;
    if (Number.isNaN(throughput) && Number.isFinite(generated)) {
      throughput = this.#tracker.observe(worker.url, generated, at);
    }
    if (Number.isFinite(throughput)) report.throughput = throughput;
    if (Object.keys(report).length === 0 && adapters === undefined) return undefined;
    report.at = at;
    if (!Number.isNaN(startedAt)) report.startedAt = startedAt;
    if (adapters !== undefined) report.adapters = adapters;
    return report;
  }
}

/**
 * The newest start among the {@link START_TIME_METRIC} series of `samples`, in ms since the
 * epoch (rounded), or `NaN` when none is within {@link START_TIME_BOUNDS_S}. Several series are
 * several processes: the newest one moves whenever any of them restarts. O(samples).
 */
function startTimeOf(samples: readonly { name: string; value: number }[]): number {
  const [min, max] = START_TIME_BOUNDS_S;
  let newest = Number.NaN;
  for (const sample of samples) {
    if (sample.name !== START_TIME_METRIC) continue;
    const value = sample.value;
    // Comparisons with NaN are false: a non-finite value fails the bounds.
    if (!(value >= min && value <= max)) continue;
    if (Number.isNaN(newest) || value > newest) newest = value;
  }
  return Number.isNaN(newest) ? newest : Math.round(newest * 1000);
}
