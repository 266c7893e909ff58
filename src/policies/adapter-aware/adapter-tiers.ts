/**
 * The tiers `adapterAware` narrows an adapter's candidates to, and the rendezvous
 * (highest-random-weight) order that places a new adapter the same way on every router.
 *
 * @module
 * @internal
 */
import { fmix32 } from '../../core/fmix32.js';
import type { Worker } from '../../workers/worker.js';
import type { AdapterResidency } from './adapter-residency.js';

/**
 * @internal An adapter's candidate lists over one source list, widest last: the workers holding
 * it; those plus its new placements with a free slot; those plus its other new placements; and
 * the source list itself. Empty or repeated levels are left out, so `levels` holds 1 to 4 lists,
 * the last always the source. Each list is built once and kept while `epoch` stands and before
 * `expiresAt`, so a policy's per-list state (keyed by array identity) survives across calls.
 */
export interface AdapterTiers {
  readonly levels: readonly (readonly Worker[])[];
  /** The residency epoch the levels were built at. */
  readonly epoch: number;
  /** When a recent send they counted stops counting (ms); `Infinity`: never. */
  readonly expiresAt: number;
}

/** Two 32-bit FNV-1a lanes of `text` (UTF-16 code units), in `out[0]`, `out[1]`. O(length). */
function hashInto(text: string, out: Uint32Array): void {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  out[0] = a >>> 0;
  out[1] = b >>> 0;
}

const ADAPTER = new Uint32Array(2);
const URL_HASH = new Uint32Array(2);

/**
 * @internal The rendezvous weight of (`adapter`, `url`): a 53-bit integer that depends on both,
 * the same on every router and process. The workers of highest weight are where a new adapter
 * goes; a worker leaving moves only the adapters it held a top place for. O(lengths).
 */
export function rendezvousWeight(adapter: string, url: string): number {
  hashInto(adapter, ADAPTER);
  hashInto(url, URL_HASH);
  const hi = fmix32(ADAPTER[0]! ^ fmix32(URL_HASH[0]!));
  const lo = fmix32(ADAPTER[1]! ^ fmix32(URL_HASH[1]! ^ 0x5bd1e995)) >>> 11;
  return hi * 2_097_152 + lo;
}

/**
 * @internal The first `count` workers of `workers` by descending rendezvous weight for `adapter`
 * (ties: URL order). O(n log n) with n = `workers.length`.
 */
export function topByWeight(workers: readonly Worker[], adapter: string, count: number): Worker[] {
  if (count <= 0 || workers.length === 0) return [];
  const weighted = workers.map((worker) => ({
    worker,
    weight: rendezvousWeight(adapter, worker.url),
  }));
  weighted.sort((x, y) =>
    y.weight !== x.weight ? y.weight - x.weight : x.worker.url < y.worker.url ? -1 : 1,
  );
  const out: Worker[] = [];
  for (let i = 0; i < weighted.length && out.length < count; i++) out.push(weighted[i]!.worker);
  return out;
}

/**
 * @internal Builds `adapter`'s tiers over `source` at `now`: (a) the workers that hold it; (b)
 * of the others, the `placements` of highest weight among those with a free slot; (c) the
 * `placements` of highest weight among the rest. Entries that are not workers are skipped.
 * O(n log n).
 */
export function buildTiers(
  source: readonly Worker[],
  adapter: string,
  residency: AdapterResidency,
  placements: number,
  now: number,
): AdapterTiers {
  const holding: Worker[] = [];
  const free: Worker[] = [];
  const rest: Worker[] = [];
  let expiresAt = Number.POSITIVE_INFINITY;
  for (let i = 0; i < source.length; i++) {
    const worker = source[i];
    if (worker === undefined || worker === null || typeof worker.url !== 'string') continue;
    if (residency.holds(worker.url, adapter, now)) {
      holding.push(worker);
      expiresAt = Math.min(expiresAt, residency.expiresAt(worker.url, adapter));
    } else if (residency.hasFreeSlot(worker.url, now)) free.push(worker);
    else rest.push(worker);
  }
  const levels: (readonly Worker[])[] = [];
  const add = (list: Worker[]): void => {
    if (list.length === 0) return;
    const previous = levels.length === 0 ? [] : levels[levels.length - 1]!;
    levels.push(previous.length === 0 ? list : [...previous, ...list]);
  };
  add(holding);
  add(topByWeight(free, adapter, placements));
  add(topByWeight(rest, adapter, Math.max(0, placements - free.length)));
  const last = levels[levels.length - 1];
  if (last === undefined || last.length < source.length) levels.push(source);
  else levels[levels.length - 1] = source;
  return { levels, epoch: residency.epoch, expiresAt };
}
