/**
 * `gather`: the load values of one engine family in a parsed Prometheus scrape.
 *
 * @module
 * @internal
 */
import { LOAD_FIELDS, type RuntimeMetrics } from './runtime-metrics.js';

/** @internal What `gather` reads of a sample. */
export interface GatheredSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/**
 * The series identity of `sample` without the family's replica labels, or `undefined` when the
 * sample carries none of them (its series is then unique in a valid scrape and needs no key).
 * Labels are taken in the order written, which an exporter keeps for every series of a metric.
 * Length-prefixed, so no label value can make two different label sets collide.
 */
function groupKey(sample: GatheredSample, replicaLabels: readonly string[]): string | undefined {
  let replicated = false;
  let key = sample.name;
  const labels = sample.labels;
  for (const name in labels) {
    if (replicaLabels.includes(name)) {
      replicated = true;
      continue;
    }
    const value = labels[name]!;
    key += `\u0000${name.length}:${name}${value.length}:${value}`;
  }
  return replicated ? key : undefined;
}

/**
 * @internal One value per {@link LOAD_FIELDS} slot gathered from `samples` by `family`'s rules,
 * `NaN` where none is usable:
 *
 * - non-finite and negative values are dropped, series by series;
 * - for a worker registered as one rank, a series whose rank label names another rank is dropped;
 * - the most preferred metric present feeds a field;
 * - `max` rules keep the largest series; `sum` rules add up series, except that series differing
 *   only in a replica label (SGLang's `tp_rank`) count once, with their largest value;
 * - a sum that overflows to `Infinity` makes its field absent: a report field is finite or
 *   missing, never infinite.
 *
 * Cost: O(samples × labels per sample); allocates one key per summed sample that carries a
 * replica label.
 * @returns the values, or `undefined` when no series counted.
 */
export function gather(
  samples: readonly GatheredSample[],
  family: RuntimeMetrics,
  dpRank: number | undefined,
): Float64Array | undefined {
  const slots = LOAD_FIELDS.length;
  const values = new Float64Array(slots).fill(Number.NaN);
  const preference = new Float64Array(slots).fill(Number.POSITIVE_INFINITY);
  /** Per `sum` slot: the largest value of each replicated series. */
  const groups: (Map<string, number> | undefined)[] = new Array(slots).fill(undefined);
  const replicaLabels = family.replicaLabels;
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
    if (rule.preference > preference[slot]!) continue;
    if (rule.preference < preference[slot]!) {
      preference[slot] = rule.preference;
      values[slot] = Number.NaN;
      groups[slot] = undefined;
    }
    counted = true;
    const current = values[slot]!;
    if (rule.combine === 'max') {
      values[slot] = Number.isNaN(current) ? value : Math.max(current, value);
      continue;
    }
    const key = replicaLabels.length === 0 ? undefined : groupKey(sample, replicaLabels);
    if (key === undefined) {
      values[slot] = Number.isNaN(current) ? value : current + value;
      continue;
    }
    const group = (groups[slot] ??= new Map<string, number>());
    const previous = group.get(key);
    if (previous === undefined || value > previous) group.set(key, value);
  }
  if (!counted) return undefined;
  for (let slot = 0; slot < slots; slot++) {
    const group = groups[slot];
    let sum = values[slot]!;
    if (group !== undefined) {
      for (const value of group.values()) sum = Number.isNaN(sum) ? value : sum + value;
    }
    if (!Number.isFinite(sum)) sum = Number.NaN;
    values[slot] = sum;
  }
  return values;
}
