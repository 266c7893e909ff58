/**
 * `HandoffGuard`: the abort signal of a disaggregated request's legs, which holds a client's
 * abort back while a decode leg waits for its KV cache, so the engines never see the decode leg
 * cancelled mid-transfer — for `timeoutMs` at most, so a decode engine that never answers cannot
 * keep the connection forever.
 *
 * @module
 * @internal
 */

/**
 * @internal Follows `client`, except while a hand-off is open (`begin()` … `end()`): a client
 * abort then waits until the last one ends, or `timeoutMs` after the abort, whichever comes
 * first. `abandon(reason)` fires at once, for the call's own reasons. `dispose()` stops following
 * `client` and fires `ended`.
 */
export class HandoffGuard {
  readonly #client: AbortSignal;
  readonly #timeoutMs: number;
  readonly #controller = new AbortController();
  readonly #ended = new AbortController();
  /** Hand-offs open (decode legs sent whose first byte has not arrived). */
  #open = 0;
  #held = false;
  /** Fires a held abort `timeoutMs` after the client's (unref'd; cleared when it fires). */
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Waiting for no hand-off to be open (`idle()`). */
  #idle: Array<() => void> | undefined;

  /**
   * @param client the client's signal.
   * @param timeoutMs how long a client's abort is held at most while a hand-off is open.
   */
  constructor(client: AbortSignal, timeoutMs: number) {
    this.#client = client;
    this.#timeoutMs = timeoutMs;
    if (client.aborted) this.#controller.abort(client.reason);
    else client.addEventListener('abort', this, { once: true });
  }

  /** The legs' signal. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Fires when the call ended (`dispose()`). */
  get ended(): AbortSignal {
    return this.#ended.signal;
  }

  /** A decode leg is on its way: a client abort waits for its `end()`. */
  begin(): void {
    this.#open++;
  }

  /** The decode leg's first byte arrived (or it ended): a held abort fires now. */
  end(): void {
    if (this.#open === 0) return;
    this.#open--;
    if (this.#open > 0) return;
    this.#wake();
    if (this.#held) this.#fire(this.#client.reason);
  }

  /** @returns a promise that resolves once no hand-off is open (at once when none is). */
  idle(): Promise<void> {
    if (this.#open === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      this.#idle ??= [];
      this.#idle.push(resolve);
    });
  }

  /** Ends the legs now, with `reason` (the call's own: a prefill leg that failed). */
  abandon(reason: unknown): void {
    this.#fire(reason);
  }

  /** The client's abort. */
  handleEvent(): void {
    if (this.#open === 0) {
      this.#fire(this.#client.reason);
      return;
    }
    this.#held = true;
    this.#timer = setTimeout(HandoffGuard.#timedOut, this.#timeoutMs, this);
    this.#timer.unref?.();
  }

  dispose(): void {
    this.#client.removeEventListener('abort', this);
    this.#clearTimer();
    this.#wake();
    this.#ended.abort();
  }

  /** The hand-off outlived `timeoutMs` after the client left: the legs are aborted anyway. */
  static #timedOut(this: void, guard: HandoffGuard): void {
    guard.#timer = undefined;
    guard.#fire(guard.#client.reason);
  }

  #fire(reason: unknown): void {
    this.#clearTimer();
    this.#controller.abort(reason);
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #wake(): void {
    const idle = this.#idle;
    if (idle === undefined) return;
    this.#idle = undefined;
    for (const resolve of idle) resolve();
  }
}
