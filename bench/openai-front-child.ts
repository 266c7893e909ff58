/**
 * The child processes of `bench/openai-front.ts`, one role each (the first argument):
 *
 * - `engine`: a minimal, fast vLLM-like SSE server on two loopback ports (two workers). A
 *   streamed chat request is answered with a role chunk, `max_tokens` content chunks, a final
 *   chunk, the usage chunk when `stream_options.include_usage` is set, and `data: [DONE]`; every
 *   event is prebuilt and written as fast as the socket takes it (waiting for `drain` when
 *   `write` says so).
 * - `front`: the OpenAI front (`createOpenAINodeHandler`) on a Node `http` server, over a started
 *   `Router` with both engine ports as ready workers (`health: false`, `loadPolling: false`,
 *   the default policy).
 * - `pipe`: the reference, a Node `http` server that reads the body, `fetch`es an engine port
 *   with it (alternating the two) and writes the answer's chunks to the client as they come,
 *   honouring backpressure: no routing, no watching.
 *
 * Each child tells its parent its ports over IPC, then answers `sample` messages with its CPU
 * time and the peaks of `process.memoryUsage()` (sampled every 10 ms) since the last reset. It
 * prints nothing on stdout (the runner reads the parent's last stdout line).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router, WorkerRegistry } from '../src/index.js';
import { createOpenAINodeHandler } from '../src/openai/index.js';

/** The model every engine serves and every request names. */
export const MODEL = 'bench-model';

/** What a child sends its parent. */
export type ChildMessage =
  | { readonly kind: 'ready'; readonly ports: readonly number[] }
  | ({ readonly kind: 'sample' } & ProcessSample);

/** What a parent sends a child. */
export interface SampleRequest {
  readonly kind: 'sample';
  /** Collect garbage and restart the peaks after this sample. */
  readonly reset: boolean;
}

/** A child's CPU time (µs, user + system, since it started) and memory peaks (bytes). */
export interface ProcessSample {
  readonly cpuUs: number;
  readonly peakRss: number;
  readonly peakHeapUsed: number;
  /** `external` (which includes `arrayBuffers`: socket and stream buffers). */
  readonly peakExternal: number;
}

// ---------------------------------------------------------------------------------------------
// Memory and CPU sampling

let peakRss = 0;
let peakHeapUsed = 0;
let peakExternal = 0;

function sampleMemory(): void {
  const m = process.memoryUsage();
  if (m.rss > peakRss) peakRss = m.rss;
  if (m.heapUsed > peakHeapUsed) peakHeapUsed = m.heapUsed;
  if (m.external > peakExternal) peakExternal = m.external;
}

function answerSamples(): void {
  setInterval(sampleMemory, 10).unref();
  process.on('message', (message: SampleRequest) => {
    if (message.kind !== 'sample') return;
    sampleMemory();
    const cpu = process.cpuUsage();
    const sample: ChildMessage = {
      kind: 'sample',
      cpuUs: cpu.user + cpu.system,
      peakRss,
      peakHeapUsed,
      peakExternal,
    };
    if (message.reset) {
      globalThis.gc?.();
      peakRss = peakHeapUsed = peakExternal = 0;
      sampleMemory();
    }
    process.send?.(sample);
  });
  // The parent gone: nothing left to serve.
  process.on('disconnect', () => process.exit(0));
}

async function listen(server: Server): Promise<number> {
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return (server.address() as AddressInfo).port;
}

function readBody(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    request.on('error', reject);
  });
}

// ---------------------------------------------------------------------------------------------
// The engine

const BASE = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_767_225_600 };

function event(value: unknown): Buffer {
  return Buffer.from(`data: ${JSON.stringify(value)}\n\n`);
}

function chunkEvent(delta: Record<string, unknown>, finish: string | null): Buffer {
  const choice = { index: 0, delta, logprobs: null, finish_reason: finish };
  return event({ ...BASE, model: MODEL, choices: [choice] });
}

const ROLE_EVENT = chunkEvent({ role: 'assistant', content: '' }, null);
/** Content events cycle through a few tokens, as a real answer's differ. */
const CONTENT_EVENTS = [' The', ' quick', ' brown', ' fox', ' jumps', ' over', ' it', '.'].map(
  (token) => chunkEvent({ content: token }, null),
);
const FINAL_EVENT = chunkEvent({}, 'length');
const DONE_EVENT = Buffer.from('data: [DONE]\n\n');

function usageEvent(completionTokens: number): Buffer {
  return event({
    ...BASE,
    model: MODEL,
    choices: [],
    usage: {
      prompt_tokens: 16,
      total_tokens: 16 + completionTokens,
      completion_tokens: completionTokens,
    },
  });
}

/** Streams one answer of `tokens` content chunks, as fast as the socket takes them. */
function streamAnswer(response: ServerResponse, tokens: number, usage: boolean): void {
  response.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const events = tokens + 3 + (usage ? 1 : 0);
  let next = 0;
  const eventAt = (i: number): Buffer => {
    if (i === 0) return ROLE_EVENT;
    if (i <= tokens) return CONTENT_EVENTS[(i - 1) % CONTENT_EVENTS.length]!;
    if (i === tokens + 1) return FINAL_EVENT;
    if (usage && i === tokens + 2) return usageEvent(tokens);
    return DONE_EVENT;
  };
  const write = (): void => {
    while (next < events - 1) {
      if (!response.write(eventAt(next++))) {
        response.once('drain', write);
        return;
      }
    }
    response.end(eventAt(next++));
  };
  write();
}

async function engineRequest(request: IncomingMessage, response: ServerResponse): Promise<void> {
  const body = JSON.parse((await readBody(request)).toString('utf8')) as {
    max_tokens?: number;
    stream_options?: { include_usage?: boolean };
  };
  const tokens = body.max_tokens ?? 16;
  streamAnswer(response, tokens, body.stream_options?.include_usage === true);
}

async function runEngine(): Promise<number[]> {
  const ports: number[] = [];
  for (let i = 0; i < 2; i++) {
    const server = createServer((request, response) => {
      engineRequest(request, response).catch(() => response.destroy());
    });
    ports.push(await listen(server));
  }
  return ports;
}

// ---------------------------------------------------------------------------------------------
// The proxies

async function runFront(enginePorts: readonly number[]): Promise<number[]> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const port of enginePorts)
    await registry.register({ url: `http://127.0.0.1:${port}`, models: [MODEL], runtime: 'vllm' });
  const router = new Router({
    registry,
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
  });
  const handler = createOpenAINodeHandler({ router });
  return [await listen(createServer((request, response) => void handler(request, response)))];
}

/** The simplest proxy that streams: read the body, fetch, write each chunk as it comes. */
async function pipeRequest(
  url: string,
  request: IncomingMessage,
  response: ServerResponse,
): Promise<void> {
  const body = await readBody(request);
  const upstream = await fetch(`${url}${request.url}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  response.writeHead(upstream.status, {
    'content-type': upstream.headers.get('content-type') ?? 'application/octet-stream',
  });
  const reader = upstream.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (!response.write(value)) await new Promise((resolve) => response.once('drain', resolve));
  }
  response.end();
}

async function runPipe(enginePorts: readonly number[]): Promise<number[]> {
  const urls = enginePorts.map((port) => `http://127.0.0.1:${port}`);
  let turn = 0;
  const server = createServer((request, response) => {
    const url = urls[turn++ % urls.length]!;
    pipeRequest(url, request, response).catch(() => response.destroy());
  });
  return [await listen(server)];
}

// ---------------------------------------------------------------------------------------------
// Entry

const role = process.argv[2];
const enginePorts = process.argv.slice(3).map(Number);
const roles: Record<string, () => Promise<number[]>> = {
  engine: runEngine,
  front: () => runFront(enginePorts),
  pipe: () => runPipe(enginePorts),
};
const run = role === undefined ? undefined : roles[role];
if (run !== undefined && process.send !== undefined) {
  answerSamples();
  const ports = await run();
  process.send({ kind: 'ready', ports } satisfies ChildMessage);
}
