/**
 * `CallDeadline`: one call's abort signal, fired by its timeout or by the caller's signal.
 *
 * @module
 * @internal
 */
import { untilAborted } from '../../core/abort.js';

/**
 * @internal The signal of one transport call: it fires `timeoutMs` after construction or when
 * `outer` fires, whichever comes first. `dispose()` clears the timer and the listener on `outer`,
 * so a finished call leaves nothing behind, however long-lived `outer` is.
 *
 * Why not `AbortSignal.any([outer, AbortSignal.timeout(ms)])`: the timeout's timer lives until it
 * fires (up to `timeoutMs` after the call ended), and on Node 20 each combined signal stays
 * registered on `outer` until garbage collection (nodejs/node#55351), which grows without bound
 * when the router passes one signal to every call.
 *
 * Cost: one `AbortController`, one timer and one listener per call.
 */
export class CallDeadline {
  readonly #controller = new AbortController();
  readonly #outer: AbortSignal | undefined;
  readonly #timeoutMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timedOut = false;

  readonly #onOuterAbort = (): void => {
    this.#abort(this.#outer?.reason);
  };

  constructor(outer: AbortSignal | undefined, timeoutMs: number) {
    this.#outer = outer;
    this.#timeoutMs = timeoutMs;
    if (outer?.aborted) {
      this.#controller.abort(outer.reason);
      return;
    }
    outer?.addEventListener('abort', this.#onOuterAbort, { once: true });
    this.#timer = setTimeout(() => {
      this.#timedOut = true;
      this.#abort(new DOMException(`timed out after ${timeoutMs} ms`, 'TimeoutError'));
    }, timeoutMs);
  }

  /** Fires on timeout or when the caller's signal fires. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Why the call ended early, for messages: `timed out after N ms`, `aborted`, or undefined. */
  get reason(): string | undefined {
    if (this.#timedOut) return `timed out after ${this.#timeoutMs} ms`;
    return this.#controller.signal.aborted ? 'aborted' : undefined;
  }

  /**
   * Settles like `promise`, or rejects with the abort reason as soon as the signal fires, even
   * when whatever produces `promise` ignores the signal.
   */
  race<T>(promise: Promise<T>): Promise<T> {
    return untilAborted(promise, this.#controller.signal);
  }

  /** Clears the timer and detaches from the caller's signal. Idempotent. */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#outer?.removeEventListener('abort', this.#onOuterAbort);
  }

  #abort(reason: unknown): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#controller.abort(reason);
  }
}
