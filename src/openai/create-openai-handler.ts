/**
 * `createOpenAIHandler`: the OpenAI-compatible front as a fetch-standard handler
 * (`Request → Promise<Response>`), which Hono, Bun, Deno and every WinterCG runtime take as is.
 *
 * @module
 */
import { pathOf, readBounded } from './bytes.js';
import { type AnswerSource, type FrontAnswer, isSource } from './front-answer.js';
import { OpenAIFront } from './openai-front.js';
import type { OpenAIHandlerOptions } from './openai-handler-options.js';

/** A fetch-standard request handler. @public */
export type OpenAIHandler = (request: Request) => Promise<Response>;

/**
 * An OpenAI-compatible service over a {@link Router}, as a fetch-standard handler.
 *
 * Routes: `POST /v1/chat/completions`, `POST /v1/completions` (and the `routes` option's), each
 * routed by the router's policy on `openAIRequest`'s reading of the body and sent to the chosen
 * worker with `router.execute`; `GET /v1/models` lists the registry's models. Anything else is a
 * 404, a known path with the wrong method a 405.
 *
 * - **Streaming**: the status and headers go to the client only once a worker answered with a
 *   status that is not a failure (not in its breaker's `failureStatuses`); failures before that
 *   are retried on another worker. The answer is then relayed as it arrives, one chunk from the
 *   worker per chunk the client reads (a slow client slows the worker's stream; nothing piles up
 *   in memory). The first server-sent event that carries output calls `firstToken()`; the final
 *   `usage` is reported to the router. A break midway is never retried: the client gets an error
 *   event, then an errored stream. The client going away (`request.signal`, or cancelling the
 *   body) aborts the worker's call.
 * - **Errors**, in OpenAI's shape (`{ error: { message, type, param, code } }`): bad JSON or a
 *   malformed field → 400; a body over `maxBodyBytes` → 413; an unknown model → 404
 *   `model_not_found`; no available worker → 503 with `Retry-After`; a worker's own 4xx relayed
 *   as it is; when every attempt failed with a status, the last one relayed; when none answered,
 *   502.
 *
 * Starts the router if it has not started.
 *
 * @example
 * ```ts
 * const handler = createOpenAIHandler({ router });
 * const app = new Hono().mount('/', handler); // or Bun.serve({ fetch: handler })
 * ```
 * @returns the handler. It never rejects: every failure is an answer.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 * @public
 */
export function createOpenAIHandler(options: OpenAIHandlerOptions): OpenAIHandler {
  const front = new OpenAIFront(options);
  return async (request) => {
    const path = pathOf(request.url);
    const answer = await front.handle({
      method: request.method,
      path,
      headers: request.headers,
      readBody: (limit) => readBounded(request.body, limit, 'refuse'),
      signal: request.signal,
    });
    return toResponse(answer);
  };
}

/** @internal A front answer as a `Response` (a streamed body pulled one chunk per read). */
export function toResponse(answer: FrontAnswer): Response {
  const { status, headers, body } = answer;
  if (!isSource(body)) return new Response(body ?? null, { status, headers });
  return new Response(pulled(body), { status, headers });
}

/** A stream that reads the source only when its reader asks (no queue of its own). */
function pulled(source: AnswerSource): ReadableStream<Uint8Array> {
  let broken: unknown;
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (broken !== undefined) {
          // A turn of the timers first: servers write a chunk on a later tick, and an error now
          // would cut the farewell off.
          await new Promise((resolve) => setTimeout(resolve, 0));
          return controller.error(broken);
        }
        let chunk: Uint8Array | undefined;
        try {
          chunk = await source.read();
        } catch (error) {
          // A last error event first (errors the stream on the next pull), else at once.
          const farewell = (error as { farewell?: Uint8Array }).farewell;
          if (farewell === undefined) return controller.error(error);
          broken = error;
          controller.enqueue(farewell);
          return;
        }
        if (chunk === undefined) controller.close();
        else controller.enqueue(chunk);
      },
      cancel(reason) {
        source.cancel(reason);
      },
    },
    { highWaterMark: 0 },
  );
}
