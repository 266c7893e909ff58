/**
 * The logger hook: where fleetroute says what would otherwise go unsaid (a lease garbage-
 * collected without release, a hook that threw, a KV-event publisher lost) — to the caller's
 * logger when one is given, else as a Node process warning.
 *
 * @module
 */
import { fail } from './options.js';

/**
 * A logger fleetroute can write to: pino, bunyan or `console` as they are. Each method receives
 * the structured fields first and the message second (pino's order; `console` prints both); the
 * fields always hold `code`, a {@link WarningCode}. Methods left out are not called.
 *
 * @example
 * ```ts
 * new Router({ registry, transport, logger: pino() });   // or logger: console
 * ```
 * @public
 */
export interface Logger {
  debug?(fields: Readonly<Record<string, unknown>>, message: string): void;
  info?(fields: Readonly<Record<string, unknown>>, message: string): void;
  warn?(fields: Readonly<Record<string, unknown>>, message: string): void;
  error?(fields: Readonly<Record<string, unknown>>, message: string): void;
}

/** A {@link Logger} level. @public */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/**
 * The `code` of every line fleetroute writes to a {@link Logger}, and of every process warning
 * it raises: one code per event, the same through either path. The level each is written at and
 * what it means are listed in docs/observability.md ("A logger").
 *
 * - `FLEETROUTE_LEASE_LEAK` (warn, router): a lease was garbage-collected without `release()`.
 * - `FLEETROUTE_LISTENER_THREW` (warn, router and registry): an event listener threw — a
 *   router's listener (once per listener), or a `WorkerRegistry` listener (the registry's
 *   default `onListenerError`; formerly `FLEETROUTE_LISTENER_ERROR` there).
 * - `FLEETROUTE_RETRY_HOOK` (warn, router): `retry.shouldRetry` or `retry.onRetry` threw or
 *   answered junk (once per hook).
 * - `FLEETROUTE_KV_DISCONNECTED`, `FLEETROUTE_KV_GAP`, `FLEETROUTE_KV_DROPPED` (warn),
 *   `FLEETROUTE_KV_RESTART` (info), `FLEETROUTE_KV_TARGET_THREW` (error): a KV-event subscriber.
 * - `FLEETROUTE_SHARED_STATE_DEGRADED` (warn, shared state): a part degraded to local state.
 * - `FLEETROUTE_METRICS_MISSING`, `FLEETROUTE_METRICS_TOO_LARGE` (warn, the HTTP transport): a
 *   worker's load cannot be read (its `HttpTransportWarningCode`, prefixed).
 * - `FLEETROUTE_ANSWER_BROKE` (warn, the OpenAI front): a worker's answer broke off midway.
 * - `FLEETROUTE_DISAGG_FALLBACK` (warn, the OpenAI front): a disaggregated request found no
 *   prefill worker, and was failed or sent to its decode worker alone (`disaggregation.fallback`).
 *
 * @example
 * ```ts
 * process.on('warning', (w) => {
 *   if ((w as { code?: WarningCode }).code === 'FLEETROUTE_LEASE_LEAK') leaks.inc();
 * });
 * ```
 * @public
 */
export type WarningCode =
  | 'FLEETROUTE_LEASE_LEAK'
  | 'FLEETROUTE_LISTENER_THREW'
  | 'FLEETROUTE_RETRY_HOOK'
  | 'FLEETROUTE_KV_DISCONNECTED'
  | 'FLEETROUTE_KV_GAP'
  | 'FLEETROUTE_KV_DROPPED'
  | 'FLEETROUTE_KV_RESTART'
  | 'FLEETROUTE_KV_TARGET_THREW'
  | 'FLEETROUTE_SHARED_STATE_DEGRADED'
  | 'FLEETROUTE_METRICS_MISSING'
  | 'FLEETROUTE_METRICS_TOO_LARGE'
  | 'FLEETROUTE_ANSWER_BROKE'
  | 'FLEETROUTE_DISAGG_FALLBACK';

/** @internal `value` as a logger: an object whose given level methods are functions. */
export function readLogger(field: string, value: unknown): Logger | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null)
    fail(field, 'a logger ({ debug, info, warn, error })', value);
  for (const level of ['debug', 'info', 'warn', 'error'] as const) {
    const method = (value as Record<string, unknown>)[level];
    if (method !== undefined && typeof method !== 'function')
      fail(`${field}.${level}`, 'a function', method);
  }
  return value as Logger;
}

/**
 * @internal Writes to `logger` at `level`; without a logger, `warn` and `error` become a process
 * warning with `code` (where `process.emitWarning` exists) and the lower levels are dropped. A
 * logger that throws is ignored: logging never breaks routing.
 */
export function log(
  logger: Logger | undefined,
  level: LogLevel,
  code: WarningCode,
  message: string,
  fields: Readonly<Record<string, unknown>> = {},
): void {
  if (logger !== undefined) {
    const method = logger[level];
    if (method === undefined) return;
    try {
      method.call(logger, { code, ...fields }, message);
    } catch {
      // A logger that throws is the caller's problem, not the request's.
    }
    return;
  }
  if (level !== 'warn' && level !== 'error') return;
  const host = globalThis as { process?: { emitWarning?: unknown } };
  const emit = host.process?.emitWarning;
  if (typeof emit === 'function')
    (emit as (m: string, o: { code: string }) => void).call(host.process, message, { code });
}
