/**
 * `OpenAIFront`: the routes of an OpenAI-compatible service over a `Router`, independent of any
 * framework — a request in (`FrontCall`), an answer out (`FrontAnswer`).
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';
import type { SelectRequest } from '../policies/policy.js';
import { clip, ForwardedCall, type OutgoingBody } from './forwarded-call.js';
import { forwardedHeaders } from './forwarded-headers.js';
import { errorAnswer, type FrontAnswer, type FrontCall, jsonAnswer } from './front-answer.js';
import {
  COMPLETION_ROUTES,
  type ResolvedOpenAIHandlerOptions,
  resolveOpenAIHandlerOptions,
} from './openai-handler-options.js';
import { openAIRequest } from './openai-request.js';

const decoder = new TextDecoder();
const encoder = new TextEncoder();
const USAGE_OPTION = encoder.encode('"stream_options":{"include_usage":true},');
const COMPLETIONS: ReadonlySet<string> = new Set(COMPLETION_ROUTES);

/**
 * @internal Serves `GET /v1/models` and the forwarded POST routes; anything else is a 404 (or a
 * 405 for a known path with the wrong method), every error in OpenAI's shape.
 */
export class OpenAIFront {
  readonly #o: ResolvedOpenAIHandlerOptions;
  readonly #routes: ReadonlySet<string>;
  readonly #created = Math.floor(Date.now() / 1000);

  /** @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option. */
  constructor(options: unknown) {
    this.#o = resolveOpenAIHandlerOptions(options);
    this.#routes = new Set([...COMPLETION_ROUTES, ...this.#o.routes]);
    try {
      this.#o.router.start();
    } catch (error) {
      // A closed router answers every request with a 503; anything else is a real error.
      if (!FleetRouteError.is(error, 'CLOSED')) throw error;
    }
  }

  /** Whether this front serves `path` (with some method): adapters pass other paths on. */
  serves(path: string): boolean {
    return path === '/v1/models' || this.#routes.has(path);
  }

  /** @returns the answer (never rejects). */
  async handle(call: FrontCall): Promise<FrontAnswer> {
    const { method, path } = call;
    if (path === '/v1/models') {
      if (method !== 'GET' && method !== 'HEAD') return notAllowed(method, path, 'GET');
      return this.#models();
    }
    if (!this.#routes.has(path))
      return errorAnswer(404, `Unknown request URL: ${clip(method)} ${clip(path)}`, 'unknown_url');
    if (method !== 'POST') return notAllowed(method, path, 'POST');
    try {
      return await this.#forward(call, path);
    } catch (error) {
      const detail = error instanceof Error ? error.message : String(error);
      return errorAnswer(
        500,
        `The request could not be handled: ${clip(detail)}`,
        'internal_error',
      );
    }
  }

  #models(): FrontAnswer {
    const data = this.#o.router.registry
      .getModels()
      .map((id) => ({ id, object: 'model', created: this.#created, owned_by: 'fleetroute' }));
    return jsonAnswer(200, { object: 'list', data });
  }

  async #forward(call: FrontCall, path: string): Promise<FrontAnswer> {
    const encoding = header(call.headers, 'content-encoding');
    if (encoding !== undefined && encoding.toLowerCase() !== 'identity')
      return errorAnswer(
        415,
        `Request bodies in ${clip(encoding)} are not accepted.`,
        'unsupported_media_type',
      );
    let raw: Uint8Array | undefined;
    let body: unknown;
    if (call.parsed !== undefined) {
      body = call.parsed;
    } else {
      const declared = Number(header(call.headers, 'content-length') ?? 0);
      if (declared > this.#o.maxBodyBytes) return tooLarge(this.#o.maxBodyBytes);
      raw = await call.readBody(this.#o.maxBodyBytes);
      if (raw === undefined) return tooLarge(this.#o.maxBodyBytes);
      try {
        body = JSON.parse(decoder.decode(raw));
      } catch (error) {
        const detail = error instanceof Error ? error.message : 'not JSON';
        return errorAnswer(
          400,
          `The request body is not valid JSON: ${clip(detail)}`,
          'invalid_json',
        );
      }
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return errorAnswer(400, 'The request body must be a JSON object.', 'invalid_json');
    let select: SelectRequest;
    try {
      select = openAIRequest(body, call.headers, this.#o.request);
    } catch (error) {
      if (!FleetRouteError.is(error, 'INVALID_ARGUMENT')) throw error;
      return errorAnswer(400, error.message, 'invalid_request');
    }
    const outgoing = this.#outgoing(path, body as Record<string, unknown>, raw);
    const headers = forwardedHeaders(call.headers, this.#o.forwardHeaders);
    return new ForwardedCall(
      this.#o,
      path,
      select,
      outgoing,
      headers,
      call.signal,
      call.abort,
      COMPLETIONS.has(path) && this.#disaggregated(select.model),
    ).run();
  }

  /**
   * Whether `model`'s requests run disaggregated: the registry holds a prefill worker and a
   * decode worker for it (in any state). Its regular workers, if any, then serve none of them.
   * O(1) (cached lists).
   */
  #disaggregated(model: string | undefined): boolean {
    const registry = this.#o.router.registry;
    return (
      registry.getByModel(model, 'prefill').length > 0 &&
      registry.getByModel(model, 'decode').length > 0
    );
  }

  /**
   * The body the worker gets: the client's bytes as they came, unless a streamed completion must
   * ask for usage (then `stream_options.include_usage` is added, by splicing the bytes when the
   * client sent no `stream_options`).
   */
  #outgoing(
    path: string,
    body: Record<string, unknown>,
    raw: Uint8Array | undefined,
  ): OutgoingBody {
    const options = body.stream_options;
    const asked =
      typeof options === 'object' &&
      options !== null &&
      (options as { include_usage?: unknown }).include_usage === true;
    if (body.stream !== true || asked || !this.#o.streamUsage || !COMPLETIONS.has(path))
      return { value: body, bytes: raw ?? encoder.encode(JSON.stringify(body)), stripUsage: false };
    const value = {
      ...body,
      stream_options: {
        ...(typeof options === 'object' && options !== null ? options : {}),
        include_usage: true,
      },
    };
    const open = raw === undefined || options !== undefined ? -1 : raw.indexOf(0x7b);
    if (open < 0) return { value, bytes: encoder.encode(JSON.stringify(value)), stripUsage: true };
    // `{` + the option + the client's members (there is one at least: "stream").
    const bytes = new Uint8Array(raw!.length + USAGE_OPTION.length);
    bytes.set(raw!.subarray(0, open + 1), 0);
    bytes.set(USAGE_OPTION, open + 1);
    bytes.set(raw!.subarray(open + 1), open + 1 + USAGE_OPTION.length);
    return { value, bytes, stripUsage: true };
  }
}

function notAllowed(method: string, path: string, allow: string): FrontAnswer {
  return errorAnswer(
    405,
    `Method ${clip(method)} is not allowed on ${clip(path)}.`,
    'method_not_allowed',
    {
      allow,
    },
  );
}

function tooLarge(limit: number): FrontAnswer {
  return errorAnswer(413, `The request body is larger than ${limit} bytes.`, 'request_too_large', {
    connection: 'close',
  });
}

function header(headers: FrontCall['headers'], name: string): string | undefined {
  const value = headers instanceof Headers ? headers.get(name) : headers[name];
  if (typeof value === 'string') return value;
  return Array.isArray(value) && typeof value[0] === 'string' ? value[0] : undefined;
}
