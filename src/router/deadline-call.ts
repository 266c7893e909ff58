/**
 * `callWithDeadline`: one call into the caller's transport, bounded by a timeout and abortable,
 * that always settles — whatever the transport does.
 *
 * @module
 * @internal
 */
import type { AbortScope, ScopeTimeout } from '../core/abort.js';

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
