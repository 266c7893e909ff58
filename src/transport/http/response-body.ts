/**
 * Bounded reading of response bodies: read a body up to a size limit, or drain a small one so
 * its connection can be reused, cancelling (and so closing) anything larger.
 *
 * @module
 * @internal
 */
import type { CallDeadline } from './call-deadline.js';

/** @internal Bodies up to this size are drained after a health check rather than cancelled. */
export const DRAIN_LIMIT_BYTES = 65_536;

function noop(): void {}

/** Cancels a body without waiting for, or failing on, the cancellation. */
function cancel(response: Response): void {
  try {
    const body = response.body;
    if (body !== null && !body.locked) body.cancel().catch(noop);
  } catch {
    // A body that cannot even be cancelled has nothing left to release.
  }
}

/**
 * @internal Releases a response that arrived after its call had already failed (the abort
 * raced the fetch): its body is cancelled so the connection closes.
 */
export function discardLateResponse(response: unknown): void {
  if (typeof response === 'object' && response !== null && 'body' in response)
    cancel(response as Response);
}

/**
 * @internal Reads `response`'s body, at most `maxBytes` bytes, within `deadline`. A body that
 * declares or turns out to be longer is cancelled (its connection is closed rather than kept
 * alive) and `undefined` is returned.
 *
 * @param decode - `true` to return the body as UTF-8 text (invalid sequences become U+FFFD);
 *   `false` to drain it and return `''`.
 * @returns the text (`''` when not decoding or empty), or `undefined` when it was too large.
 * @throws the abort reason when the deadline fires, or the stream's error.
 */
export async function readBody(
  response: Response,
  maxBytes: number,
  deadline: CallDeadline,
  decode: boolean,
): Promise<string | undefined> {
  const body = response.body;
  if (body === null) return '';
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (declared > maxBytes) {
    cancel(response);
    return undefined;
  }
  const reader = body.getReader();
  const decoder = decode ? new TextDecoder('utf-8') : undefined;
  const parts: string[] = [];
  let total = 0;
  let finished = false;
  try {
    for (;;) {
      const { done, value } = await deadline.race(reader.read());
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) return undefined;
      if (decoder !== undefined) parts.push(decoder.decode(value, { stream: true }));
    }
    finished = true;
  } finally {
    if (!finished) reader.cancel().catch(noop);
    try {
      reader.releaseLock();
    } catch {
      // Older stream implementations refuse while a read is pending; the cancel ended it anyway.
    }
  }
  if (decoder === undefined) return '';
  parts.push(decoder.decode());
  return parts.join('');
}

/**
 * @internal Drains a body of at most {@link DRAIN_LIMIT_BYTES} so the connection can be reused;
 * cancels a larger one. Never throws.
 */
export async function drainBody(response: Response, deadline: CallDeadline): Promise<void> {
  try {
    await readBody(response, DRAIN_LIMIT_BYTES, deadline, false);
  } catch {
    // The status is already known; a body that fails to arrive changes nothing.
  }
}
