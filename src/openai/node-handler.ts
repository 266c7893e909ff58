/**
 * The OpenAI front on Node's `http` server, and as an Express middleware: no `Request` or
 * `Response` objects in between, the answer written to the `ServerResponse` as the client takes
 * it.
 *
 * @module
 */
import { joinBytes, pathOf } from './bytes.js';
import { type FrontAnswer, isSource } from './front-answer.js';
import { OpenAIFront } from './openai-front.js';
import type { OpenAIHandlerOptions } from './openai-handler-options.js';

/**
 * The part of Node's `http.IncomingMessage` the handler reads (an Express request fits). Declared
 * here so the package's types do not need `@types/node`.
 *
 * @public
 */
export interface NodeRequestLike {
  readonly method?: string | undefined;
  readonly url?: string | undefined;
  readonly headers: Readonly<Record<string, string | readonly string[] | undefined>>;
  /** A body a framework already parsed (Express's `express.json()`), if one did. */
  readonly body?: unknown;
  /** `true` once the body has been read to its end (by a body parser, say). */
  readonly readableEnded?: boolean;
  on(event: 'data', listener: (chunk: Uint8Array | string) => void): unknown;
  on(event: 'end', listener: () => void): unknown;
  on(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'data', listener: (chunk: Uint8Array | string) => void): unknown;
  off(event: 'end', listener: () => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
  pause(): unknown;
}

/**
 * The part of Node's `http.ServerResponse` the handler writes (an Express response fits).
 *
 * @public
 */
export interface NodeResponseLike {
  readonly headersSent: boolean;
  readonly writableFinished: boolean;
  readonly destroyed: boolean;
  writeHead(status: number, headers: Record<string, string>): unknown;
  write(chunk: Uint8Array, callback?: (error?: Error | null) => void): boolean;
  end(chunk?: Uint8Array): unknown;
  destroy(error?: Error): unknown;
  once(event: 'close', listener: () => void): unknown;
  once(event: 'drain', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
  off(event: 'drain', listener: () => void): unknown;
}

/** A Node `http` request handler: `createServer(handler)`. @public */
export type OpenAINodeHandler = (
  request: NodeRequestLike,
  response: NodeResponseLike,
) => Promise<void>;

/** An Express (4 or 5) middleware. @public */
export type OpenAIMiddleware = (
  request: NodeRequestLike,
  response: NodeResponseLike,
  next: (error?: unknown) => void,
) => void;

/**
 * The OpenAI-compatible front (see {@link createOpenAIHandler} for its routes and rules) as a
 * Node `http` handler: `createServer(createOpenAINodeHandler({ router }))`. The client going away
 * (the response closing before its end) aborts the worker's call; the answer is written as the
 * socket drains, one chunk from the worker at a time.
 *
 * @returns the handler; its promise resolves when the answer has been written (it never rejects).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 * @public
 */
export function createOpenAINodeHandler(options: OpenAIHandlerOptions): OpenAINodeHandler {
  const front = new OpenAIFront(options);
  return (request, response) => serve(front, request, response);
}

/**
 * The OpenAI-compatible front as an Express middleware: `app.use(openAIExpress({ router }))`. It
 * answers its routes (see {@link createOpenAIHandler}) and passes every other path to `next()`.
 * A body already parsed by `express.json()` is used as it is; without a body parser, the raw body
 * is read (and bounded) by the handler.
 *
 * @returns the middleware.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 * @public
 */
export function openAIExpress(options: OpenAIHandlerOptions): OpenAIMiddleware {
  const front = new OpenAIFront(options);
  return (request, response, next) => {
    if (!front.serves(pathOf(request.url))) return next();
    void serve(front, request, response);
  };
}

/** @internal Answers one request on a Node response. Never rejects. */
export async function serve(
  front: OpenAIFront,
  request: NodeRequestLike,
  response: NodeResponseLike,
): Promise<void> {
  const client = new AbortController();
  const onClose = (): void => {
    if (!response.writableFinished) client.abort(new Error('the client went away'));
  };
  response.once('close', onClose);
  try {
    const parsed = request.readableEnded === true ? request.body : undefined;
    const answer = await front.handle({
      method: request.method ?? 'GET',
      path: pathOf(request.url),
      headers: request.headers,
      readBody: (limit) => readLimited(request, limit),
      ...(parsed === undefined ? {} : { parsed }),
      signal: client.signal,
      abort: (reason) => client.abort(reason),
    });
    await write(answer, response, client.signal);
  } finally {
    response.off('close', onClose);
  }
}

/** Writes an answer, honouring backpressure; a broken stream destroys the response. */
async function write(
  answer: FrontAnswer,
  response: NodeResponseLike,
  gone: AbortSignal,
): Promise<void> {
  const { status, headers, body } = answer;
  if (!isSource(body)) {
    if (gone.aborted || response.destroyed) return;
    response.writeHead(status, headers);
    response.end(body);
    return;
  }
  if (gone.aborted || response.destroyed) {
    body.cancel(gone.reason);
    return;
  }
  response.writeHead(status, headers);
  for (;;) {
    let chunk: Uint8Array | undefined;
    try {
      chunk = await body.read();
    } catch (error) {
      // The worker's answer broke: a last error event, then the connection cut (once that event
      // has left), so the client never sees a clean end.
      const cause = error instanceof Error ? error : new Error(String(error));
      const farewell = (error as { farewell?: Uint8Array }).farewell;
      if (farewell === undefined || response.destroyed) response.destroy(cause);
      else response.write(farewell, () => response.destroy(cause));
      return;
    }
    if (chunk === undefined) {
      response.end();
      return;
    }
    if (gone.aborted || response.destroyed) {
      body.cancel(gone.reason);
      return;
    }
    if (!response.write(chunk) && !(await drained(response))) {
      body.cancel(gone.reason);
      return;
    }
  }
}

/** Resolves `true` when the response drains, `false` when it closes first. */
function drained(response: NodeResponseLike): Promise<boolean> {
  return new Promise((resolve) => {
    const onDrain = (): void => {
      response.off('close', onClose);
      resolve(true);
    };
    const onClose = (): void => {
      response.off('drain', onDrain);
      resolve(false);
    };
    response.once('drain', onDrain);
    response.once('close', onClose);
  });
}

/**
 * The body's bytes, or `undefined` once it passes `limit`: reading stops there (the request is
 * paused, not destroyed, so the 413 can still be written).
 */
function readLimited(request: NodeRequestLike, limit: number): Promise<Uint8Array | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Uint8Array[] = [];
    let size = 0;
    const done = (): void => {
      request.off('data', onData);
      request.off('end', onEnd);
      request.off('error', onError);
    };
    const onData = (chunk: unknown): void => {
      const bytes =
        typeof chunk === 'string' ? new TextEncoder().encode(chunk) : (chunk as Uint8Array);
      size += bytes.length;
      if (size > limit) {
        done();
        request.pause();
        resolve(undefined);
        return;
      }
      chunks.push(bytes);
    };
    const onEnd = (): void => {
      done();
      resolve(joinBytes(chunks));
    };
    const onError = (error: unknown): void => {
      done();
      reject(error);
    };
    request.on('data', onData);
    request.on('end', onEnd);
    request.on('error', onError);
  });
}
