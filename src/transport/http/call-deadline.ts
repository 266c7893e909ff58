/**
 * `CallDeadline`: one call's abort signal, fired by its timeout or by the caller's signal.
 *
 * @module
 * @internal
 */
import { AbortScope } from '../../core/abort.js';

/**
 * @internal The signal of one transport call: an {@link AbortScope} that fires `timeoutMs` after
 * construction (with a `TimeoutError`) or when `outer` fires, whichever comes first, and says
 * which for error messages. Its timer is not `unref`'d: someone awaits the call. `dispose()`
 * clears the timer and the listener on `outer`; `race(promise)` bounds a promise that ignores
 * the signal.
 *
 * Cost: one `AbortController`, one timer and one listener per call.
 */
export class CallDeadline extends AbortScope {
  readonly #timeoutMs: number;

  constructor(outer: AbortSignal | undefined, timeoutMs: number) {
    super(outer, { ms: timeoutMs, unref: false });
    this.#timeoutMs = timeoutMs;
  }

  /** Why the call ended early, for messages: `timed out after N ms`, `aborted`, or undefined. */
  get reason(): string | undefined {
    if (this.timedOut) return `timed out after ${this.#timeoutMs} ms`;
    return this.signal.aborted ? 'aborted' : undefined;
  }
}
