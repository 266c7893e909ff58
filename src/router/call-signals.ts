/**
 * `CallSignals`: one abort signal per `execute` call, following the caller's signal and aborted
 * by the router's `close()`.
 *
 * @module
 * @internal
 */

/** @internal The signal of one call; `dispose()` when the call ends. */
export interface CallSignal {
  readonly signal: AbortSignal;
  dispose(): void;
}

/**
 * @internal The router's calls in flight. Each call gets its own `AbortController`: the router
 * never adds a listener to a signal shared by many calls (ten concurrent calls would otherwise
 * draw Node's "possible EventTarget memory leak" warning), and `abortAll` reaches each call
 * directly. A call with a caller's signal adds exactly one listener to it, removed at `dispose()`.
 *
 * Cost: one `AbortController` per call, plus one listener on the caller's signal when given.
 */
export class CallSignals {
  readonly #calls = new Set<AbortController>();

  /** Calls in flight. */
  get size(): number {
    return this.#calls.size;
  }

  /** A signal for a new call: aborted when `caller` aborts (at once if it already has). */
  open(caller: AbortSignal | undefined): CallSignal {
    const controller = new AbortController();
    const calls = this.#calls;
    calls.add(controller);
    if (caller === undefined) {
      return { signal: controller.signal, dispose: () => calls.delete(controller) };
    }
    const onAbort = (): void => controller.abort(caller.reason);
    if (caller.aborted) onAbort();
    else caller.addEventListener('abort', onAbort, { once: true });
    return {
      signal: controller.signal,
      dispose: () => {
        caller.removeEventListener('abort', onAbort);
        calls.delete(controller);
      },
    };
  }

  /** Aborts every call in flight with `reason`. */
  abortAll(reason: unknown): void {
    const calls = [...this.#calls];
    this.#calls.clear();
    for (const controller of calls) controller.abort(reason);
  }
}
