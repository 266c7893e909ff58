/**
 * `readAdapters`: the LoRA adapters of a vLLM scrape — `vllm:lora_requests_info` (adapters with
 * requests running or waiting) and, where the engine serves them, the residency gauges
 * (`vllm:lora_adapter_loaded`, `vllm:max_gpu_lora_adapters`).
 *
 * @module
 * @internal
 */
import { type AdapterReport, MAX_ADAPTERS_PER_REPORT } from '../../workers/load-report.js';
import { isModelId } from '../../workers/worker-spec.js';
import type { GatheredSample } from './prometheus-load.js';

/** @internal The info gauge: labels name adapters in flight; the value is when it was written. */
export const LORA_REQUESTS_INFO = 'vllm:lora_requests_info';
/** @internal One series per resident adapter (`adapter_name`, `level`, `pinned`), value 1. */
export const LORA_ADAPTER_LOADED = 'vllm:lora_adapter_loaded';
/** @internal GPU adapter slots. */
export const MAX_GPU_LORA_ADAPTERS = 'vllm:max_gpu_lora_adapters';

/** @internal Every metric {@link readAdapters} reads. */
export const LORA_METRICS: ReadonlySet<string> = new Set([
  LORA_REQUESTS_INFO,
  LORA_ADAPTER_LOADED,
  MAX_GPU_LORA_ADAPTERS,
]);

/**
 * @internal Series of the LoRA metrics read per scrape. `vllm:lora_requests_info` keeps one
 * stale series per combination of adapters ever seen, so a long-lived engine serves many; a
 * scrape beyond this bound is hostile or pathological, and later series are skipped (the
 * newest among those read wins).
 */
export const MAX_LORA_SERIES = 4_096;

/** Largest adapter slot count believed (vLLM's own limit is far below). */
const MAX_SLOTS = 1_000_000;

/**
 * @internal The adapters `samples` tell of, or `undefined` when none of the LoRA metrics is there
 * (LoRA off, or no adapter used yet: no data, not an error).
 *
 * - `running` / `waiting`: from the `vllm:lora_requests_info` series with the largest value (the
 *   newest: vLLM writes the wall-clock time into the current combination's series and leaves the
 *   old ones), its comma-joined labels split, trimmed, deduplicated; entries that are not model
 *   ids are dropped, and each list holds at most {@link MAX_ADAPTERS_PER_REPORT}.
 * - `resident`: `adapter_name` of the `vllm:lora_adapter_loaded` series with `level="gpu"` and
 *   value 1 (present, possibly empty, whenever that family is).
 * - `maxAdapters`: `vllm:max_gpu_lora_adapters`, else the newest series' `max_lora` label.
 *
 * For a worker registered as one rank (`dpRank`), a series whose `engine` label names another
 * rank is skipped. Cost: O(samples + label characters of the newest info series).
 */
export function readAdapters(
  samples: readonly GatheredSample[],
  dpRank: number | undefined,
): AdapterReport | undefined {
  const rank = dpRank === undefined ? undefined : String(dpRank);
  let newest: GatheredSample | undefined;
  let resident: string[] | undefined;
  let residentSeen: Set<string> | undefined;
  let maxGpu = Number.NaN;
  for (const sample of samples) {
    const name = sample.name;
    if (!LORA_METRICS.has(name)) continue;
    if (rank !== undefined) {
      const seriesRank = sample.labels.engine;
      if (seriesRank !== undefined && seriesRank !== rank) continue;
    }
    const value = sample.value;
    if (name === LORA_REQUESTS_INFO) {
      if (!Number.isFinite(value)) continue;
      if (newest === undefined || value > newest.value) newest = sample;
    } else if (name === LORA_ADAPTER_LOADED) {
      resident ??= [];
      residentSeen ??= new Set();
      const adapter = sample.labels.adapter_name;
      if (value !== 1 || sample.labels.level !== 'gpu' || !isModelId(adapter)) continue;
      if (residentSeen.has(adapter) || resident.length === MAX_ADAPTERS_PER_REPORT) continue;
      residentSeen.add(adapter);
      resident.push(adapter);
    } else if (Number.isInteger(value) && value >= 0 && value <= MAX_SLOTS) {
      maxGpu = value;
    }
  }
  if (newest === undefined && resident === undefined && Number.isNaN(maxGpu)) return undefined;
  const maxLora = Number.isNaN(maxGpu) ? slotsOf(newest?.labels.max_lora) : maxGpu;
  const report: {
    running: readonly string[];
    waiting: readonly string[];
    resident?: readonly string[];
    maxAdapters?: number;
  } = {
    running: namesOf(newest?.labels.running_lora_adapters),
    waiting: namesOf(newest?.labels.waiting_lora_adapters),
  };
  if (resident !== undefined) report.resident = resident;
  if (!Number.isNaN(maxLora)) report.maxAdapters = maxLora;
  return report;
}

const EMPTY: readonly string[] = Object.freeze([]);

/** The adapter names of a comma-joined label, bounded. O(label length). */
function namesOf(label: string | undefined): readonly string[] {
  if (label === undefined || label.length === 0) return EMPTY;
  const names: string[] = [];
  const seen = new Set<string>();
  let start = 0;
  while (start <= label.length && names.length < MAX_ADAPTERS_PER_REPORT) {
    let end = label.indexOf(',', start);
    if (end < 0) end = label.length;
    const name = label.slice(start, end).trim();
    start = end + 1;
    if (!isModelId(name) || seen.has(name)) continue;
    seen.add(name);
    names.push(name);
  }
  return names;
}

/** A `max_lora` label as a slot count, or `NaN`. Only plain decimal integers are read. */
function slotsOf(label: string | undefined): number {
  if (label === undefined || label.length === 0 || label.length > 7) return Number.NaN;
  for (let i = 0; i < label.length; i++) {
    const c = label.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return Number.NaN;
  }
  return Number(label);
}
