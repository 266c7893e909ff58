/**
 * Stand-in prefill and decode engines over real HTTP on 127.0.0.1 that check what they receive
 * the way vLLM (NIXL) and SGLang (bootstrap) do, and answer like them:
 *
 * - vLLM prefill: wants `max_tokens` 1, `stream` false, no `stream_options`, the NIXL
 *   `kv_transfer_params` asking for a remote decode, and an `X-Request-Id`; answers a completion
 *   whose `kv_transfer_params` name its engine, blocks, host and port (kept in the ledger).
 * - vLLM decode: a body with `kv_transfer_params` must carry exactly the ones its prefill issued
 *   for the same `X-Request-Id`; answers streamed or not, as asked.
 * - SGLang prefill / decode: both want `bootstrap_host`, `bootstrap_port` and an integer
 *   `bootstrap_room`; the decode waits for the prefill of its room (same host and port) before it
 *   answers, as the engine waits for its KV cache.
 *
 * A check that fails is answered 400 with the reason, and recorded.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export type PdKind = 'vllm-prefill' | 'vllm-decode' | 'sglang-prefill' | 'sglang-decode';

/** One request as an engine saw it. */
export interface PdRequest {
  readonly path: string;
  readonly headers: IncomingMessage['headers'];
  /** The body's text, as sent. */
  readonly text: string;
  readonly body: Record<string, unknown>;
  /** `bootstrap_room` as written in the text (digits), when there is one. */
  readonly room: string | undefined;
  /** The connection closed before the answer ended (the router aborted it). */
  aborted: boolean;
  /** …and before its first byte was written. */
  abortedBeforeFirstByte: boolean;
  /** Bytes of the answer written so far. */
  written: number;
}

/** What the engines of one test share: issued transfer parameters, prefills by room. */
export class PdLedger {
  /** vLLM: `kv_transfer_params` issued by a prefill, by request id. */
  readonly issued = new Map<string, Record<string, unknown>>();
  /** SGLang: the prefills that arrived, by room: `host:port`. */
  readonly rooms = new Map<string, string>();
  readonly #waiting = new Map<string, Array<() => void>>();
  /** Checks that failed, on any engine. */
  readonly failures: string[] = [];

  arrived(room: string, at: string): void {
    this.rooms.set(room, at);
    for (const wake of this.#waiting.get(room) ?? []) wake();
    this.#waiting.delete(room);
  }

  /** Resolves when the prefill of `room` has arrived, or `false` if `signal` fires first. */
  waitFor(room: string, signal: AbortSignal): Promise<boolean> {
    if (this.rooms.has(room)) return Promise.resolve(true);
    return new Promise((resolve) => {
      const list = this.#waiting.get(room) ?? [];
      list.push(() => resolve(true));
      this.#waiting.set(room, list);
      signal.addEventListener('abort', () => resolve(false), { once: true });
    });
  }
}

export interface PdEngineOptions {
  readonly kind: PdKind;
  readonly ledger: PdLedger;
  /** Answer every request with this failure status instead. */
  readonly failWith?: number;
  /** Before the answer's first byte (after the checks): resolves when it may be written. */
  readonly hold?: () => Promise<void>;
  /** A streamed answer stops after its first token and waits for the connection to close. */
  readonly stallAfterFirst?: boolean;
  /** The prompt's tokens the answer streams. @defaultValue 3 */
  readonly tokens?: number;
  /**
   * A streamed answer writes this many bytes of SSE comments after its first token, as fast as
   * the reader takes them, before the rest.
   */
  readonly padding?: number;
}

export interface PdEngine {
  readonly url: string;
  readonly port: number;
  readonly requests: PdRequest[];
  /** Resolves with the next request this engine receives. */
  next(): Promise<PdRequest>;
  stop(): Promise<void>;
}

const ROOM = /"bootstrap_room":(\d{1,25})[,}]/;
const NIXL_PREFILL = {
  do_remote_decode: true,
  do_remote_prefill: false,
  remote_engine_id: null,
  remote_block_ids: null,
  remote_host: null,
  remote_port: null,
};

export async function startPdEngine(options: PdEngineOptions): Promise<PdEngine> {
  const requests: PdRequest[] = [];
  let waiters: Array<(request: PdRequest) => void> = [];
  let port = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const body = JSON.parse(text) as Record<string, unknown>;
      const request: PdRequest = {
        path: req.url ?? '',
        headers: req.headers,
        text,
        body,
        room: ROOM.exec(text)?.[1],
        aborted: false,
        abortedBeforeFirstByte: false,
        written: 0,
      };
      requests.push(request);
      for (const wake of waiters) wake(request);
      waiters = [];
      let wrote = false;
      const closed = new AbortController();
      res.on('close', () => {
        closed.abort();
        if (res.writableEnded) return;
        request.aborted = true;
        if (!wrote) request.abortedBeforeFirstByte = true;
      });
      const write = (data: string): boolean => {
        wrote = true;
        request.written += Buffer.byteLength(data);
        return res.write(data);
      };
      void answer(options, port, request, res, write, closed.signal).catch(() => res.destroy());
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    next: () => new Promise((resolve) => waiters.push(resolve)),
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function answer(
  o: PdEngineOptions,
  port: number,
  request: PdRequest,
  res: ServerResponse,
  write: (data: string) => boolean,
  closed: AbortSignal,
): Promise<void> {
  if (o.failWith !== undefined) {
    res.writeHead(o.failWith, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'stand-in failure', code: o.failWith } }));
    return;
  }
  const problem = check(o, port, request);
  if (problem !== undefined) {
    o.ledger.failures.push(`${o.kind}: ${problem}`);
    res.writeHead(400, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: problem, type: 'invalid_request_error' } }));
    return;
  }
  const { body, room } = request;
  if (o.kind === 'sglang-prefill')
    o.ledger.arrived(room!, `${body.bootstrap_host}:${body.bootstrap_port}`);
  if (o.kind === 'sglang-decode') {
    // The decode leg waits for its KV cache: its prefill must arrive (same room).
    if (!(await o.ledger.waitFor(room!, closed))) return;
    const at = o.ledger.rooms.get(room!);
    if (at !== `${body.bootstrap_host}:${body.bootstrap_port}`) {
      o.ledger.failures.push(`${o.kind}: prefill of room ${room} came with ${at}`);
      res.writeHead(400).end('{}');
      return;
    }
  }
  let params: Record<string, unknown> | undefined;
  if (o.kind === 'vllm-prefill') {
    params = {
      do_remote_prefill: true,
      do_remote_decode: false,
      remote_engine_id: `engine-${port}`,
      remote_block_ids: [port % 97, 2, 3],
      remote_host: '127.0.0.1',
      remote_port: port + 1,
      tp_size: 1,
    };
    o.ledger.issued.set(String(request.headers['x-request-id']), params);
  }
  await o.hold?.();
  if (closed.aborted) return;
  const chat = request.path === '/v1/chat/completions';
  const tokens = o.kind === 'vllm-prefill' ? 1 : (o.tokens ?? 3);
  const words = Array.from({ length: tokens }, (_, i) => `${o.kind.split('-')[1]}${i} `);
  if (body.stream === true) {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    for (const [i, word] of words.entries()) {
      if (i === 1 && o.stallAfterFirst === true) {
        await new Promise<void>((resolve) => closed.addEventListener('abort', () => resolve()));
        return;
      }
      const choice = chat ? { index: 0, delta: { content: word } } : { index: 0, text: word };
      write(
        `data: ${JSON.stringify({ id: 'x', object: chat ? 'chat.completion.chunk' : 'text_completion', choices: [choice] })}\n\n`,
      );
      if (i === 0 && o.padding !== undefined && !(await pad(o.padding, write, res, closed))) return;
    }
    write('data: [DONE]\n\n');
    res.end();
    return;
  }
  const text = words.join('');
  const choice = chat
    ? { index: 0, message: { role: 'assistant', content: text }, finish_reason: 'length' }
    : { index: 0, text, finish_reason: 'length' };
  res.writeHead(200, { 'content-type': 'application/json' });
  write(
    JSON.stringify({
      id: 'x',
      object: chat ? 'chat.completion' : 'text_completion',
      choices: [choice],
      usage: { prompt_tokens: 4, completion_tokens: tokens, total_tokens: 4 + tokens },
      ...(params === undefined ? {} : { kv_transfer_params: params }),
    }),
  );
  res.end();
}

/** What is wrong with a request for this kind of engine, if anything. */
function check(o: PdEngineOptions, port: number, request: PdRequest): string | undefined {
  const { body, headers, room } = request;
  const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
  switch (o.kind) {
    case 'vllm-prefill':
      if (body.max_tokens !== 1) return `max_tokens is ${body.max_tokens}, not 1`;
      if ('max_completion_tokens' in body && body.max_completion_tokens !== 1)
        return 'max_completion_tokens is not 1';
      if (body.stream !== false) return 'stream is not false';
      if ('stream_options' in body) return 'stream_options was sent';
      if (!same(body.kv_transfer_params, NIXL_PREFILL))
        return 'kv_transfer_params are not the prefill ones';
      if (typeof headers['x-request-id'] !== 'string') return 'no x-request-id';
      return undefined;
    case 'vllm-decode': {
      if (body.kv_transfer_params === undefined) return undefined; // a local prefill
      const id = String(headers['x-request-id']);
      const issued = o.ledger.issued.get(id);
      if (issued === undefined) return `no prefill issued parameters for request ${id}`;
      if (!same(body.kv_transfer_params, issued))
        return 'kv_transfer_params differ from those issued';
      return undefined;
    }
    case 'sglang-prefill':
    case 'sglang-decode': {
      if (room === undefined) return 'no integer bootstrap_room';
      if (BigInt(room) > (1n << 63n) - 1n) return `bootstrap_room ${room} is 2^63 or more`;
      if (typeof body.bootstrap_host !== 'string') return 'no bootstrap_host';
      if (!Number.isInteger(body.bootstrap_port)) return 'no bootstrap_port';
      if (o.kind === 'sglang-prefill' && body.bootstrap_host !== '127.0.0.1')
        return `bootstrap_host ${body.bootstrap_host} is not this prefill engine's host`;
      void port;
      return undefined;
    }
  }
}

const PAD = `: ${'p'.repeat(65_530)}\n\n`;

/** Writes `bytes` of SSE comments, waiting for the reader; `false` if the connection closed. */
async function pad(
  bytes: number,
  write: (data: string) => boolean,
  res: ServerResponse,
  closed: AbortSignal,
): Promise<boolean> {
  for (let sent = 0; sent < bytes; sent += PAD.length) {
    if (closed.aborted) return false;
    if (write(PAD)) continue;
    await new Promise<void>((resolve) => {
      const go = (): void => {
        res.off('drain', go);
        closed.removeEventListener('abort', go);
        resolve();
      };
      res.on('drain', go);
      closed.addEventListener('abort', go);
    });
  }
  return !closed.aborted;
}
