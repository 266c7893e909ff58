/**
 * The error a failed HTTP transport call rejects with.
 *
 * @module
 * @internal
 */
import { FleetRouteError, type FleetRouteErrorCode } from '../../core/errors.js';

/**
 * @internal The code of a failed transport call. Pending its addition to `FleetRouteErrorCode`
 * in `src/core/errors.ts` (with the default message "a call to a worker failed"); the double cast
 * goes away then.
 */
export const TRANSPORT_FAILED: FleetRouteErrorCode = 'TRANSPORT_FAILED';

/** A short, non-secret code from an underlying error (`ECONNREFUSED`, `UND_ERR_SOCKET`…). */
function codeOf(error: unknown): string | undefined {
  for (let e = error, depth = 0; depth < 4 && typeof e === 'object' && e !== null; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]{0,63}$/.test(code)) return code;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

/**
 * @internal A `FleetRouteError` for a failed `GET <url>`. The message is built from the URL
 * (worker URLs never carry credentials), the `detail` the transport wrote, and at most an error
 * code; never from an underlying error's message or the request's headers, so the API key
 * cannot reach it. The underlying error, if any, is the `cause`.
 */
export function transportFailure(url: string, detail: string, cause?: unknown): FleetRouteError {
  const code = cause === undefined ? undefined : codeOf(cause);
  const message = `GET ${url} failed: ${detail}${code === undefined ? '' : ` (${code})`}`;
  return new FleetRouteError(
    TRANSPORT_FAILED,
    message,
    cause === undefined ? undefined : { cause },
  );
}
