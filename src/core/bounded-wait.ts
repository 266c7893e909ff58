/**
 * Bounded waits: a promise raced against a deadline that never leaves a timer behind
 * (`withDeadline`), and one call into a caller's code bounded by a timeout and abortable, that
 * always settles (`callWithDeadline`). Shared state waits on its store with the first; the
 * router's probes, load polls and model discoveries run through the second.
 *
 * @module
 * @internal
 */
import type { AbortScope, ScopeTimeout } from './abort.js';

/** @internal What `withDeadline` resolves to when the deadline passed first. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * @internal `promise`'s value, or {@link TIMED_OUT} once `ms` passed first; rejects with its
 * error. The timer is cleared as soon as either settles; a late settlement is ignored (a late
 * rejection is handled, never unhandled).
 *
 * A busy event loop runs expired timers before it reads the sockets, so an answer that arrived
 * in time could lose to its own deadline: when the timer fires, the deadline is declared only
 * after one more poll of the sockets (`setImmediate` runs after it), and an answer read there
 * wins.
 */
export function withDeadline<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => setImmediate(() => resolve(TIMED_OUT)), ms);
    promise.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}

/** The signal's default reason (`AbortError`): what the transport's signal has always carried. */
const DEFAULT_REASON = (): undefined => undefined;

/**
 * @internal The timeout of a background call (a probe, a load poll, a model discovery): its timer
 * is `unref`'d, so a pending call never holds the process open, and the transport's signal fires
 * with the default `AbortError` reason. Cost: one small object; build it once per component
 * where the timeout is fixed.
 */
export function backgroundTimeout(ms: number): ScopeTimeout {
  return { ms, unref: true, reason: DEFAULT_REASON };
}

/**
 * @internal Runs `run(scope.signal)` and resolves with its value — or with `undefined` when it
 * throws (synchronously too) or rejects, or when the scope's signal fires first (its timeout, or
 * `scope.abort()`): exactly once, whichever comes first. `scope.timedOut` then tells a timeout
 * apart. A transport that never settles or ignores its signal cannot hold the caller past the
 * deadline; its late answer is ignored. The scope is disposed when the call settles.
 *
 * @returns the value, or `undefined`; never rejects. Cost: one listener on the signal while the
 *   call runs.
 */
export async function callWithDeadline<T>(
  run: (signal: AbortSignal) => Promise<T> | T,
  scope: AbortScope,
): Promise<T | undefined> {
  try {
    // The executor turns a transport that throws synchronously into a rejection.
    return await scope.race(new Promise<T>((resolve) => resolve(run(scope.signal))));
  } catch {
    return undefined;
  } finally {
    scope.dispose();
  }
}
