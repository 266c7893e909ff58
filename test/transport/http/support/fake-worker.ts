/**
 * Real HTTP servers on 127.0.0.1 (OS-chosen port) that play a vLLM or SGLang worker, or misbehave
 * on purpose. Every server records the requests it saw and tracks its sockets, so `close()`
 * leaves no handle open even when a response was never sent.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/** Reads a fixture from `test/transport/http/fixtures/`. */
export function fixture(name: string): string {
  return readFileSync(new URL(`../fixtures/${name}`, import.meta.url), 'utf8');
}

/**
 * A fixture as a worker would serve it: for a `.jsonc` fixture (JSON with comments), the `//`
 * lines (its header, which says what it was built from) are dropped; Prometheus fixtures carry
 * their header as `#` comments, which are part of a valid body.
 */
export function fixtureBody(name: string): string {
  const text = fixture(name);
  if (!name.endsWith('.jsonc')) return text;
  return text
    .split('\n')
    .filter((line) => !line.startsWith('//'))
    .join('\n');
}

/** What a route does with a request. */
export type Route = (request: IncomingMessage, response: ServerResponse) => void;

export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly authorization: string | undefined;
  readonly accept: string | undefined;
}

export interface FakeWorker {
  /** `http://127.0.0.1:<port>`. */
  readonly url: string;
  readonly port: number;
  /** Requests received, in order. */
  readonly seen: SeenRequest[];
  /** Replaces the route of `path` (missing routes answer 404). */
  route(path: string, handler: Route): void;
  /** Sockets currently open on the server side. */
  openSockets(): number;
  /** Connections accepted since the server started. */
  connections(): number;
  /** Resolves once `count` sockets have been closed (by either side) since the server started. */
  socketsClosed(count: number): Promise<void>;
  /** Destroys every socket and closes the server. */
  close(): Promise<void>;
}

/** Answers `status` with `body` and a content type. */
export function reply(status: number, body: string, contentType = 'text/plain'): Route {
  return (_request, response) => {
    response.writeHead(status, { 'content-type': contentType });
    response.end(body);
  };
}

/** Answers JSON. */
export function json(body: unknown, status = 200): Route {
  return reply(status, JSON.stringify(body), 'application/json');
}

/** Never answers (the request hangs until the client gives up or the server closes). */
export const hang: Route = () => {};

/** Destroys the connection without answering (the client sees a reset or "socket hang up"). */
export const reset: Route = (request) => {
  request.socket.destroy();
};

/** Sends the headers and part of the body, then never finishes it. */
export function stall(firstChunk: string): Route {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.write(firstChunk);
  };
}

/** Streams `totalBytes` of metric-like text without a content-length. */
export function huge(totalBytes: number): Route {
  return (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    const line = 'vllm:num_requests_running{model_name="m"} 1.0\n';
    const chunk = line.repeat(Math.ceil(65_536 / line.length));
    let sent = 0;
    const pump = (): void => {
      while (sent < totalBytes && !response.destroyed) {
        sent += chunk.length;
        if (!response.write(chunk)) {
          response.once('drain', pump);
          return;
        }
      }
      if (!response.destroyed) response.end();
    };
    pump();
  };
}

/** A vLLM-like worker: `/health` 200 (empty body), `/metrics` and `/v1/models`. */
export function vllmRoutes(metrics = fixture('vllm-v1.txt')): Record<string, Route> {
  return {
    '/health': reply(200, ''),
    '/metrics': reply(200, metrics, 'text/plain; version=0.0.4; charset=utf-8'),
    '/v1/models': json({
      object: 'list',
      data: [
        {
          id: 'meta-llama/Llama-3.1-8B-Instruct',
          object: 'model',
          created: 1754118300,
          owned_by: 'vllm',
          root: 'meta-llama/Llama-3.1-8B-Instruct',
          parent: null,
          max_model_len: 131072,
        },
        {
          id: 'sql-lora',
          object: 'model',
          created: 1754118300,
          owned_by: 'vllm',
          root: '/adapters/sql-lora',
          parent: 'meta-llama/Llama-3.1-8B-Instruct',
        },
      ],
    }),
  };
}

/** An SGLang-like worker. */
export function sglangRoutes(metrics = fixture('sglang.txt')): Record<string, Route> {
  return {
    '/health': reply(200, ''),
    '/metrics': reply(200, metrics, 'text/plain; version=0.0.4; charset=utf-8'),
    '/v1/models': json({
      object: 'list',
      data: [
        {
          id: 'Qwen/Qwen2.5-7B-Instruct',
          object: 'model',
          created: 1754118300,
          owned_by: 'sglang',
          root: 'Qwen/Qwen2.5-7B-Instruct',
          max_model_len: 32768,
        },
      ],
    }),
  };
}

/** Starts a fake worker with `routes`. */
export async function startFakeWorker(routes: Record<string, Route> = {}): Promise<FakeWorker> {
  const table = new Map(Object.entries(routes));
  const seen: SeenRequest[] = [];
  const sockets = new Set<Socket>();
  let closedCount = 0;
  let accepted = 0;
  const closeWaiters: { count: number; resolve: () => void }[] = [];
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? '/').split('?')[0]!;
    seen.push({
      method: request.method ?? '',
      path,
      authorization: request.headers.authorization,
      accept: request.headers.accept,
    });
    const handler = table.get(path);
    if (handler === undefined) reply(404, 'not found')(request, response);
    else handler(request, response);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    accepted++;
    socket.on('close', () => {
      sockets.delete(socket);
      closedCount++;
      for (const waiter of closeWaiters.splice(0)) {
        if (closedCount >= waiter.count) waiter.resolve();
        else closeWaiters.push(waiter);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    seen,
    route: (path, handler) => {
      table.set(path, handler);
    },
    openSockets: () => sockets.size,
    connections: () => accepted,
    socketsClosed: (count) =>
      closedCount >= count
        ? Promise.resolve()
        : new Promise<void>((resolve) => closeWaiters.push({ count, resolve })),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
