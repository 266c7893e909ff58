/**
 * The one error class fleetroute throws, and the codes it carries.
 *
 * @module
 */

/**
 * Every code a {@link FleetRouteError} can carry. The set only grows; a code never changes meaning.
 *
 * - `INVALID_URL`: a worker URL is not `http(s)://host[:port][/path]`, `grpc(s)://host:port`
 *   or a bare `host:port`.
 * - `INVALID_ARGUMENT`: an argument or option has the wrong type or is out of range; the message
 *   names the field.
 * - `DUPLICATE_URL`: a live worker already has that URL.
 * - `NOT_FOUND`: no live worker (or model) with that id.
 * - `URL_CHANGED`: `replace` was given a spec whose URL differs from the worker's.
 * - `STALE_REVISION`: `expectedRevision` did not match the worker's current revision.
 * - `CLOSED`: the object was closed and takes no more calls.
 * - `NO_WORKER`: no worker was available to serve a request; {@link FleetRouteError.reason} says
 *   why ({@link NoWorkerReason}).
 * - `TRANSPORT_FAILED`: a call to a worker failed: network error, timeout, abort, non-2xx status,
 *   or a response that does not follow the protocol.
 * - `MISSING_DEPENDENCY`: an adapter needs an optional peer dependency that is not installed; the
 *   message names the package and the command that installs it.
 * - `SATURATED`: a router's admission control (the `admission` option) turned a request away
 *   because every worker that could serve it is full; {@link FleetRouteError.reason} says how
 *   ({@link SaturatedReason}) and {@link FleetRouteError.retryAfterMs} when to try again.
 *
 * @public
 */
export type FleetRouteErrorCode =
  | 'INVALID_URL'
  | 'INVALID_ARGUMENT'
  | 'DUPLICATE_URL'
  | 'NOT_FOUND'
  | 'URL_CHANGED'
  | 'STALE_REVISION'
  | 'CLOSED'
  | 'NO_WORKER'
  | 'TRANSPORT_FAILED'
  | 'MISSING_DEPENDENCY'
  | 'SATURATED';

/**
 * Why a `NO_WORKER` error was thrown (its {@link FleetRouteError.reason}):
 *
 * - `unknown_model`: no registered worker serves the request's model — none names it and there
 *   is no wildcard worker (a worker registered without models serves every model); with no model
 *   named, no worker is registered at all. Waiting does not help; registering one does.
 * - `unavailable`: workers serve the model, but none is available now (not `ready`, its breaker
 *   open, or cooling down after a `Retry-After`). It may pass by itself.
 *
 * @public
 */
export type NoWorkerReason = 'unknown_model' | 'unavailable';

/**
 * How a `SATURATED` error turned the request away (its {@link FleetRouteError.reason}):
 *
 * - `shed`: the pool was saturated and the request's priority is below the admission's
 *   `shedBelowPriority`: rejected at once, never queued.
 * - `queue_full`: the admission queue was full (in requests or in size) and the request was the
 *   newest of the lowest priority band queued — on arrival, or later, pushed out by a request of a
 *   higher band.
 * - `timeout`: it waited `maxWaitMs` in the queue and no worker had room.
 * - `busy`: `Router.select` was called while the pool was saturated or others were queued for
 *   it (`select` cannot wait: see `Router.admit`).
 *
 * @public
 */
export type SaturatedReason = 'shed' | 'queue_full' | 'timeout' | 'busy';

/**
 * The default message of each code, used when a throw site gives none.
 *
 * @public
 */
export const ERROR_MESSAGES: Readonly<Record<FleetRouteErrorCode, string>> = Object.freeze({
  INVALID_URL: 'invalid worker URL',
  INVALID_ARGUMENT: 'invalid argument',
  DUPLICATE_URL: 'a live worker already has this URL',
  NOT_FOUND: 'no such worker',
  URL_CHANGED: 'a replacement must keep the worker URL',
  STALE_REVISION: 'the worker changed since the expected revision',
  CLOSED: 'closed',
  NO_WORKER: 'no worker is available',
  TRANSPORT_FAILED: 'a call to a worker failed',
  MISSING_DEPENDENCY: 'an optional peer dependency is not installed',
  SATURATED: 'every worker that could serve the request is full',
});

const kBrand = Symbol.for('fleetroute.error');

/**
 * The error fleetroute throws. Match on {@link FleetRouteError.code}, never on the message text.
 *
 * `instanceof FleetRouteError` works across duplicate installs of the package (a `Symbol.for`
 * brand backs it), so a library that bundles its own copy still matches.
 *
 * @example
 * ```ts
 * try {
 *   await registry.register({ url: 'ftp://nope' });
 * } catch (error) {
 *   if (error instanceof FleetRouteError && error.code === 'INVALID_URL') { ... }
 * }
 * ```
 * @public
 */
export class FleetRouteError extends Error {
  /** Stable, machine-readable reason. */
  readonly code: FleetRouteErrorCode;

  /**
   * For `NO_WORKER`: why no worker was available ({@link NoWorkerReason}); for `SATURATED`: how
   * the request was turned away ({@link SaturatedReason}); `undefined` for every other code, and
   * for one built without a reason.
   */
  readonly reason: NoWorkerReason | SaturatedReason | undefined;

  /**
   * For `SATURATED`: when it is worth trying again, in ms (an integer ≥ 0); `undefined` for every
   * other code.
   */
  readonly retryAfterMs: number | undefined;

  /**
   * @param code - the reason; see {@link FleetRouteErrorCode}.
   * @param message - human-readable detail; defaults to the code's default message.
   * @param options - `cause`: the underlying error, if any; `reason`: for `NO_WORKER` and
   *   `SATURATED`, why (ignored for other codes); `retryAfterMs`: for `SATURATED` (ignored for
   *   other codes).
   */
  constructor(
    code: FleetRouteErrorCode,
    message?: string,
    options?: {
      cause?: unknown;
      reason?: NoWorkerReason | SaturatedReason;
      retryAfterMs?: number;
    },
  ) {
    super(
      message ?? ERROR_MESSAGES[code],
      options === undefined || !('cause' in options) ? undefined : { cause: options.cause },
    );
    this.name = 'FleetRouteError';
    this.code = code;
    this.reason = code === 'NO_WORKER' || code === 'SATURATED' ? options?.reason : undefined;
    this.retryAfterMs = code === 'SATURATED' ? options?.retryAfterMs : undefined;
  }

  /** `true` for any fleetroute error, including one from another copy of the package. */
  static override [Symbol.hasInstance](value: unknown): boolean {
    return typeof value === 'object' && value !== null && kBrand in value;
  }

  /** `true` when `value` is a fleetroute error with the given code. */
  static is(value: unknown, code?: FleetRouteErrorCode): value is FleetRouteError {
    return value instanceof FleetRouteError && (code === undefined || value.code === code);
  }
}

Object.defineProperty(FleetRouteError.prototype, kBrand, { value: true });

/** @internal Shorthand for `new FleetRouteError('INVALID_ARGUMENT', message)`. */
export function invalidArgument(message: string): FleetRouteError {
  return new FleetRouteError('INVALID_ARGUMENT', message);
}
