/**
 * `KvSequence`: where one publisher's stream stands — the last batch applied, the last received
 * live, what a replay already brought — and what each batch means: the next one, a duplicate, a
 * gap, an engine restart. No socket, no timer, no target: the subscriber asks, then acts.
 *
 * @module
 * @internal
 */

/**
 * @internal What to do with a batch received live, before it is applied:
 * - `apply`: apply it (after the replay, if one is asked for, see {@link KvSequence.settle});
 * - `duplicate`: a replay brought it already; skip it;
 * - `warmup`: the stream's first batch, not the engine's first: warm up from the replay socket;
 * - `gap`: batches `from` … `to` are missing.
 */
export type LiveStep =
  | { readonly kind: 'apply' | 'duplicate' | 'warmup' }
  | { readonly kind: 'gap'; readonly from: bigint; readonly to: bigint };

/**
 * @internal Why the worker's blocks must be cleared before a live batch: `backwards` (the
 * sequence went back on one connection: a new engine process) or `behind` (it is not past what
 * was applied, and no replay explains it).
 */
export type Restart = 'backwards' | 'behind' | undefined;

/**
 * @internal Where a live batch stands once any replay is over: `covered` (the replay brought it;
 * skip it), `short` (the replay ended before it: the batches between are lost) or `next`.
 */
export type Settled = 'covered' | 'short' | 'next';

/** @internal What a replayed batch is: `stale` (applied already), `next`, or after a `hole`. */
export type Replayed = 'stale' | 'next' | 'hole';

const ONE_STEP: LiveStep = Object.freeze({ kind: 'apply' });
const DUPLICATE: LiveStep = Object.freeze({ kind: 'duplicate' });
const WARMUP: LiveStep = Object.freeze({ kind: 'warmup' });

/**
 * @internal The sequence logic of one publisher's stream. The rule it serves: a batch is applied
 * only right after the one before it; anything else is a duplicate (skipped), or a loss to fill
 * from the replay socket or to clear.
 *
 * Calls, per live batch: {@link KvSequence.live}; then, for `warmup` or `gap`, a replay
 * ({@link KvSequence.replayStart}, {@link KvSequence.replayed} per batch, {@link KvSequence.replayEnd});
 * then {@link KvSequence.settle}; {@link KvSequence.applied} for each batch applied and
 * {@link KvSequence.cleared} for each clear. Cost: O(1) per call.
 */
export class KvSequence {
  /** The last sequence number applied (undefined: none since the last clear). */
  #last: bigint | undefined;
  /** The last sequence number received live on the current connection. */
  #lastLive: bigint | undefined;
  /** After a replay: live batches up to this one were replayed already. */
  #replayedThrough: bigint | undefined;
  /** The replay under way: where it was asked from, whether it is a warm-up, its first batch. */
  #from = 0n;
  #warmup = false;
  #first = true;

  /** The last sequence number applied (undefined: none since the last clear). */
  get last(): bigint | undefined {
    return this.#last;
  }

  /**
   * A batch received live at `seq` (≥ 0): whether the engine restarted (the caller clears, and
   * the sequence forgets what was applied), then what to do with the batch.
   *
   * @param canWarmUp - a replay socket is there and `warmup` is on.
   */
  live(seq: bigint, canWarmUp: boolean): { readonly restart: Restart; readonly step: LiveStep } {
    const lastLive = this.#lastLive;
    this.#lastLive = seq;
    // Live batches of one process come in order: backwards is a new engine process, counting
    // from 0 again.
    if (lastLive !== undefined && seq <= lastLive) {
      this.cleared();
      return { restart: 'backwards', step: this.#stepOf(seq, canWarmUp) };
    }
    const last = this.#last;
    if (last !== undefined && seq <= last) {
      const through = this.#replayedThrough;
      // Replayed already (it was queued while the replay ran).
      if (through !== undefined && seq <= through) return { restart: undefined, step: DUPLICATE };
      this.cleared();
      return { restart: 'behind', step: ONE_STEP };
    }
    return { restart: undefined, step: this.#stepOf(seq, canWarmUp) };
  }

  #stepOf(seq: bigint, canWarmUp: boolean): LiveStep {
    const last = this.#last;
    if (last === undefined) return seq > 0n && canWarmUp ? WARMUP : ONE_STEP;
    if (seq > last + 1n) return { kind: 'gap', from: last + 1n, to: seq - 1n };
    return ONE_STEP;
  }

  /** A replay from `from` begins; a warm-up takes whatever the engine's buffer starts with. */
  replayStart(from: bigint, warmup: boolean): void {
    this.#from = from;
    this.#warmup = warmup;
    this.#first = true;
  }

  /**
   * A batch the replay brought at `seq`: `stale` (skip it), `next` (apply it) or `hole` (clear,
   * then apply it): the start of a gap the buffer no longer holds, or a hole inside the replay.
   */
  replayed(seq: bigint): Replayed {
    const last = this.#last;
    if (last !== undefined && seq <= last) return 'stale';
    const hole = this.#first
      ? !this.#warmup && seq !== this.#from
      : last !== undefined && seq !== last + 1n;
    this.#first = false;
    return hole ? 'hole' : 'next';
  }

  /** The replay reached the engine's end marker: live batches up to the last applied are duplicates. */
  replayEnd(): void {
    if (this.#last !== undefined) this.#replayedThrough = this.#last;
  }

  /** Where the live batch at `seq` stands once any replay is over. */
  settle(seq: bigint): Settled {
    const last = this.#last;
    if (last !== undefined && seq <= last) return 'covered';
    if (last !== undefined && seq > last + 1n) return 'short';
    return 'next';
  }

  /** The batch at `seq` was applied (or lost at that place); `live`: it came from the live socket. */
  applied(seq: bigint, live: boolean): void {
    this.#last = seq;
    if (live) this.#replayedThrough = undefined;
  }

  /** The worker's blocks were cleared: the next batch starts a new sequence. */
  cleared(): void {
    this.#last = undefined;
    this.#replayedThrough = undefined;
  }

  /** The connection was replaced: the next live batch is the first of a new one. */
  connectionLost(): void {
    this.#lastLive = undefined;
  }
}
