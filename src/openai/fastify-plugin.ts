/**
 * `openAIFastify`: the OpenAI-compatible front as a Fastify plugin.
 *
 * @module
 */

import { type NodeRequestLike, type NodeResponseLike, serve } from './node-handler.js';
import { OpenAIFront } from './openai-front.js';
import { COMPLETION_ROUTES, type OpenAIHandlerOptions } from './openai-handler-options.js';

/** The options Fastify's `register` itself reads; they are not the handler's. */
const REGISTER_OPTIONS = new Set(['prefix', 'logLevel', 'logSerializers']);

/** The parts of a Fastify instance the plugin uses (typed here: Fastify stays optional). */
interface FastifyInstanceLike {
  removeAllContentTypeParsers(): unknown;
  addContentTypeParser(
    type: string,
    parser: (request: unknown, payload: unknown, done: (error: null) => void) => void,
  ): unknown;
  route(options: {
    method: readonly string[];
    url: string;
    handler: (request: { raw: NodeRequestLike }, reply: FastifyReplyLike) => Promise<void>;
  }): unknown;
}

interface FastifyReplyLike {
  readonly raw: NodeResponseLike;
  hijack(): unknown;
}

/** Every method: the front answers a wrong one with a 405 in OpenAI's shape. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];

/**
 * The OpenAI-compatible front (see {@link createOpenAIHandler} for its routes and rules) as a
 * Fastify (4 or 5) plugin: `app.register(openAIFastify, { router })`, with a `prefix` if you
 * like. Inside the plugin's own scope, request bodies are left unparsed by Fastify (the handler
 * reads and bounds them itself, with `maxBodyBytes`), and answers are written to the raw response
 * as the client drains it (`reply.hijack()`), so Fastify's serialisers and hooks after the handler
 * do not see them.
 *
 * @param instance - the Fastify instance (given by `register`).
 * @param options - the handler's options (`register`'s own `prefix`, `logLevel` and
 *   `logSerializers` are left to Fastify).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` (as a rejection of `register`) naming the
 *   first bad option.
 * @public
 */
export async function openAIFastify(
  instance: object,
  options: OpenAIHandlerOptions,
): Promise<void> {
  const own: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(options ?? {}))
    if (!REGISTER_OPTIONS.has(key)) own[key] = value;
  const front = new OpenAIFront(own);
  const fastify = instance as FastifyInstanceLike;
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', (_request, _payload, done) => done(null));
  const handler = async (
    request: { raw: NodeRequestLike },
    reply: FastifyReplyLike,
  ): Promise<void> => {
    reply.hijack();
    await serve(front, request.raw, reply.raw);
  };
  const routes = new Set([
    '/v1/models',
    ...COMPLETION_ROUTES,
    ...((options?.routes as string[] | undefined) ?? []),
  ]);
  for (const url of routes) fastify.route({ method: METHODS, url, handler });
}
