/**
 * A stand-in for a vLLM engine's OpenAI server, over a real socket on 127.0.0.1: `/health`,
 * `/metrics` (vLLM's names and `process_start_time_seconds`), `/v1/models`, and
 * `/v1/chat/completions`, `/v1/completions` (and any other POST path) answered as vLLM does —
 * JSON, or server-sent events on `"stream": true` with the final usage chunk on
 * `stream_options.include_usage`. It records what it was sent, honours backpressure, and can be
 * told to fail, die mid-stream, stop and restart on the same port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** What the engine does with the next requests (a behaviour stays until replaced). */
export type EngineBehaviour =
  /** Answers normally. */
  | { readonly kind: 'ok' }
  /** Answers `status` with an OpenAI error body (and a `Retry-After`, when given). */
  | { readonly kind: 'status'; readonly status: number; readonly retryAfter?: string }
  /** Streams `chunks` output chunks, then destroys the connection. */
  | { readonly kind: 'die-mid-stream'; readonly chunks: number }
  /** Destroys the connection without answering. */
  | { readonly kind: 'reset' }
  /** Never answers (until the client gives up or the engine stops). */
  | { readonly kind: 'hang' };

export interface StandInEngineOptions {
  /** The model it serves. @defaultValue 'stand-in/llama-3-8b' */
  readonly model?: string;
  /** The port to listen on (0: any free port). */
  readonly port?: number;
  /** Requests without `Authorization: Bearer <apiKey>` get a 401 (health and metrics too). */
  readonly apiKey?: string;
  /** Output chunks when the request names no `max_tokens`. @defaultValue 8 */
  readonly chunks?: number;
  /** Delay before the first output chunk, ms. @defaultValue 0 */
  readonly firstChunkDelayMs?: number;
  /** Delay between output chunks, ms (0: the next turn of the event loop). @defaultValue 0 */
  readonly chunkDelayMs?: number;
  /** The text of output chunk `i`. @defaultValue `tok${i} ` */
  readonly chunkText?: (i: number) => string;
  /** Awaited before the first output chunk of each streamed answer (after the role chunk). */
  readonly beforeOutput?: () => Promise<void>;
  /**
   * What `/metrics` reports as `vllm:num_requests_waiting`, read at each scrape (an engine whose
   * own queue is full reports saturation). @defaultValue 0
   */
  readonly waitingRequests?: () => number;
}

/** One request the engine received. */
export interface EngineRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  /** The parsed JSON body of a POST (`undefined` for other methods or a body that is not JSON). */
  readonly body: Record<string, unknown> | undefined;
}

export interface StandInEngine {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  readonly model: string;
  /** Completion requests received (POSTs), in order. */
  readonly requests: EngineRequest[];
  /** Every request received, probes and scrapes included. */
  readonly all: EngineRequest[];
  /** Completion requests being answered now. */
  readonly inFlight: number;
  /** Completion answers that ended because the client went away before the end. */
  readonly abandoned: number;
  /** Output chunks written so far, over every answer. */
  readonly sent: number;
  /** When each abandoned answer's connection closed (`performance.now()`), in order. */
  readonly abandonedAt: readonly number[];
  /** `process_start_time_seconds` as `/metrics` reports it (changes on restart). */
  readonly startedAt: number;
  /** Sets what the engine does from now on. */
  behave(behaviour: EngineBehaviour): void;
  /** Stops listening and destroys every connection (an engine that died). */
  stop(): Promise<void>;
  /** Listens again on the same port, with a new start time (an engine restarted). */
  restart(): Promise<void>;
  /** Resolves when `count` completion requests have arrived. */
  received(count: number): Promise<void>;
}

const MAX_BODY_BYTES = 256 * 1024 * 1024;

/** Starts a stand-in engine; `stop()` it at the end of the test. */
export async function startStandInEngine(
  options: StandInEngineOptions = {},
): Promise<StandInEngine> {
  const model = options.model ?? 'stand-in/llama-3-8b';
  const text = options.chunkText ?? ((i: number) => `tok${i} `);
  let behaviour: EngineBehaviour = { kind: 'ok' };
  let server: Server | undefined;
  let port = options.port ?? 0;
  let startedAt = 0;
  let inFlight = 0;
  let abandoned = 0;
  let sent = 0;
  const abandonedAt: number[] = [];
  const sockets = new Set<Socket>();
  const requests: EngineRequest[] = [];
  const all: EngineRequest[] = [];
  const waiters: { count: number; resolve: () => void }[] = [];

  const onRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0]!;
    void readJson(req).then((body) => {
      const seen: EngineRequest = { method: req.method ?? 'GET', path, headers: req.headers, body };
      all.push(seen);
      if (options.apiKey !== undefined && req.headers.authorization !== `Bearer ${options.apiKey}`)
        return sendJson(res, 401, errorBody('Unauthorized', 'invalid_api_key'));
      if (req.method === 'GET' && path === '/health') return void res.end();
      if (req.method === 'GET' && path === '/metrics') {
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        const waiting = options.waitingRequests?.() ?? 0;
        return void res.end(metricsText(model, inFlight, startedAt, waiting));
      }
      if (req.method === 'GET' && path === '/v1/models') {
        return sendJson(res, 200, {
          object: 'list',
          data: [{ id: model, object: 'model', created: 0, owned_by: 'vllm' }],
        });
      }
      if (req.method !== 'POST') return sendJson(res, 404, errorBody('Not Found', 'not_found'));
      requests.push(seen);
      for (const w of [...waiters]) {
        if (requests.length >= w.count) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
      answer(req, res, path, body ?? {});
    });
  };

  const answer = (
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    body: Record<string, unknown>,
  ): void => {
    const b = behaviour;
    if (b.kind === 'reset') return void req.socket.destroy();
    if (b.kind === 'hang') return;
    if (b.kind === 'status') {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (b.retryAfter !== undefined) headers['retry-after'] = b.retryAfter;
      res.writeHead(b.status, headers);
      return void res.end(JSON.stringify(errorBody(`stand-in status ${b.status}`, 'stand_in')));
    }
    const chat = path.endsWith('/chat/completions');
    const n =
      typeof body.max_tokens === 'number'
        ? body.max_tokens
        : typeof body.max_completion_tokens === 'number'
          ? body.max_completion_tokens
          : (options.chunks ?? 8);
    const promptTokens = Math.ceil(JSON.stringify(body.messages ?? body.prompt ?? '').length / 4);
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: n,
      total_tokens: promptTokens + n,
    };
    const id = `cmpl-${Math.random().toString(36).slice(2)}`;
    const created = Math.floor(Date.now() / 1000);
    const base = { id, object: chat ? 'chat.completion' : 'text_completion', created, model };
    inFlight++;
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      inFlight--;
    };
    res.on('close', () => {
      if (!res.writableFinished) {
        abandoned++;
        abandonedAt.push(performance.now());
      }
      end();
    });
    if (body.stream !== true) {
      const all = Array.from({ length: n }, (_, i) => text(i)).join('');
      const choice = chat
        ? { index: 0, message: { role: 'assistant', content: all }, finish_reason: 'length' }
        : { index: 0, text: all, logprobs: null, finish_reason: 'length' };
      setTimeout(
        () => sendJson(res, 200, { ...base, choices: [choice], usage }),
        options.firstChunkDelayMs ?? 0,
      );
      return;
    }
    const includeUsage =
      typeof body.stream_options === 'object' &&
      body.stream_options !== null &&
      (body.stream_options as { include_usage?: unknown }).include_usage === true;
    const object = chat ? 'chat.completion.chunk' : 'text_completion';
    const event = (choices: unknown[], extra: object = {}): string =>
      `data: ${JSON.stringify({ ...base, object, choices, ...extra })}\n\n`;
    const piece = (i: number): unknown =>
      chat
        ? { index: 0, delta: { content: text(i) }, logprobs: null, finish_reason: null }
        : { index: 0, text: text(i), logprobs: null, finish_reason: null };
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    if (chat)
      res.write(
        event([
          {
            index: 0,
            delta: { role: 'assistant', content: '' },
            logprobs: null,
            finish_reason: null,
          },
        ]),
      );
    const dieAfter = b.kind === 'die-mid-stream' ? b.chunks : Number.POSITIVE_INFINITY;
    let i = 0;
    const delay = options.chunkDelayMs ?? 0;
    const next = (): void => {
      if (res.destroyed) return;
      if (i >= dieAfter) return void req.socket.destroy();
      if (i < n) {
        const more = res.write(event([piece(i)]));
        i++;
        sent++;
        if (!more) return void res.once('drain', schedule);
        schedule();
        return;
      }
      const last = chat
        ? { index: 0, delta: { content: '' }, logprobs: null, finish_reason: 'length' }
        : { index: 0, text: '', logprobs: null, finish_reason: 'length' };
      res.write(event([last]));
      if (includeUsage) res.write(event([], { usage }));
      res.end('data: [DONE]\n\n');
    };
    const schedule = (): void => {
      if (delay > 0) setTimeout(next, delay);
      else setImmediate(next);
    };
    const before = options.beforeOutput;
    setTimeout(() => {
      if (before === undefined) next();
      else void before().then(next);
    }, options.firstChunkDelayMs ?? 0);
  };

  const listen = async (): Promise<void> => {
    startedAt = Date.now() / 1000;
    server = createServer(onRequest);
    server.on('connection', (socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(port, '127.0.0.1', () => resolve());
    });
    port = (server.address() as AddressInfo).port;
  };

  await listen();
  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    get port() {
      return port;
    },
    model,
    requests,
    all,
    get inFlight() {
      return inFlight;
    },
    get abandoned() {
      return abandoned;
    },
    get sent() {
      return sent;
    },
    abandonedAt,
    get startedAt() {
      return startedAt;
    },
    behave(next) {
      behaviour = next;
    },
    async stop() {
      const s = server;
      server = undefined;
      if (s === undefined) return;
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => s.close(() => resolve()));
    },
    async restart() {
      if (server !== undefined) return;
      await listen();
    },
    received(count) {
      if (requests.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
  };
}

function metricsText(model: string, running: number, startedAt: number, waiting: number): string {
  const labels = `{model_name="${model}"}`;
  return [
    '# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.',
    '# TYPE process_start_time_seconds gauge',
    `process_start_time_seconds ${startedAt}`,
    '# TYPE vllm:num_requests_running gauge',
    `vllm:num_requests_running${labels} ${running}.0`,
    '# TYPE vllm:num_requests_waiting gauge',
    `vllm:num_requests_waiting${labels} ${waiting}.0`,
    '# TYPE vllm:kv_cache_usage_perc gauge',
    `vllm:kv_cache_usage_perc${labels} ${Math.min(running / 64, 1)}`,
    '',
  ].join('\n');
}

function errorBody(message: string, code: string): object {
  return { error: { message, type: 'invalid_request_error', param: null, code } };
}

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(value));
}

/** The body as JSON, read to the end (an engine reads what it is sent); `undefined` if not JSON. */
async function readJson(req: IncomingMessage): Promise<Record<string, unknown> | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) chunks.push(chunk);
    }
  } catch {
    return undefined;
  }
  if (chunks.length === 0) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    return typeof value === 'object' && value !== null
      ? (value as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}
