/**
 * The health of one part of shared state (loads, sessions, prefix index): `ok` or `degraded`,
 * and the rule that moves it.
 *
 * @module
 * @internal
 */
import type { SharedStateEvent } from '../router/shared-state.js';

/** @internal A short reason for an event: an error's message, bounded. */
export function reasonOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.length > 200 ? `${message.slice(0, 200)}…` : message;
}

/**
 * @internal `ok` or `degraded`, with the rule that moves between them: an error degrades at
 * once, and so does a call that stalled past its timeout (a load sync); `degradeAfter` misses in
 * a row of a lookup's short deadline degrade; any call answered in time recovers. Each change
 * is reported once.
 */
export class PartHealth {
  readonly #part: SharedStateEvent['part'];
  readonly #degradeAfter: number;
  #report: ((event: SharedStateEvent) => void) | undefined;
  #misses = 0;
  #degraded = false;
  /** When the part last degraded, or when a probe was last let through while degraded. */
  lastProbe = Number.NEGATIVE_INFINITY;

  constructor(part: SharedStateEvent['part'], degradeAfter: number) {
    this.#part = part;
    this.#degradeAfter = degradeAfter;
  }

  set report(report: ((event: SharedStateEvent) => void) | undefined) {
    this.#report = report;
  }

  get degraded(): boolean {
    return this.#degraded;
  }

  /** A call answered in time. */
  ok(): void {
    this.#misses = 0;
    if (!this.#degraded) return;
    this.#degraded = false;
    this.#report?.({ type: 'sharedState', part: this.#part, state: 'ok' });
  }

  /** A call missed its deadline. */
  timedOut(now: number): void {
    if (++this.#misses >= this.#degradeAfter) this.#degrade('timeout', now);
  }

  /**
   * A call stalled past its timeout: degrades at once. (A lookup's deadline is a few ms, which a
   * busy event loop can miss; a sync's timeout is a second.)
   */
  stalled(now: number): void {
    this.#misses = 0;
    this.#degrade('timeout', now);
  }

  /** A call failed. */
  failed(error: unknown, now: number): void {
    this.#degrade(reasonOf(error), now);
  }

  #degrade(reason: string, now: number): void {
    this.lastProbe = now;
    if (this.#degraded) return;
    this.#degraded = true;
    this.#report?.({ type: 'sharedState', part: this.#part, state: 'degraded', reason });
  }
}
