/**
 * Racing a promise against an abort signal.
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
