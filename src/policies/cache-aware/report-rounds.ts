/**
 * The rounds of load reports `cache_aware` was given, and per worker which round last showed its
 * engine's old start time: what a restart seen by its start time (`detectedBy: 'start_time'`)
 * is measured against.
 *
 * A start-time detection comes when the router delivers the first report showing the new start
 * time, up to one poll after the restart itself. What the policy learned about the worker before
 * the round that still showed the old start time is stale; what it learned since may be the
 * restarted engine's true state. So at every round the policy marks each tree's logical clock
 * ({@link ModelCaches.mark}, O(trees)) and its own clock (for pending placements), here by round,
 * and on a restart asks {@link ReportRounds.restartRound} which round to forget up to.
 *
 * **Either order.** The router tells the policy of a start-time restart while it delivers the
 * round that shows it — before that round's `updateLoads`, as it does today, or after it. Both
 * give the same round: this class reads each report's `startedAt` too, so it knows whether the
 * round showing the change was delivered already (then the round before it is the one), or is
 * still to come (then the latest round is, and the change it will show is already accounted
 * for). Reports without a usable `startedAt` (absent, negative, non-finite) change nothing, as in
 * the router.
 *
 * **Bounds.** {@link MARK_ROUNDS} rounds are kept; a worker whose last report is older than that
 * is measured against the oldest kept round. One entry per worker URL with a start time, until
 * {@link ReportRounds.forget} (`removeWorker`, or a restart the health loop saw).
 *
 * @module
 * @internal
 */
import type { LoadReport } from '../../workers/load-report.js';

/** @internal Rounds of load reports whose marks are kept (8: 80 s at the router's default poll). */
export const MARK_ROUNDS = 8;

/** One worker's start time and the rounds that showed it. Every field initialised: one shape. */
class WorkerRounds {
  startedAt: number;
  /** The latest round with a report of this worker carrying a start time. */
  last: number;
  /** The round whose report changed the start time, until a restart call consumes it (0: none). */
  changedAt = 0;
  /** The round of the report before that change: the last one showing the old start time. */
  before = 0;
  /** The round that was the latest when a restart was told ahead of its report (0: none). */
  toldAt = 0;

  constructor(startedAt: number, round: number) {
    this.startedAt = startedAt;
    this.last = round;
  }
}

/** @internal See the module comment. */
export class ReportRounds {
  /** Rounds delivered so far; round `r` (1, 2, …) keeps its marks in slot `r % MARK_ROUNDS`. */
  #round = 0;
  /** The policy's clock at each kept round, by slot. */
  readonly #at = new Float64Array(MARK_ROUNDS);
  readonly #workers = new Map<string, WorkerRounds>();

  /** Rounds delivered so far (0: none). O(1). */
  get round(): number {
    return this.#round;
  }

  /** Workers with a known start time. O(1). */
  get size(): number {
    return this.#workers.size;
  }

  /** The slot of round `round`'s marks. O(1). */
  static slotOf(round: number): number {
    return round % MARK_ROUNDS;
  }

  /**
   * Records a round of reports delivered at `now` (the policy's clock): each report's start
   * time, against the one before for its URL. Cost: O(reports), one map lookup each; allocates
   * only for a URL seen for the first time.
   *
   * @returns the slot of the new round: write the trees' marks there.
   */
  deliver(reports: ReadonlyMap<string, LoadReport>, now: number): number {
    const round = ++this.#round;
    for (const [url, report] of reports) {
      const startedAt = (report as LoadReport | undefined)?.startedAt;
      if (typeof startedAt !== 'number' || !Number.isFinite(startedAt) || startedAt < 0) continue;
      const known = this.#workers.get(url);
      if (known === undefined) {
        this.#workers.set(url, new WorkerRounds(startedAt, round));
        continue;
      }
      if (startedAt !== known.startedAt) {
        if (known.toldAt === round - 1) {
          known.changedAt = 0; // the restart was told before this report: nothing is owed
        } else {
          known.changedAt = round;
          known.before = known.last;
        }
        known.startedAt = startedAt;
      }
      known.toldAt = 0;
      known.last = round;
    }
    const slot = ReportRounds.slotOf(round);
    this.#at[slot] = now;
    return slot;
  }

  /**
   * The round whose marks a start-time restart of `url` forgets up to: the latest round whose
   * report still showed the old start time — the round before the one showing the new start
   * time when that was delivered already, else the worker's latest report (the latest round for
   * a worker with no start time known). Clamped to the oldest kept round. Consumes the change it
   * accounts for, so each change is answered once. O(1).
   *
   * @returns a round ≥ 1, or 0 when no round was delivered (then nothing anchors the restart).
   */
  restartRound(url: string): number {
    const latest = this.#round;
    if (latest === 0) return 0;
    const known = this.#workers.get(url);
    let round = latest;
    if (known !== undefined) {
      if (known.changedAt === latest) {
        round = known.before;
        known.changedAt = 0;
      } else {
        round = known.last;
        known.toldAt = latest;
      }
    }
    return Math.max(round, latest - MARK_ROUNDS + 1, 1);
  }

  /** The policy's clock when `round` (a kept one) was delivered. O(1). */
  timeOf(round: number): number {
    return this.#at[ReportRounds.slotOf(round)]!;
  }

  /** Forgets `url`'s start time: the next one seen is a first value. O(1). */
  forget(url: string): void {
    this.#workers.delete(url);
  }

  /** Forgets every round and start time. */
  clear(): void {
    this.#round = 0;
    this.#at.fill(0);
    this.#workers.clear();
  }
}
