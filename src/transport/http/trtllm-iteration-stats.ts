/**
 * Reading the JSON that `trtllm-serve` serves at `/metrics`: an array of per-iteration
 * statistics, the iterations run since the previous scrape, oldest first. Each entry is
 * TensorRT-LLM's `IterationStats` as its executor serialises it (camelCase fields such as
 * `iter`, `numActiveRequests`, `numQueuedRequests` and `kvCacheStats.{maxNumBlocks,
 * usedNumBlocks, freeNumBlocks}`), plus `attentionDpRank` when the server tags entries with the
 * attention-data-parallel rank that produced them.
 *
 * The content is untrusted: only those fields are read, only own data properties of plain
 * objects, only finite non-negative numbers; everything else is ignored, never thrown.
 *
 * @module
 * @internal
 */
import { LOAD_FIELDS } from './runtime-metrics.js';

const RUNNING = LOAD_FIELDS.indexOf('runningRequests');
const WAITING = LOAD_FIELDS.indexOf('waitingRequests');
const USAGE = LOAD_FIELDS.indexOf('tokenUsage');

/** Entries looked at, from the end of the array: the newest iterations are the current state. */
const MAX_ENTRIES = 65_536;
/** Key of entries without an `attentionDpRank`. */
const UNTAGGED = -1;

/** @internal What the statistics hold. */
export interface IterationStatsReading {
  /** One value per {@link LOAD_FIELDS} slot (`NaN` where absent), or `undefined` when none. */
  readonly values: Float64Array | undefined;
  /** Whether the body has the iteration-statistics shape (an array; `[]` included). */
  readonly recognised: boolean;
}

type Entry = Readonly<Record<string, unknown>>;

const NOT_RECOGNISED: IterationStatsReading = Object.freeze({
  values: undefined,
  recognised: false,
});

function isEntry(value: unknown): value is Entry {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** An own property of `entry` that is a finite, non-negative number, else `undefined`. */
function count(entry: Entry, field: string): number | undefined {
  if (!Object.hasOwn(entry, field)) return undefined;
  const value = entry[field];
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** KV-cache blocks in use over blocks in total, or `undefined` when not both known. */
function usageOf(entry: Entry): number | undefined {
  const stats = Object.hasOwn(entry, 'kvCacheStats') ? entry.kvCacheStats : undefined;
  if (!isEntry(stats)) return undefined;
  const max = count(stats, 'maxNumBlocks');
  if (max === undefined || max === 0) return undefined;
  const used = count(stats, 'usedNumBlocks');
  if (used !== undefined) return used / max;
  const free = count(stats, 'freeNumBlocks');
  return free !== undefined && free <= max ? (max - free) / max : undefined;
}

function hasLoadField(entry: Entry): boolean {
  return (
    Object.hasOwn(entry, 'numActiveRequests') ||
    Object.hasOwn(entry, 'numQueuedRequests') ||
    Object.hasOwn(entry, 'kvCacheStats')
  );
}

/** The rank an entry is tagged with: a non-negative integer, or {@link UNTAGGED}. */
function rankOf(entry: Entry): number {
  const rank = count(entry, 'attentionDpRank');
  return rank !== undefined && Number.isInteger(rank) ? rank : UNTAGGED;
}

/**
 * @internal The load in a parsed `/metrics` body of `trtllm-serve`. The newest entry of each
 * attention-DP rank (the largest `iter`, the later one on a tie) is that rank's state; requests
 * add up over ranks and KV-cache usage takes the fullest rank. For a worker registered as one
 * rank (`dpRank`), only entries tagged with that rank, or untagged, count.
 *
 * Cost: O(entries), at most the last 65,536 entries looked at; one map entry per rank.
 * @returns the values and whether the body looked like iteration statistics at all.
 */
export function readIterationStats(
  body: unknown,
  dpRank: number | undefined,
): IterationStatsReading {
  if (!Array.isArray(body)) return NOT_RECOGNISED;
  const latest = new Map<number, { iter: number; entry: Entry }>();
  let recognised = body.length === 0;
  for (let i = Math.max(0, body.length - MAX_ENTRIES); i < body.length; i++) {
    const entry: unknown = body[i];
    if (!isEntry(entry) || !hasLoadField(entry)) continue;
    recognised = true;
    const rank = rankOf(entry);
    if (dpRank !== undefined && rank !== UNTAGGED && rank !== dpRank) continue;
    const iter = count(entry, 'iter') ?? i;
    const held = latest.get(rank);
    if (held === undefined || iter >= held.iter) latest.set(rank, { iter, entry });
  }
  if (!recognised) return NOT_RECOGNISED;
  if (latest.size === 0) return { values: undefined, recognised };

  const values = new Float64Array(LOAD_FIELDS.length).fill(Number.NaN);
  let found = false;
  const add = (slot: number, value: number | undefined, combine: 'sum' | 'max'): void => {
    if (value === undefined) return;
    const current = values[slot]!;
    values[slot] = Number.isNaN(current)
      ? value
      : combine === 'sum'
        ? current + value
        : Math.max(current, value);
    found = true;
  };
  for (const { entry } of latest.values()) {
    add(RUNNING, count(entry, 'numActiveRequests'), 'sum');
    add(WAITING, count(entry, 'numQueuedRequests'), 'sum');
    add(USAGE, usageOf(entry), 'max');
  }
  for (let slot = 0; slot < values.length; slot++) {
    if (!Number.isFinite(values[slot]!)) values[slot] = Number.NaN;
  }
  return { values: found ? values : undefined, recognised };
}
