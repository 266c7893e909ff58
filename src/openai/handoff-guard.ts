/**
 * `HandoffGuard`: the abort signal of a disaggregated request's legs, which holds a client's
 * abort back while a decode leg waits for its KV cache, so the engines never see the decode leg
 * cancelled mid-transfer.
 *
 * @module
 * @internal
 */

/**
 * @internal Follows `client`, except while a hand-off is open (`begin()` … `end()`): a client
 * abort then waits until the last one ends. `abandon(reason)` fires at once, for the call's own
 * reasons. `dispose()` stops following `client`.
 */
export class HandoffGuard {
  readonly #client: AbortSignal;
  readonly #controller = new AbortController();
  /** Hand-offs open (decode legs sent whose first byte has not arrived). */
  #open = 0;
  #held = false;

  constructor(client: AbortSignal) {
    this.#client = client;
    if (client.aborted) this.#controller.abort(client.reason);
    else client.addEventListener('abort', this, { once: true });
  }

  /** The legs' signal. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** A decode leg is on its way: a client abort waits for its `end()`. */
  begin(): void {
    this.#open++;
  }

  /** The decode leg's first byte arrived (or it ended): a held abort fires now. */
  end(): void {
    if (this.#open === 0) return;
    this.#open--;
    if (this.#open === 0 && this.#held) this.#controller.abort(this.#client.reason);
  }

  /** Ends the legs now, with `reason` (the call's own: a prefill leg that failed). */
  abandon(reason: unknown): void {
    this.#controller.abort(reason);
  }

  /** The client's abort. */
  handleEvent(): void {
    if (this.#open > 0) this.#held = true;
    else this.#controller.abort(this.#client.reason);
  }

  dispose(): void {
    this.#client.removeEventListener('abort', this);
  }
}
