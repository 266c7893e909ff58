/**
 * The calls a lookup part of shared state (sessions, prefix index) makes to its store: lookups
 * waited for at most their deadline, writes waited for at most the write wait, both under the
 * part's health and counted in its stats.
 *
 * @module
 * @internal
 */
import { TIMED_OUT, withDeadline } from '../core/bounded-wait.js';
import type { SharedStateEvent } from '../router/shared-state.js';
import { PartHealth } from './part-health.js';
import type { SharedLookupStats } from './shared-state-stats.js';

/** @internal The counters of {@link SharedLookupStats}, as the part keeps them. */
export type LookupCounters = {
  -readonly [K in Exclude<keyof SharedLookupStats, 'state'>]: SharedLookupStats[K];
};

/** @internal What a part's calls need besides the store call itself. */
export interface PartCallsConfig {
  /** Deadline misses in a row that degrade the part. */
  readonly degradeAfter: number;
  /** While degraded, least time between two probe lookups (ms). */
  readonly probeMs: number;
  /** Longest wait for one write's answer (ms). */
  readonly writeWaitMs: number;
  /** Whether shared state has closed: a lookup's late answer is then not used. */
  readonly closed: () => boolean;
  /** The clock (ms). */
  readonly now: () => number;
}

/**
 * @internal One lookup part's calls to the store. A lookup is awaited within its deadline while
 * the part is ok; while it is degraded, at most one per `probeMs` runs unawaited (its answer
 * still lands, and recovers the part), and the request routes on local state at once. A write
 * is dropped while the part is degraded, and never rejects.
 */
export class PartCalls {
  readonly health: PartHealth;
  readonly counters: LookupCounters = {
    lookups: 0,
    hits: 0,
    timeouts: 0,
    failures: 0,
    writes: 0,
    dropped: 0,
    ignored: 0,
  };
  readonly #config: PartCallsConfig;

  constructor(part: SharedStateEvent['part'], config: PartCallsConfig) {
    this.health = new PartHealth(part, config.degradeAfter);
    this.#config = config;
  }

  /** The counters and state, as a new object. O(1). */
  stats(): SharedLookupStats {
    return { ...this.counters, state: this.health.degraded ? 'degraded' : 'ok' };
  }

  /**
   * One lookup: `call()` answered within `deadlineMs` is handed to `use`, which says whether it
   * found something (a hit).
   *
   * @returns what to await before routing, or `undefined` when nothing is worth waiting for
   *   (degraded, or the call threw). Never rejects.
   */
  lookup<T>(
    deadlineMs: number,
    call: () => Promise<T>,
    use: (value: T) => boolean,
  ): Promise<void> | undefined {
    const { health, counters } = this;
    const started = this.#config.now();
    if (health.degraded) {
      if (started - health.lastProbe < this.#config.probeMs) return undefined;
      health.lastProbe = started;
    }
    counters.lookups++;
    let answer: Promise<T>;
    try {
      answer = call();
    } catch (error) {
      counters.failures++;
      health.failed(error, started);
      return undefined;
    }
    const run = withDeadline(answer, deadlineMs).then(
      (value) => {
        if (value === TIMED_OUT) {
          counters.timeouts++;
          health.timedOut(started);
          return;
        }
        health.ok();
        if (!this.#config.closed() && use(value)) counters.hits++;
      },
      (error: unknown) => {
        counters.failures++;
        health.failed(error, started);
      },
    );
    return health.degraded ? undefined : run;
  }

  /**
   * One write: dropped while the part is degraded.
   *
   * @returns a promise that settles when the store answers, or after the write wait (a late
   *   answer is still counted); `undefined` when nothing was sent. Never rejects.
   */
  send(call: () => Promise<void>): Promise<void> | undefined {
    const { health, counters } = this;
    if (health.degraded) {
      counters.dropped++;
      return undefined;
    }
    counters.writes++;
    let sent: Promise<void>;
    try {
      sent = call().catch((error: unknown) => {
        counters.failures++;
        health.failed(error, this.#config.now());
      });
    } catch (error) {
      counters.failures++;
      health.failed(error, this.#config.now());
      return undefined;
    }
    return withDeadline(sent, this.#config.writeWaitMs).then(() => undefined);
  }
}
