/**
 * Placeholder of `openAIRequest` (its full version lands with its own tests).
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import type { SelectRequest } from '../policies/policy.js';

/** Options of {@link openAIRequest}. @public */
export interface OpenAIRequestOptions {
  /** A request header that carries the routing key. @defaultValue none */
  readonly routingKeyHeader?: string;
}

/** An OpenAI request body → a `SelectRequest`. @public */
export function openAIRequest(
  body: unknown,
  _headers?: Headers | Readonly<Record<string, string | readonly string[] | undefined>>,
  _options?: OpenAIRequestOptions,
): SelectRequest {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    throw invalidArgument('body must be a JSON object');
  const b = body as Record<string, unknown>;
  if (b.model !== undefined && typeof b.model !== 'string')
    throw invalidArgument('model must be a string');
  let text = '';
  if (typeof b.prompt === 'string') text = b.prompt;
  else if (Array.isArray(b.messages))
    for (const m of b.messages as { role?: unknown; content?: unknown }[])
      text += `${String(m?.role)}: ${typeof m?.content === 'string' ? m.content : JSON.stringify(m?.content)}\n`;
  return { ...(typeof b.model === 'string' ? { model: b.model } : {}), text };
}
