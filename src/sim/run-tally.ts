/**
 * `RunTally`: what one simulation run counts as it goes — sends, completions, routing time, time
 * to first token — and the {@link PolicyRun} assembled from it at the end.
 *
 * @module
 * @internal
 */
import { percentiles, spread } from './metrics.js';
import type { PolicyRun } from './result.js';

/** @internal What the run knows only at the end, handed to {@link RunTally.result}. */
export interface RunEnd {
  readonly policy: string;
  /** Prompt tokens served from the workers' caches, and all prompt tokens admitted. */
  readonly cachedTokens: number;
  readonly promptTokens: number;
  readonly precision: number | undefined;
  readonly timeline: PolicyRun['timeline'];
  readonly eventsProcessed: number;
  readonly timestampOffsetMs: number;
}

/**
 * @internal Counters of one run. Each `on…` method is O(1) and allocates nothing beyond the one
 * time-to-first-token slot; {@link result} is O(requests log requests + workers).
 */
export class RunTally {
  readonly #requests: number;
  readonly #routed: number[];
  /** Prompt tokens routed to each worker. */
  readonly #tokens: number[];
  readonly #ttft: number[] = [];
  #sent = 0;
  #unroutable = 0;
  /** Requests turned away at admission (never sent to a worker). */
  #rejected = 0;
  /** Requests never sent (`skipLowPriority`). */
  #skipped = 0;
  #routingMs = 0;
  #firstSend = Number.NaN;
  /** When each request arrived (simulated ms), in time order. */
  readonly #arrivals: number[] = [];
  #lastCompletion = 0;
  /** When each request completed (simulated ms), in completion order. */
  readonly #completions: number[] = [];
  #outputTokens = 0;
  /** Decisions by the policy's branch. */
  readonly #branches = new Map<string, number>();

  /** A run of `requests` requests over `workers` workers. */
  constructor(requests: number, workers: number) {
    this.#requests = requests;
    this.#routed = new Array<number>(workers).fill(0);
    this.#tokens = new Array<number>(workers).fill(0);
  }

  /** Routing decisions taken so far (routed or not). */
  get sent(): number {
    return this.#sent;
  }

  /** Whether any request has been sent yet. */
  get started(): boolean {
    return !Number.isNaN(this.#firstSend);
  }

  /**
   * A routing decision at simulated time `now` took `routingMs` of wall-clock time and chose
   * `worker` (`undefined`: no worker could take the request) for a prompt of `promptTokens`.
   */
  onSend(now: number, routingMs: number, worker: number | undefined, promptTokens: number): void {
    if (Number.isNaN(this.#firstSend)) this.#firstSend = now;
    this.#sent++;
    this.#routingMs += routingMs;
    if (worker === undefined) this.#unroutable++;
    else {
      this.#routed[worker]!++;
      this.#tokens[worker]! += promptTokens;
    }
  }

  /**
   * A disaggregated request's prefill leg went to `worker` (its decode worker is counted by
   * {@link onSend}): requests and prompt tokens routed per worker count both legs.
   */
  onLeg(worker: number, promptTokens: number): void {
    this.#routed[worker]!++;
    this.#tokens[worker]! += promptTokens;
  }

  /** A request arrived at simulated time `now` (arrivals come in time order). */
  onArrival(now: number): void {
    this.#arrivals.push(now);
  }

  /** A request was drawn but never sent (`skipLowPriority`): neither served nor rejected. */
  onSkipped(): void {
    this.#skipped++;
  }

  /** A request was turned away at admission: it is not served, and never reached a worker. */
  onRejected(): void {
    this.#rejected++;
  }

  /** The policy took `branch` for the decision just counted (`undefined`: it keeps none). */
  onBranch(branch: string | undefined): void {
    if (branch !== undefined) this.#branches.set(branch, (this.#branches.get(branch) ?? 0) + 1);
  }

  /** A request sent at `sentAt` gave its first token at `firstTokenAt` and completed at `now`. */
  onComplete(now: number, sentAt: number, firstTokenAt: number, outputTokens: number): void {
    this.#ttft.push(firstTokenAt - sentAt);
    this.#outputTokens += outputTokens;
    this.#lastCompletion = now;
    this.#completions.push(now);
  }

  /**
   * Completions per second over the middle half of the arrivals (from the time a quarter of the
   * requests had arrived to the time three quarters had): the rate the fleet serves while the
   * run carries its offered load, without the ramp at the start, the drain after the last
   * arrival, or a trace's sparse tail. 0 when that window is empty. O(completions).
   */
  #steadyRate(): number {
    const arrivals = this.#arrivals;
    if (arrivals.length < 4) return 0;
    const from = arrivals[Math.floor(arrivals.length / 4)]!;
    const to = arrivals[Math.floor((arrivals.length * 3) / 4)]!;
    if (!(to > from)) return 0;
    let count = 0;
    for (const at of this.#completions) if (at >= from && at <= to) count++;
    return count / ((to - from) / 1000);
  }

  /** The run's outcome: the counters here plus what only the run knows (`end`). */
  result(end: RunEnd): PolicyRun {
    const total = this.#requests;
    const start = Number.isNaN(this.#firstSend) ? 0 : this.#firstSend;
    const makespanMs = Math.max(0, this.#lastCompletion - start);
    const served = total - this.#unroutable - this.#rejected - this.#skipped;
    const perSecond = (count: number): number =>
      makespanMs === 0 ? 0 : count / (makespanMs / 1000);
    const load = spread(this.#routed);
    const work = spread(this.#tokens);
    return {
      policy: end.policy,
      requests: total,
      completed: served,
      hitRate: end.promptTokens === 0 ? 0 : end.cachedTokens / end.promptTokens,
      ttftMs: percentiles(this.#ttft),
      ttftQuantilesMs: quantileSteps(this.#ttft, 100),
      throughput: {
        requestsPerSecond: perSecond(served),
        outputTokensPerSecond: perSecond(this.#outputTokens),
        steadyRequestsPerSecond: this.#steadyRate(),
      },
      makespanMs,
      load: { perWorker: this.#routed, maxOverMean: load.maxOverMean, cv: load.cv },
      work: { perWorker: this.#tokens, maxOverMean: work.maxOverMean, cv: work.cv },
      precision: end.precision,
      routingMicrosPerRequest: this.#sent === 0 ? 0 : (this.#routingMs * 1000) / this.#sent,
      decisions: Object.fromEntries([...this.#branches].sort(([a], [b]) => (a < b ? -1 : 1))),
      timeline: end.timeline,
      eventsProcessed: end.eventsProcessed,
      timestampOffsetMs: end.timestampOffsetMs,
    };
  }
}

/**
 * @internal The nearest-rank quantiles of `values` at `steps` even steps, from the smallest
 * (entry 0) to the largest (entry `steps`): `steps + 1` numbers, or none when `values` is empty.
 * Cost: O(n log n) for the sort.
 */
export function quantileSteps(values: ArrayLike<number>, steps: number): number[] {
  const n = values.length;
  if (n === 0) return [];
  const sorted = Float64Array.from(values).sort();
  const out: number[] = [];
  for (let i = 0; i <= steps; i++) {
    const rank = Math.min(n - 1, Math.max(0, Math.ceil((i / steps) * n) - 1));
    out.push(sorted[rank]!);
  }
  return out;
}
