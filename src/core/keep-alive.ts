/**
 * `KeepAlive`: holds the process open while somebody awaits a promise that nothing else would
 * hold it open for.
 *
 * @module
 * @internal
 */
import { MAX_TIMER_MS } from './option-table.js';

/** The held timer's callback: it only has to exist. */
function idle(): void {}

/**
 * @internal A count of waits in progress and, while it is above zero, one ref'd timer — so a
 * script that awaits a component whose own timers are all `unref`'d (background work must never
 * hold a process open) does not exit with an unsettled top-level await (code 13). No timer exists
 * while nobody waits: an idle component still lets the process exit.
 *
 * Every `hold()` must be matched by exactly one `release()`; {@link KeepAlive.during} does both
 * around a promise. Cost: a counter step per hold and release; one timer created when the count
 * leaves zero and cleared when it returns to zero.
 */
export class KeepAlive {
  #holds = 0;
  #timer: ReturnType<typeof setInterval> | undefined;

  /** Waits in progress. */
  get holds(): number {
    return this.#holds;
  }

  /** One more wait: the first one creates the timer. */
  hold(): void {
    if (this.#holds++ === 0) this.#timer = setInterval(idle, MAX_TIMER_MS);
  }

  /** One wait fewer: the last one clears the timer. A release without a hold does nothing. */
  release(): void {
    if (this.#holds === 0) return;
    if (--this.#holds !== 0) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /**
   * Holds until `promise` settles.
   *
   * @returns a promise that settles like `promise`, after the release.
   */
  during<T>(promise: Promise<T>): Promise<T> {
    this.hold();
    return promise.finally(() => this.release());
  }
}
