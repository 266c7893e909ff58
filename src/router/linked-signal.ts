/**
 * `LinkedSignal`: one signal that fires when either of two others fires, and lets go of both
 * when disposed.
 *
 * @module
 * @internal
 */

/**
 * @internal Follows `a` and `b`: `signal` aborts with the reason of whichever fires first.
 * `dispose()` removes both listeners, so a finished call leaves nothing registered on a
 * long-lived signal such as the router's. (`AbortSignal.any` keeps each combined signal
 * registered on its sources until garbage collection on Node 20.)
 *
 * Cost: one `AbortController` and two listeners per call.
 */
export class LinkedSignal {
  readonly #controller = new AbortController();
  readonly #a: AbortSignal;
  readonly #b: AbortSignal;
  readonly #onAbort = (event: Event): void => {
    this.dispose();
    this.#controller.abort((event.target as AbortSignal).reason);
  };

  constructor(a: AbortSignal, b: AbortSignal) {
    this.#a = a;
    this.#b = b;
    if (a.aborted) this.#controller.abort(a.reason);
    else if (b.aborted) this.#controller.abort(b.reason);
    else {
      a.addEventListener('abort', this.#onAbort, { once: true });
      b.addEventListener('abort', this.#onAbort, { once: true });
    }
  }

  /** Aborts when `a` or `b` aborts. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Stops following `a` and `b`. Idempotent. */
  dispose(): void {
    this.#a.removeEventListener('abort', this.#onAbort);
    this.#b.removeEventListener('abort', this.#onAbort);
  }
}
