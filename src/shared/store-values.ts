/**
 * What a router could have written to a store, and the checks that hold every value read back to
 * it: anyone with access to the store's namespace can write there, so a value outside these
 * bounds is ignored (and counted), never used — and nothing is allocated in proportion to a
 * number read.
 *
 * @module
 * @internal
 */
import { MAX_URL_LENGTH } from '../workers/worker-url.js';
import type { LoadEntry, PrefixHolder, SessionRecord } from './shared-store.js';

/**
 * @internal The most requests in flight one router publishes for one worker (it publishes no
 * more), and the most it accepts as the other routers' sum on one worker. A worker's load
 * histograms grow with its load: this bounds what a store can make a router allocate.
 */
export const MAX_SHARED_COUNT = 65_536;

/**
 * @internal How far ahead of the store's clock (ms) a heartbeat or a prefix record may be dated
 * and still count (clocks passed to routers may differ a little); further ahead, no router wrote
 * it.
 */
export const CLOCK_SLACK_MS = 1000;

/**
 * @internal Longer than any worker URL a router stores: a registry takes URLs of at most 2,048
 * characters, which normalising (percent-encoding, IDNA) can lengthen at most ninefold.
 */
export const MAX_STORED_URL = 16 * MAX_URL_LENGTH;

/** @internal A worker URL a router could have stored: 1 … 32,768 characters, no control character. */
export function isStoredUrl(value: unknown): value is string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_STORED_URL)
    return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return false;
  }
  return true;
}

/** @internal An in-flight count a router could have published: an integer in [0, 65,536]. */
export function isSharedCount(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_SHARED_COUNT;
}

/** @internal A count a store reports (routers, ignored values): a non-negative safe integer. */
export function isTally(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

/** @internal The other routers' sum on one worker, as a sync answers it, within the bounds. */
export function isLoadEntry(entry: unknown): entry is LoadEntry {
  if (typeof entry !== 'object' || entry === null) return false;
  const e = entry as LoadEntry;
  return (
    isStoredUrl(e.url) &&
    isSharedCount(e.load) &&
    isSharedCount(e.prefilling) &&
    e.prefilling <= e.load
  );
}

/**
 * @internal A session as a router writes it: a primary worker URL, an optional secondary one, and
 * a time left (the store always has one: every write sets it).
 */
export function isSessionRecord(record: unknown): record is SessionRecord {
  if (typeof record !== 'object' || record === null) return false;
  const r = record as SessionRecord;
  return (
    isStoredUrl(r.primary) &&
    (r.secondary === undefined || isStoredUrl(r.secondary)) &&
    typeof r.ttlLeftMs === 'number' &&
    r.ttlLeftMs > 0 &&
    r.ttlLeftMs <= Number.MAX_SAFE_INTEGER
  );
}

/**
 * @internal The holders of a prefix lookup a router can use: at most `maxHolders`, each naming a
 * worker URL, the same run of 1 … `blocks` leading blocks (the first valid holder's), recorded
 * between now and `ttlMs` ago. Adds the valid ones to `out`, in order.
 *
 * @returns how many entries were ignored. O(answer), bounded by the answer's length.
 */
export function readHolders(
  answer: unknown,
  blocks: number,
  ttlMs: number,
  maxHolders: number,
  out: PrefixHolder[],
): number {
  if (!Array.isArray(answer)) return 1;
  let ignored = 0;
  let run = 0;
  for (const holder of answer as unknown[]) {
    const h = holder as PrefixHolder | null;
    const valid =
      typeof h === 'object' &&
      h !== null &&
      out.length < maxHolders &&
      isStoredUrl(h.url) &&
      Number.isInteger(h.blocks) &&
      h.blocks >= 1 &&
      h.blocks <= blocks &&
      (run === 0 || h.blocks === run) &&
      typeof h.ageMs === 'number' &&
      h.ageMs >= 0 &&
      h.ageMs <= ttlMs;
    if (!valid) {
      ignored++;
      continue;
    }
    run = h.blocks;
    out.push(h);
  }
  return ignored;
}
