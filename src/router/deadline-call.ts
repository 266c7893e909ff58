/**
 * `callWithDeadline`: one call into the caller's transport, bounded by a timeout and abortable,
 * that always settles — whatever the transport does.
 *
 * @module
 * @internal
 */

/** @internal How a bounded call ended. */
export type DeadlineOutcome<T> =
  | { readonly kind: 'value'; readonly value: T }
  | { readonly kind: 'error'; readonly error: unknown }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'aborted' };

/** @internal A call in flight: abort it with `controller`; `settled` never rejects. */
export interface DeadlineCall<T> {
  readonly controller: AbortController;
  readonly settled: Promise<DeadlineOutcome<T>>;
}

/**
 * @internal Runs `run(signal)` and settles with its value or error, or with `timeout` after
 * `timeoutMs` (then aborts the signal), or with `aborted` as soon as `controller` is aborted —
 * whichever comes first, exactly once. A transport that throws synchronously, rejects, never
 * settles or ignores its signal cannot hold the caller past the deadline; its late answer is
 * ignored. The timer is `unref`'d and cleared when the call settles.
 *
 * Cost: one `AbortController`, one timer and one listener per call.
 */
export function callWithDeadline<T>(
  run: (signal: AbortSignal) => Promise<T> | T,
  timeoutMs: number,
): DeadlineCall<T> {
  const controller = new AbortController();
  const settled = new Promise<DeadlineOutcome<T>>((resolve) => {
    let done = false;
    const finish = (outcome: DeadlineOutcome<T>): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      controller.signal.removeEventListener('abort', onAbort);
      resolve(outcome);
    };
    const onAbort = (): void => finish({ kind: 'aborted' });
    const timer = setTimeout(() => {
      finish({ kind: 'timeout' });
      controller.abort();
    }, timeoutMs);
    timer.unref?.();
    controller.signal.addEventListener('abort', onAbort, { once: true });
    try {
      Promise.resolve(run(controller.signal)).then(
        (value) => finish({ kind: 'value', value }),
        (error: unknown) => finish({ kind: 'error', error }),
      );
    } catch (error) {
      finish({ kind: 'error', error }); // a transport that throws synchronously
    }
  });
  return { controller, settled };
}
