/**
 * What the OpenAI front answers, before a framework writes it: a status, headers and a body that
 * is either bytes or a source read chunk by chunk. The fetch handler turns it into a `Response`,
 * the Node adapter writes it to a `ServerResponse`.
 *
 * @module
 * @internal
 */

/** @internal A streamed answer body, read one chunk at a time (the reader sets the pace). */
export interface AnswerSource {
  /**
   * The next chunk, or `undefined` at the end. Rejects when the answer broke midway: the client
   * must then see a truncated answer (a reset connection, an errored stream), never a clean end.
   * The rejection's `farewell` (when it has bytes) is written first: a last error event.
   */
  read(): Promise<Uint8Array | undefined>;
  /** The client went away or stopped reading: stops the call to the worker. Idempotent. */
  cancel(reason?: unknown): void;
}

/** @internal One answer of the front. */
export interface FrontAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** Bytes sent as they are, a source streamed to the client, or nothing. */
  readonly body: Uint8Array | AnswerSource | undefined;
}

/** @internal How a request body arrived. */
export type ReadBody =
  /** The bytes, or `undefined` when the body is longer than `limit` (reading stopped there). */
  (limit: number) => Promise<Uint8Array | undefined>;

/** @internal One request, as a framework adapter hands it to the front. */
export interface FrontCall {
  readonly method: string;
  /** The URL's path, without the query. */
  readonly path: string;
  readonly headers: Headers | Readonly<Record<string, string | readonly string[] | undefined>>;
  /** Reads the body (a body a framework already parsed: see `parsed`). */
  readonly readBody: ReadBody;
  /** A body the framework already parsed as JSON (Express's `express.json()`), when it did. */
  readonly parsed?: unknown;
  /** Fires when the client goes away. */
  readonly signal: AbortSignal | undefined;
  /**
   * Fires `signal` (the adapter owns its controller): given, the call aborts through it instead
   * of a controller of its own — one abort signal and one listener fewer per request.
   */
  readonly abort?: (reason?: unknown) => void;
}

/** @internal Whether a body is a streamed source rather than bytes. */
export function isSource(body: FrontAnswer['body']): body is AnswerSource {
  return body !== undefined && !(body instanceof Uint8Array);
}

const encoder = new TextEncoder();

/**
 * @internal An error answer in OpenAI's shape: `{ error: { message, type, param, code } }`.
 */
export function errorAnswer(
  status: number,
  message: string,
  code: string,
  extraHeaders?: Readonly<Record<string, string>>,
  param: string | null = null,
): FrontAnswer {
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  const body = encoder.encode(JSON.stringify({ error: { message, type, param, code } }));
  return {
    status,
    headers: { 'content-type': 'application/json', ...extraHeaders },
    body,
  };
}

/** @internal A JSON answer. */
export function jsonAnswer(status: number, value: unknown): FrontAnswer {
  return {
    status,
    headers: { 'content-type': 'application/json' },
    body: encoder.encode(JSON.stringify(value)),
  };
}
