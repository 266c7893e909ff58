/**
 * Abort helpers: racing a promise against a signal, and the scope of one call — its own signal,
 * fired by the caller's signal, a timeout or `abort()`.
 *
 * @module
 * @internal
 */

/**
 * @internal Settles like `promise`, or rejects with the signal's reason as soon as `signal`
 * aborts — so work that ignores its signal cannot hold its caller. The listener is removed when
 * `promise` settles; a late rejection of `promise` is absorbed (never unhandled).
 */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) {
    promise.catch(() => {});
    return Promise.reject(signal.reason);
  }
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}

/** @internal When an {@link AbortScope} fires by itself. */
export interface ScopeTimeout {
  /** Fire this many ms after the scope opens (unless it is disposed or aborted first). */
  readonly ms: number;
  /**
   * Let the process exit while the timer is pending (background work: probes, polls), rather
   * than hold it open (a call someone awaits).
   */
  readonly unref: boolean;
  /**
   * The abort reason when the timeout fires. `undefined` from it leaves the signal's default
   * (`AbortError`). @defaultValue {@link timeoutError}
   */
  readonly reason?: (ms: number) => unknown;
}

/** @internal The reason of a timed-out call: a `TimeoutError` that says after how long. */
export function timeoutError(ms: number): DOMException {
  return new DOMException(`timed out after ${ms} ms`, 'TimeoutError');
}

/**
 * @internal The abort signal of one call: it fires when `outer` fires (with its reason), when
 * the timeout (if any) expires, or on {@link AbortScope.abort} — whichever comes first. Under an
 * `outer` that has already fired it starts aborted, with no timer. `dispose()` clears the timer
 * and the listener on `outer`, so a finished call leaves nothing behind, however long-lived
 * `outer` is.
 *
 * Why not `AbortSignal.any([outer, AbortSignal.timeout(ms)])`: the timeout's timer lives until
 * it fires (up to `ms` after the call ended), and on Node 20 each combined signal stays
 * registered on `outer` until garbage collection (nodejs/node#55351), which grows without bound
 * when one signal is passed to every call. And each call has its own controller, so one signal
 * shared by many calls never collects a listener per call (Node's "possible EventTarget memory
 * leak" warning).
 *
 * Cost: one `AbortController` per scope, plus one timer with a timeout and one listener on
 * `outer` when given (the scope itself is that listener: no closure per call).
 */
export class AbortScope {
  readonly #controller = new AbortController();
  readonly #outer: AbortSignal | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #timedOut = false;

  constructor(outer: AbortSignal | undefined, timeout?: ScopeTimeout) {
    this.#outer = outer;
    if (outer?.aborted) {
      this.#controller.abort(outer.reason);
      return;
    }
    outer?.addEventListener('abort', this, { once: true });
    if (timeout === undefined) return;
    this.#timer = setTimeout(AbortScope.#fire, timeout.ms, this, timeout);
    if (timeout.unref) this.#timer.unref?.();
  }

  /** Fires on timeout, when `outer` fires, or on `abort()`. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Whether it was the timeout that fired the signal. */
  get timedOut(): boolean {
    return this.#timedOut;
  }

  /**
   * Fires the signal now with `reason` (none: the signal's default `AbortError`), and disposes
   * the scope. Does nothing to a signal that has already fired.
   */
  abort(reason?: unknown): void {
    this.dispose();
    this.#controller.abort(reason);
  }

  /**
   * Settles like `promise`, or rejects with the abort reason as soon as the signal fires, even
   * when whatever produces `promise` ignores the signal. Cost: one listener until it settles.
   */
  race<T>(promise: Promise<T>): Promise<T> {
    return untilAborted(promise, this.#controller.signal);
  }

  /** Clears the timer and detaches from `outer`; the signal stays as it is. Idempotent. */
  dispose(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#outer?.removeEventListener('abort', this);
  }

  /**
   * @internal The scope is its `outer` signal's abort listener (the `EventListener` object
   * form); not for other callers.
   */
  handleEvent(): void {
    this.abort(this.#outer?.reason);
  }

  /** The timer's callback: static, with the scope as an argument, so no closure per scope. */
  static #fire(scope: AbortScope, timeout: ScopeTimeout): void {
    scope.#timedOut = true;
    scope.abort((timeout.reason ?? timeoutError)(timeout.ms));
  }
}

/**
 * @internal The scopes open in one component (a router's `execute` calls, a poller's polls), so
 * that closing the component aborts each of them directly.
 *
 * Cost: one `Set` entry per open scope.
 */
export class AbortScopes {
  readonly #open = new Set<AbortScope>();

  /** @returns a new scope, as `new AbortScope(outer, timeout)`, kept until {@link AbortScopes.close}. */
  open(outer: AbortSignal | undefined, timeout?: ScopeTimeout): AbortScope {
    const scope = new AbortScope(outer, timeout);
    this.#open.add(scope);
    return scope;
  }

  /** Disposes `scope` and forgets it (its call ended). Idempotent. */
  close(scope: AbortScope): void {
    scope.dispose();
    this.#open.delete(scope);
  }

  /** Aborts every open scope with `reason` (none: the default `AbortError`), and forgets them. */
  abortAll(reason?: unknown): void {
    const open = [...this.#open];
    this.#open.clear();
    for (const scope of open) scope.abort(reason);
  }
}
