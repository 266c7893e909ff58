/**
 * The parts of `least_load`'s expected-wait score that do not depend on the candidate list: the
 * KV-pressure term, a report's queued work, a request's size, and the scratch arrays a full scan
 * fills so that it reads each candidate once.
 *
 * @module
 * @internal
 */
import type { SelectRequest } from '../policy.js';
import type { StoredLoad } from '../support/load-table.js';

/** @internal KV-cache usage is capped here so `k / (1 − k)` stays finite (at most 99). */
export const MAX_KV_USAGE = 0.99;

/**
 * @internal Seconds of extra expected wait for KV-cache usage `usage` (NaN: not reported, no
 * penalty): `lambda · k / (1 − k)` with `k = min(usage, 0.99)`.
 */
export function kvPenalty(lambda: number, usage: number): number {
  if (!(usage > 0)) return 0;
  const k = Math.min(usage, MAX_KV_USAGE);
  return (lambda * k) / (1 - k);
}

/**
 * @internal Prompt tokens a report says are waiting: `queuedTokens`, else `waitingRequests ×
 * meanPrefillTokens` (engines that only export a request count), else 0.
 */
export function queuedWork(report: StoredLoad, meanPrefillTokens: number): number {
  const queued = report.queuedTokens;
  if (!Number.isNaN(queued)) return queued;
  const waiting = report.waitingRequests;
  return Number.isNaN(waiting) ? 0 : waiting * meanPrefillTokens;
}

/**
 * @internal The request's size in tokens: `tokens.length` when it has tokens, else
 * `ceil(text.length / 4)` when it has text, else `fallback`. Odd input reads as absent.
 */
export function requestTokens(request: SelectRequest | undefined, fallback: number): number {
  if (typeof request !== 'object' || request === null) return fallback;
  const tokens = request.tokens;
  if (typeof tokens === 'object' && tokens !== null) {
    const length = tokens.length;
    if (typeof length === 'number' && Number.isSafeInteger(length) && length > 0) return length;
  }
  const text = request.text;
  if (typeof text === 'string' && text.length > 0) return Math.ceil(text.length / 4);
  return fallback;
}

/**
 * @internal What a full scan stores per candidate index, so the argmin that follows never reads
 * a candidate again. Grown by doubling; never shrunk (one scan's worth of numbers).
 */
export class ScanScratch {
  /** 1 when the candidate is available. */
  available = new Uint8Array(16);
  /** 1 when the candidate has a fresh report. */
  reported = new Uint8Array(16);
  /** In-flight requests (leases). */
  inFlight = new Float64Array(16);
  /** Requests ever selected (tie-break). */
  processed = new Float64Array(16);
  /** Requests awaiting their first token (`Worker.prefilling`). */
  prefilling = new Float64Array(16);
  /** Reported workers: queued work plus the router-side credit, in tokens. */
  work = new Float64Array(16);
  /** Reported workers: their own positive throughput, or 0 to use the fleet nominal. */
  throughput = new Float64Array(16);
  /** Reported workers: the KV-pressure term, in seconds. */
  penalty = new Float64Array(16);

  /** Makes room for `n` candidates. O(n) when it grows, O(1) otherwise. */
  ensure(n: number): void {
    if (n <= this.available.length) return;
    let size = this.available.length;
    while (size < n) size *= 2;
    this.available = new Uint8Array(size);
    this.reported = new Uint8Array(size);
    this.inFlight = new Float64Array(size);
    this.processed = new Float64Array(size);
    this.prefilling = new Float64Array(size);
    this.work = new Float64Array(size);
    this.throughput = new Float64Array(size);
    this.penalty = new Float64Array(size);
  }
}
