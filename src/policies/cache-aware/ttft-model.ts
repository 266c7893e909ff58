/**
 * `cache_aware`'s cost model (`decideBy: 'ttft'`): each candidate's predicted time to first token,
 *
 *     TTFT_i = (Q_i + U_i) / S_i
 *
 * with Q_i the prefill work queued ahead on the worker (tokens: what this router's leases awaiting
 * a first token were charged, or a fresh load report's queue when it says more), U_i the
 * request's tokens the worker does not hold (the prompt less what the tree or the engine's events
 * credit it with), and S_i the worker's prefill speed learned from first tokens. The lowest wins;
 * near-ties (within `max(TIE_MS, TIE_SHARE × best)`) go to the candidate holding the most of the
 * prompt, then to the one with the least of its queue left (Q_i less what S_i has prefilled since
 * the queue last moved: the one nearest its next first token), then to the one with the fewest
 * requests in flight (decode work the model does not price), then to the first in the prompt's
 * rendezvous order (`tie-order.ts`: a hash of the prompt's last units mixed with one of the
 * worker's URL), so routers that see the same state agree, and different prompts spread. A prompt no
 * candidate holds any of (a miss) is scored the same way, over every candidate, and its ties go
 * first to the prompt's owner on the hash ring (`missPlacement: 'ring'`), where every router
 * sends a new prefix.
 *
 * An idle candidate (nothing queued, no more in flight than the fleet's idlest) that holds none of
 * a prompt another candidate holds part of ranks at `SPREAD_SHARE` of its prediction: a busy
 * holder then keeps the prompt only while its prediction is below about the idle worker's (the
 * near-tie window no longer favours it by 10 %), so a hot prefix gains holders while the fleet
 * has idle room.
 *
 * A candidate past the hard guard (in flight more than `balanceAbsThreshold` above the fleet's
 * lowest and more than `balanceRelThreshold` times it) cannot win.
 *
 * @module
 * @internal
 */

import type { Worker } from '../../workers/worker.js';
import type { SelectRequest } from '../policy.js';
import type { LoadTable, StoredLoad } from '../support/load-table.js';
import type { CandidateScan } from './candidate-scan.js';
import { TieOrder } from './tie-order.js';

/** @internal Near-ties: within this many ms of the best… */
export const TIE_MS = 5;
/** @internal …or within this share of it, whichever is more. */
export const TIE_SHARE = 0.1;
/**
 * @internal An idle worker (nothing queued, no more in flight than the fleet's idlest) that holds
 * none of a prompt some candidate holds part of is ranked at this share of its predicted time:
 * with the near-tie window, a holder then keeps the prompt only while predicted below about 0.99
 * times the idle worker, not 1.1 times.
 */
export const SPREAD_SHARE = 0.9;
/** @internal Most candidates credited with part of a prompt (the deepest holders first). */
export const MAX_CREDITED = 32;
/** @internal A load report counts for the queue only when younger than this (ms). */
export const REPORT_FRESH_MS = 1_000;
/** @internal Characters per token, to weigh a text prompt's uncached part. */
export const CHARS_PER_TOKEN = 4;
/** @internal Weight of the newest charge in the mean charge per request. */
export const MEAN_WEIGHT = 1 / 64;

/** @internal The owner of a request's key on the ring over `workers`, if any. */
export type OwnerOf = (
  workers: readonly Worker[],
  request: SelectRequest | undefined,
) => Worker | undefined;

/** @internal One candidate's predicted figures (`explain()`); reused. */
export interface PredictedFigures {
  url: string;
  /** Prefill work queued ahead (tokens). */
  queuedTokens: number;
  /** The prompt's tokens not held there. */
  uncachedTokens: number;
  /** Prefill speed (tokens per second). */
  tokensPerSecond: number;
  /** Predicted time to first token (ms). */
  ttftMs: number;
}

/** A fresh figures object. */
function figures(): PredictedFigures {
  return { url: '', queuedTokens: 0, uncachedTokens: 0, tokensPerSecond: 0, ttftMs: 0 };
}

/**
 * @internal The cost comparison of one selection: the candidates credited with part of the prompt
 * (`add`), then `choose`. Nothing is allocated per selection.
 */
export class TtftModel {
  readonly #scan: CandidateScan;
  readonly #loads: LoadTable;
  readonly #priorPerMs: number;
  readonly #abs: number;
  readonly #rel: number;
  #index = new Int32Array(MAX_CREDITED);
  #units = new Float64Array(MAX_CREDITED);
  #count = 0;
  /** Per candidate index: predicted ms (as ranked: see SPREAD_SHARE), when scored in this selection. */
  #ttft = new Float64Array(64);
  #uncached = new Float64Array(64);
  #matchedOf = new Float64Array(64);
  #queuedOf = new Float64Array(64);
  #scored = new Int32Array(64);
  /** `#scoredAt[i] === #epoch`: candidate i was scored in this selection. */
  #scoredAt = new Uint32Array(64);
  #epoch = 0;
  #scoredCount = 0;
  /** The prompt's usable units, and units per token. */
  #promptUnits = 0;
  #unitsPerToken = 1;
  readonly #order = new TieOrder();
  #minLoad = 0;
  /** What the last choice predicted: winner and runner-up. */
  readonly winner: PredictedFigures = figures();
  readonly runnerUp: PredictedFigures = figures();
  hasRunnerUp = false;
  /** The winner's predicted uncached tokens and work ahead (what its lease is charged). */
  chargedTokens = 0;
  chargedAhead = 0;

  /** The owner of a request's key on the ring (`missPlacement: 'ring'`), read on near-ties. */
  readonly #ownerOf: OwnerOf | undefined;
  #request: SelectRequest | undefined;

  constructor(
    scan: CandidateScan,
    loads: LoadTable,
    priorPerMs: number,
    abs: number,
    rel: number,
    ownerOf?: OwnerOf,
  ) {
    this.#ownerOf = ownerOf;
    this.#scan = scan;
    this.#loads = loads;
    this.#priorPerMs = priorPerMs;
    this.#abs = abs;
    this.#rel = rel;
  }

  /** The prior speed, tokens per ms. */
  get priorPerMs(): number {
    return this.#priorPerMs;
  }

  /**
   * Starts a selection over `n` candidates for a prompt of `units` usable units (`unitsPerToken`
   * of them per token), keyed by `key` for the rendezvous order, with `minLoad` the fleet's
   * lowest in-flight count (the hard guard's reference).
   */
  begin(
    n: number,
    key: string | ArrayLike<number>,
    units: number,
    unitsPerToken: number,
    minLoad: number,
    request: SelectRequest | undefined,
  ): void {
    this.#request = request;
    this.#count = 0;
    this.#scoredCount = 0;
    if (++this.#epoch === 0x4000_0000) {
      this.#scoredAt.fill(0);
      this.#epoch = 1;
    }
    this.#promptUnits = units;
    this.#unitsPerToken = unitsPerToken;
    this.#order.begin(key);
    this.#minLoad = minLoad;
    if (n > this.#ttft.length) {
      let size = this.#ttft.length;
      while (size < n) size *= 2;
      this.#ttft = new Float64Array(size);
      this.#uncached = new Float64Array(size);
      this.#matchedOf = new Float64Array(size);
      this.#queuedOf = new Float64Array(size);
      this.#scored = new Int32Array(size);
      this.#scoredAt = new Uint32Array(size);
      this.#epoch = 1;
    }
  }

  /** Room for more credited candidates. */
  get full(): boolean {
    return this.#count >= MAX_CREDITED;
  }

  /** Candidate `i` holds `units` of the prompt (each candidate once per selection). */
  add(i: number, units: number): void {
    if (this.#count >= MAX_CREDITED) return;
    this.#index[this.#count] = i;
    this.#units[this.#count++] = units;
  }

  /** Candidates credited so far. */
  get count(): number {
    return this.#count;
  }

  /**
   * Scores the credited candidates (reading each once), and when the best of them is slower than
   * any uncredited worker could be (the prompt at the fastest speed read so far) or none is
   * available, every candidate (one pass). @returns the winner's index, -1 when no candidate is
   * available and within the guard; `credited` tells whether the winner holds part of the
   * prompt (read {@link TtftModel.winnerUnits}).
   */
  choose(workers: readonly Worker[]): number {
    const scan = this.#scan;
    const reports = this.#loads.size > 0 ? this.#loads.alignedTo(workers) : undefined;
    const now = reports === undefined ? 0 : this.#loads.now();
    let best = Number.POSITIVE_INFINITY;
    let busy = false;
    this.anyCreditedAvailable = false;
    for (let j = 0; j < this.#count; j++) {
      const i = this.#index[j]!;
      if (!scan.read(workers, i)) continue;
      this.anyCreditedAvailable = true;
      const t = this.#score(i, this.#units[j]!, reports, now);
      if (t < best) {
        best = t;
        busy = this.#queuedOf[i]! > 0;
      }
    }
    const cold = this.#promptUnits / this.#unitsPerToken / scan.fastest;
    if (!(best <= cold) || (busy && best > SPREAD_SHARE * cold)) {
      // An uncredited worker may do better, or (the best holder busy) an idle one rank better:
      // score every candidate.
      if (!scan.pass(workers)) return this.#pick(workers);
      for (let i = 0; i < workers.length; i++) {
        if (!scan.isReadAvailable(i) || this.#isScored(i)) continue;
        this.#score(i, 0, reports, now);
      }
    }
    return this.#pick(workers);
  }

  /** Units of the prompt the last winner holds. */
  winnerUnits = 0;
  /** Whether any credited candidate of the last choice was available. */
  anyCreditedAvailable = false;
  /** Whether the current selection's pick came from {@link TtftModel.choose}. */
  scoredNow = false;
  /** What `explain()` shows of the last choice (reused). */
  readonly predicted: { winner: PredictedFigures; runnerUp: PredictedFigures | undefined } = {
    winner: this.winner,
    runnerUp: undefined,
  };

  /** Starts a policy selection: nothing scored yet. */
  clear(): void {
    this.scoredNow = false;
  }

  #isScored(i: number): boolean {
    return this.#scoredAt[i] === this.#epoch;
  }

  /** Scores candidate i holding `units` of the prompt; Infinity when guarded. */
  #score(
    i: number,
    units: number,
    reports: readonly (StoredLoad | undefined)[] | undefined,
    now: number,
  ): number {
    const scan = this.#scan;
    const load = scan.loadOf(i);
    const min = this.#minLoad;
    const guarded = load - min > this.#abs && load > this.#rel * min;
    let queued = scan.queuedOf(i);
    if (reports !== undefined) {
      const report = reports[i];
      if (report !== undefined && now - report.receivedAt <= REPORT_FRESH_MS) {
        const reported = Number.isNaN(report.queuedTokens)
          ? report.waitingRequests * scan.meanCharge
          : report.queuedTokens;
        if (reported > queued) queued = reported;
      }
    }
    const uncached = Math.max(this.#promptUnits - units, 0) / this.#unitsPerToken;
    let t = guarded ? Number.POSITIVE_INFINITY : (queued + uncached) / scan.speedOf(i);
    // Spreading a held prefix to an idle worker: ranked a little cheaper than predicted.
    if (units === 0 && queued === 0 && load <= min && this.#count > 0) t *= SPREAD_SHARE;
    this.#ttft[i] = t;
    this.#uncached[i] = uncached;
    this.#matchedOf[i] = units;
    this.#queuedOf[i] = queued;
    this.#scored[this.#scoredCount++] = i;
    this.#scoredAt[i] = this.#epoch;
    return t;
  }

  /** The winner among the scored: lowest; near-ties to the most held, least left, fewest in flight. */
  #pick(workers: readonly Worker[]): number {
    const n = this.#scoredCount;
    const ttft = this.#ttft;
    let best = Number.POSITIVE_INFINITY;
    for (let j = 0; j < n; j++) {
      const t = ttft[this.#scored[j]!]!;
      if (t < best) best = t;
    }
    if (best === Number.POSITIVE_INFINITY) return -1;
    const within = best + Math.max(TIE_MS, TIE_SHARE * best);
    // Near-ties: the most held, then the least work left ahead (the queue that started
    // earliest is nearest its end), then the fewest in flight (decode work the model does not
    // price), then the prompt's owner on the ring, then its rendezvous order.
    const scan = this.#scan;
    let win = -1;
    let winRank = -1;
    let tied = false;
    for (let j = 0; j < n; j++) {
      const i = this.#scored[j]!;
      if (!(ttft[i]! <= within)) continue;
      if (win < 0) {
        win = i;
        continue;
      }
      // Positive: candidate i comes first by the first rule that tells them apart.
      let first = this.#matchedOf[i]! - this.#matchedOf[win]!;
      if (first === 0) first = scan.leftOf(win) - scan.leftOf(i);
      if (first === 0) first = scan.loadOf(win) - scan.loadOf(i);
      if (first > 0) {
        win = i;
        winRank = -1;
        tied = false;
        continue;
      }
      if (first < 0) continue;
      tied = true;
      if (winRank < 0) winRank = this.#order.rank(workers, win);
      const r = this.#order.rank(workers, i);
      if (r > winRank || (r === winRank && i < win)) {
        win = i;
        winRank = r;
      }
    }
    // A miss (no candidate holds any of the prompt) equal on both: the prompt's owner on the ring
    // when it is one of them — the same worker in every router for a new prefix (equal holders
    // keep the rendezvous order: the owner's key costs the prompt's hashing again).
    if (tied && this.#count === 0 && this.#ownerOf !== undefined) {
      const owner = this.#ownerOf(workers, this.#request);
      const o = owner === undefined ? -1 : scan.viewOf(workers).indexOf(owner.url);
      if (
        o >= 0 &&
        this.#isScored(o) &&
        ttft[o]! <= within &&
        this.#matchedOf[o] === this.#matchedOf[win] &&
        scan.leftOf(o) === scan.leftOf(win) &&
        scan.loadOf(o) === scan.loadOf(win)
      )
        win = o;
    }
    let second = -1;
    for (let j = 0; j < n; j++) {
      const i = this.#scored[j]!;
      if (i !== win && (second < 0 || ttft[i]! < ttft[second]!)) second = i;
    }
    this.#fill(this.winner, workers, win);
    this.hasRunnerUp = second >= 0;
    if (second >= 0) this.#fill(this.runnerUp, workers, second);
    this.predicted.runnerUp = second >= 0 ? this.runnerUp : undefined;
    this.scoredNow = true;
    this.chargedTokens = Math.round(this.#uncached[win]!);
    this.chargedAhead = this.#queuedOf[win]!;
    this.winnerUnits = this.#matchedOf[win]!;
    return win;
  }

  #fill(into: PredictedFigures, workers: readonly Worker[], i: number): void {
    into.url = workers[i]!.url;
    into.queuedTokens = this.#queuedOf[i]!;
    into.uncachedTokens = this.#uncached[i]!;
    into.tokensPerSecond = this.#scan.speedOf(i) * 1000;
    const t = this.#ttft[i]!;
    // The prediction, not the rank (an idle worker spreading a prefix ranks cheaper).
    into.ttftMs =
      t === Number.POSITIVE_INFINITY
        ? t
        : (into.queuedTokens + into.uncachedTokens) / this.#scan.speedOf(i);
  }
}
