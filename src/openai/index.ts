/**
 * `fleetroute/openai`: an OpenAI-compatible front over a `Router` — a fetch-standard handler,
 * adapters for Node's `http`, Express and Fastify, and `openAIRequest`, the reading of a request
 * that the router routes on.
 *
 * @module
 */
export { createOpenAIHandler, type OpenAIHandler } from './create-openai-handler.js';
export type { DisaggregationOptions } from './disaggregation-options.js';
export { openAIFastify } from './fastify-plugin.js';
export {
  createOpenAINodeHandler,
  type NodeRequestLike,
  type NodeResponseLike,
  type OpenAIMiddleware,
  type OpenAINodeHandler,
  openAIExpress,
} from './node-handler.js';
export type {
  OpenAIFetch,
  OpenAIHandlerOptions,
  RewriteContext,
} from './openai-handler-options.js';
export {
  type OpenAIRequestOptions,
  openAIRequest,
  PRIORITY_HEADER,
  type ResolvedOpenAIRequestOptions,
  resolveOpenAIRequestOptions,
  TENANT_HEADER,
} from './openai-request.js';
