/**
 * `openAIRequest`: an OpenAI request body turned into the `SelectRequest` the policies route on.
 *
 * @module
 */
import type { RequestHeaders } from '../core/headers.js';
import { custom, integer, OptionTable } from '../core/option-table.js';
import { fail, readString } from '../core/options.js';
import { ROUTING_KEY_HEADER, type SelectRequest } from '../policies/policy.js';
import { MAX_MODEL_ID_LENGTH } from '../workers/worker-spec.js';
import { type PromptInput, readPrompt } from './prompt-input.js';
import {
  policyHeadersOf,
  priorityOf,
  readFieldName,
  readHeaderName,
  readHeaderNames,
  routingKeyOf,
} from './request-headers.js';
import { chatRoutingText, isObject } from './routing-text.js';

/**
 * Options of {@link openAIRequest}.
 *
 * @public
 */
export interface OpenAIRequestOptions {
  /**
   * Longest routing text, in UTF-16 code units; the text is cut there (one unit sooner rather
   * than through a surrogate pair), and nothing past it is built: a part past the cap is not
   * digested. 0: no text. The default is the longest key `cache_aware`'s tree reads (1,048,576
   * units, past which it ignores a key's rest), so the cut never changes a decision.
   * Cost: building the text is linear in the body up to this many characters. @defaultValue 1048576
   */
  readonly maxTextChars?: number;
  /**
   * Most token ids read from a completions `prompt` (the first ones). 0: no tokens. The default
   * is the longest key `cache_aware`'s tree reads, and more than its event mode or `prefix_hash`
   * ever hash. Cost: one copy of this many ids at most. @defaultValue 1048576
   */
  readonly maxTokens?: number;
  /**
   * A request header whose value is the routing key (`'x-session-id'`), case-insensitive; wins
   * over `routingKeyField`. @defaultValue undefined (no header is read)
   */
  readonly routingKeyHeader?: string;
  /**
   * A top-level body field whose string value is the routing key (`'user'`), when the header
   * gives none. @defaultValue undefined (no field is read)
   */
  readonly routingKeyField?: string;
  /**
   * Longest routing key passed as it is (32 … 65,536 characters); a longer one is replaced by
   * `#` and the 16 hex digits of its digest, so sessions stay apart and a policy that keeps keys
   * (`manual`) keeps at most this much per key. @defaultValue 256
   */
  readonly maxRoutingKeyLength?: number;
  /**
   * The request headers passed to the policies as `SelectRequest.headers` (case-insensitive, at
   * most 64); no other header reaches them. Add `'x-fleetroute-target-worker'` only for clients
   * allowed to pick a worker, and `'authorization'` or `'cookie'` only for policies that key on
   * them. A value over 8,192 characters is left out.
   * @defaultValue ['x-fleetroute-routing-key']
   */
  readonly policyHeaders?: readonly string[];
  /**
   * A request header whose value is the request's priority for the router's admission control
   * (`SelectRequest.priority`: an integer in ±1,000,000, higher first); wins over `priorityField`.
   * A value that is not such an integer is answered 400. Let only trusted clients set it (strip it
   * at your gateway otherwise); `false`: no header is read. @defaultValue 'x-fleetroute-priority'
   */
  readonly priorityHeader?: string | false;
  /**
   * A top-level body field whose integer value is the priority, when the header gives none. Not
   * `priority` when clients send vLLM's own field (lower first) in the body.
   * @defaultValue undefined (no field is read)
   */
  readonly priorityField?: string;
  /**
   * A request header whose value is the request's tenant for the admission's fairness
   * (`SelectRequest.tenant`); wins over `tenantField`. A value longer than 256 characters is
   * replaced by `#` and its digest; `false`: no header is read. @defaultValue 'x-fleetroute-tenant'
   */
  readonly tenantHeader?: string | false;
  /**
   * A top-level body field whose string value is the tenant (`'user'`), when the header gives
   * none. @defaultValue undefined (no field is read)
   */
  readonly tenantField?: string;
}

/**
 * {@link OpenAIRequestOptions} with every default filled in: from
 * {@link resolveOpenAIRequestOptions}, for repeated calls of {@link openAIRequest}. Header names
 * are in lower case.
 *
 * @public
 */
export interface ResolvedOpenAIRequestOptions {
  readonly maxTextChars: number;
  readonly maxTokens: number;
  readonly routingKeyHeader: string | undefined;
  readonly routingKeyField: string | undefined;
  readonly maxRoutingKeyLength: number;
  readonly policyHeaders: readonly string[];
  readonly priorityHeader: string | undefined;
  readonly priorityField: string | undefined;
  readonly tenantHeader: string | undefined;
  readonly tenantField: string | undefined;
}

/** The header a request's priority is read from by default. @public */
export const PRIORITY_HEADER = 'x-fleetroute-priority';
/** The header a request's tenant is read from by default. @public */
export const TENANT_HEADER = 'x-fleetroute-tenant';

/** Longest routing text and token list by default: `cache_aware`'s tree reads no more. */
const MAX_ROUTING_UNITS = 1_048_576;

/** @internal The options of {@link openAIRequest}. */
export const OPENAI_REQUEST_OPTIONS = new OptionTable('options', 'OpenAIRequestOptions', {
  maxTextChars: integer(MAX_ROUTING_UNITS, 0, 2 ** 28),
  maxTokens: integer(MAX_ROUTING_UNITS, 0, 2 ** 28),
  routingKeyHeader: custom<string | undefined>(undefined, readHeaderName, 'undefined'),
  routingKeyField: custom<string | undefined>(undefined, readFieldName, 'undefined'),
  maxRoutingKeyLength: integer(256, 32, 65_536),
  policyHeaders: custom<readonly string[]>(
    Object.freeze([ROUTING_KEY_HEADER]),
    readHeaderNames,
    `['${ROUTING_KEY_HEADER}']`,
  ),
  priorityHeader: custom<string | undefined>(
    PRIORITY_HEADER,
    readHeaderOrOff,
    `'${PRIORITY_HEADER}'`,
  ),
  priorityField: custom<string | undefined>(undefined, readFieldName, 'undefined'),
  tenantHeader: custom<string | undefined>(TENANT_HEADER, readHeaderOrOff, `'${TENANT_HEADER}'`),
  tenantField: custom<string | undefined>(undefined, readFieldName, 'undefined'),
});

/** A header name, or `false` for none. */
function readHeaderOrOff(field: string, value: unknown): string | undefined {
  return value === false ? undefined : readHeaderName(field, value);
}

/** The objects {@link resolveOpenAIRequestOptions} returned: used as they are. */
const resolvedOptions = new WeakSet<object>();

function resolve(options: unknown): ResolvedOpenAIRequestOptions {
  const resolved = OPENAI_REQUEST_OPTIONS.read(options) as ResolvedOpenAIRequestOptions;
  resolvedOptions.add(resolved);
  return resolved;
}

const DEFAULTS = resolve(undefined);

/**
 * Validates `options` once, for repeated calls of {@link openAIRequest}: given the returned
 * object, a call reads no option (one set lookup).
 *
 * @returns the options with every default filled in, frozen.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option, or an unknown
 *   one (`options.<name> must be …`).
 *
 * Cost: O(options), a few microseconds.
 * @public
 */
export function resolveOpenAIRequestOptions(
  options?: OpenAIRequestOptions | ResolvedOpenAIRequestOptions,
): ResolvedOpenAIRequestOptions {
  if (options === undefined) return DEFAULTS;
  return resolvedOptions.has(options)
    ? (options as ResolvedOpenAIRequestOptions)
    : resolve(options);
}

/** The request under construction (its fields set only when present). */
type Building = { -readonly [K in keyof SelectRequest]?: SelectRequest[K] } & PromptInput;

/**
 * Turns the parsed JSON body of an OpenAI request (`/v1/chat/completions`, `/v1/completions`, …)
 * into what a policy routes on:
 *
 * - `model`: the body's `model`;
 * - `text`: for a chat body (`messages`), its **routing text** — the `tools`, then every message
 *   (role, name, content parts, refusal, tool calls, tool results) in order, each non-text part
 *   as a short digest — built so that a conversation's text at one turn is a prefix of its text
 *   at the next, and `cache_aware` follows the session; for a completions body, its `prompt`
 *   (strings joined with `\n`);
 * - `tokens`: a `prompt` of token ids (a batch of them concatenated), as a `Uint32Array`;
 * - `routingKey`: from the `routingKeyHeader` header, else the `routingKeyField` body field;
 * - `headers`: the `policyHeaders` present, as a record (no other header reaches a policy);
 * - `priority` and `tenant`: from the `priorityHeader` / `tenantHeader` headers, else the
 *   `priorityField` / `tenantField` body fields (for the router's admission control).
 *
 * A field absent or `null` is left out; unknown fields are ignored; `messages` wins over
 * `prompt`. The exact text format, its limits and its costs are in the OpenAI front's docs page
 * (docs/openai.md).
 *
 * @example
 * ```ts
 * const options = resolveOpenAIRequestOptions({ routingKeyHeader: 'x-session-id' });
 * const request = openAIRequest(await req.json(), req.headers, options);
 * const worker = policy.select(registry.getByModel(request.model ?? ''), request);
 * ```
 *
 * @param body - the parsed JSON body.
 * @param headers - the request's headers (a `Headers` object or a record, as Node's `http`
 *   gives them); only the routing-key header and the allow-listed ones are read.
 * @param options - the options, or options from {@link resolveOpenAIRequestOptions} (cheaper).
 * @returns a new `SelectRequest`; it does not keep the body's arrays (tokens are copied).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` whose message names the field: the body is
 *   not a JSON object; `model` is not a non-empty well-formed string of at most 256 characters;
 *   `messages`, a message, a content part, a tool call or one of the strings read there has the
 *   wrong type; `prompt` has a wrong shape or a token id is not an integer in [0, 2³²); `tools` is
 *   not an array; a priority that is not an integer in ±1,000,000; a bad option.
 *
 * Emits nothing. Cost: linear in the part of the body it reads, and no more than the caps: the
 * text stops growing at `maxTextChars`, and what lies past it (an image's data, a deeply nested
 * part) is not read; the shapes of the messages are checked past the caps (a few type checks per
 * message and part). About 10 µs for a 50-message, 20 KB chat body of text (a third of its
 * `JSON.parse`), and 3–4 µs more per image, audio, file or unknown part (one digest each).
 * @public
 */
export function openAIRequest(
  body: unknown,
  headers?: RequestHeaders,
  options?: OpenAIRequestOptions | ResolvedOpenAIRequestOptions,
): SelectRequest {
  const o = options === undefined ? DEFAULTS : resolveOpenAIRequestOptions(options);
  if (!isObject(body)) fail('body', 'a JSON object', body);
  const request: Building = {};
  const model = body.model;
  if (model !== undefined && model !== null) {
    request.model = readString('model', model, MAX_MODEL_ID_LENGTH);
  }
  const messages = body.messages;
  if (messages !== undefined && messages !== null) {
    if (!Array.isArray(messages)) fail('messages', 'an array', messages);
    const text = chatRoutingText(body, messages, o.maxTextChars);
    if (text !== '') request.text = text;
  } else {
    const prompt = body.prompt;
    if (prompt !== undefined && prompt !== null) {
      readPrompt(prompt, o.maxTextChars, o.maxTokens, request);
    }
  }
  const key = routingKeyOf(
    body,
    headers,
    o.routingKeyHeader,
    o.routingKeyField,
    o.maxRoutingKeyLength,
  );
  if (key !== undefined) request.routingKey = key;
  const allowed = policyHeadersOf(headers, o.policyHeaders);
  if (allowed !== undefined) request.headers = allowed;
  const priority = priorityOf(body, headers, o.priorityHeader, o.priorityField);
  if (priority !== undefined) request.priority = priority;
  const tenant = routingKeyOf(body, headers, o.tenantHeader, o.tenantField, 256);
  if (tenant !== undefined) request.tenant = tenant;
  return request;
}
