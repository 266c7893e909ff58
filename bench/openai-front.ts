/**
 * What the OpenAI front costs against the simplest streaming proxy: streamed chat requests on
 * loopback, each answered with 200 SSE content chunks by a minimal vLLM-like engine, sent
 * through (a) `createOpenAINodeHandler` over a `Router` with two ready workers and (b) a "direct
 * pipe" (read the body, `fetch` the engine, write the answer's chunks as they come).
 *
 * Layout (2 cores): the engine, the front and the pipe each run in their own child process
 * (`bench/openai-front-child.ts`); this process is the client (`node:http`, keep-alive, a fixed
 * number of requests in flight, every answer read to its end). The front and the pipe are
 * measured in alternating rounds (A B B A …) in the same run, so machine noise hits both; only
 * one of them carries traffic at a time, and the other sits idle.
 *
 * Figures: time to first byte (from the request's creation to its first body byte) p50 and p99,
 * requests/s and chunks/s of each round, medians over rounds; the proxy process's CPU time per
 * request; and its sampled memory peaks for answers of 200 chunks against answers of 2,000.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { emit, fmt, median } from './harness.js';
import { type ChildMessage, MODEL, type ProcessSample } from './openai-front-child.js';

const CHILD = fileURLToPath(new URL('./openai-front-child.ts', import.meta.url));
/**
 * `FLEETROUTE_BENCH_PROFILE=front` (or `pipe`, `engine`, or a comma-separated list) writes that
 * child's CPU profile (`node --cpu-prof`) here, under `<role>/`.
 */
const PROFILE_DIR = 'scratch/openai-front-profiles';
const TOKENS = 200;
const LONG_TOKENS = 2_000;
const REQUESTS = 1_000;
const ROUNDS = 2;
const CONCURRENCIES = [16, 64] as const;
/** Requests per memory phase (at 64 in flight): four waves of long answers. */
const MEMORY_REQUESTS = 256;

type ProxyName = 'front' | 'pipe';

interface Child {
  readonly process: ChildProcess;
  readonly ports: readonly number[];
}

interface RoundResult {
  readonly ttfbP50: number;
  readonly ttfbP99: number;
  readonly requestsPerS: number;
  /** Proxy CPU time per request (µs). */
  readonly cpuUsPerRequest: number;
}

// ---------------------------------------------------------------------------------------------
// Child processes

async function startChild(role: string, args: readonly string[] = []): Promise<Child> {
  const profile = (process.env.FLEETROUTE_BENCH_PROFILE ?? '').split(',').includes(role);
  const child = fork(CHILD, [role, ...args], {
    execArgv: profile
      ? [...process.execArgv, '--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}/${role}`]
      : process.execArgv,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const ports = await new Promise<readonly number[]>((resolve, reject) => {
    child.once('message', (message: ChildMessage) => {
      if (message.kind === 'ready') resolve(message.ports);
    });
    child.once('exit', (code) => reject(new Error(`${role} exited with ${code}`)));
  });
  return { process: child, ports };
}

function sample(child: Child, reset: boolean): Promise<ProcessSample> {
  return new Promise((resolve) => {
    const onMessage = (message: ChildMessage): void => {
      if (message.kind !== 'sample') return;
      child.process.off('message', onMessage);
      resolve(message);
    };
    child.process.on('message', onMessage);
    child.process.send({ kind: 'sample', reset });
  });
}

// ---------------------------------------------------------------------------------------------
// The client

/** Request bodies as an OpenAI SDK sends them (no `stream_options`), each prompt its own. */
function bodies(count: number, tokens: number): Buffer[] {
  return Array.from({ length: count }, (_, i) =>
    Buffer.from(
      JSON.stringify({
        model: MODEL,
        messages: [
          { role: 'system', content: 'You are a helpful assistant.' },
          { role: 'user', content: `Request ${i}: tell me a story about a quick brown fox.` },
        ],
        stream: true,
        max_tokens: tokens,
      }),
    ),
  );
}

/** One request: ms from its creation to the first body byte, and the body's length. */
function send(agent: Agent, port: number, body: Buffer): Promise<{ ttfb: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const req = request(
      {
        agent,
        host: '127.0.0.1',
        port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { 'content-type': 'application/json', 'content-length': body.length },
      },
      (res) => {
        let ttfb = -1;
        let bytes = 0;
        res.on('data', (chunk: Buffer) => {
          if (ttfb < 0) ttfb = performance.now() - start;
          bytes += chunk.length;
        });
        res.on('end', () => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`));
          else resolve({ ttfb, bytes });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface Load {
  readonly ttfbs: number[];
  readonly ms: number;
  readonly bytes: Set<number>;
}

/** `requests` requests, `concurrency` in flight at every moment. */
async function load(
  port: number,
  payloads: readonly Buffer[],
  requests: number,
  concurrency: number,
): Promise<Load> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const ttfbs: number[] = [];
  const bytes = new Set<number>();
  let next = 0;
  const start = performance.now();
  const lane = async (): Promise<void> => {
    while (next < requests) {
      const i = next++;
      const answer = await send(agent, port, payloads[i % payloads.length]!);
      ttfbs.push(answer.ttfb);
      bytes.add(answer.bytes);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, lane));
  const ms = performance.now() - start;
  agent.destroy();
  return { ttfbs, ms, bytes };
}

function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Answer length per proxy: both must deliver the same bytes (the front cuts its usage chunk). */
const lengths = new Map<ProxyName, Set<number>>();

async function round(
  name: ProxyName,
  proxy: Child,
  payloads: readonly Buffer[],
  concurrency: number,
): Promise<RoundResult> {
  const before = await sample(proxy, false);
  const result = await load(proxy.ports[0]!, payloads, REQUESTS, concurrency);
  const after = await sample(proxy, false);
  const seen = lengths.get(name) ?? new Set<number>();
  for (const b of result.bytes) seen.add(b);
  lengths.set(name, seen);
  return {
    ttfbP50: percentile(result.ttfbs, 50),
    ttfbP99: percentile(result.ttfbs, 99),
    requestsPerS: (REQUESTS * 1000) / result.ms,
    cpuUsPerRequest: (after.cpuUs - before.cpuUs) / REQUESTS,
  };
}

/** Peaks of the proxy over `MEMORY_REQUESTS` answers of `tokens` chunks, 64 in flight. */
async function memory(proxy: Child, tokens: number): Promise<ProcessSample> {
  await sample(proxy, true);
  await load(proxy.ports[0]!, bodies(64, tokens), MEMORY_REQUESTS, 64);
  return sample(proxy, true);
}

// ---------------------------------------------------------------------------------------------
// Run

const MiB = 2 ** 20;

async function main(): Promise<void> {
  const loadBefore = loadavg()[0] ?? 0;
  const engine = await startChild('engine');
  const args = engine.ports.map(String);
  const proxies: Record<ProxyName, Child> = {
    front: await startChild('front', args),
    pipe: await startChild('pipe', args),
  };
  const payloads = bodies(REQUESTS, TOKENS);
  const rows: string[][] = [];
  const cpuRows: string[][] = [];
  for (const concurrency of CONCURRENCIES) {
    const results: Record<ProxyName, RoundResult[]> = { front: [], pipe: [] };
    // Warm-up (JIT, connection pools), not recorded.
    for (const name of ['front', 'pipe'] as const)
      await load(proxies[name].ports[0]!, payloads, 300, concurrency);
    for (let r = 0; r < ROUNDS; r++) {
      const order: ProxyName[] = r % 2 === 0 ? ['front', 'pipe'] : ['pipe', 'front'];
      for (const name of order)
        results[name].push(await round(name, proxies[name], payloads, concurrency));
    }
    const m = (name: ProxyName, key: keyof RoundResult): number =>
      median(results[name].map((x) => x[key]));
    for (const name of ['pipe', 'front'] as const) {
      rows.push([
        String(concurrency),
        name === 'front' ? 'front' : 'direct pipe',
        fmt(m(name, 'ttfbP50'), 2),
        fmt(m(name, 'ttfbP99'), 2),
        fmt(m(name, 'requestsPerS'), 0),
        fmt(m(name, 'requestsPerS') * TOKENS, 0),
        name === 'front' ? fmt(m('front', 'ttfbP50') - m('pipe', 'ttfbP50'), 2) : '',
        name === 'front' ? fmt(m('front', 'requestsPerS') / m('pipe', 'requestsPerS'), 3) : '',
      ]);
    }
    const cpu = (name: ProxyName): number => m(name, 'cpuUsPerRequest');
    cpuRows.push([
      String(concurrency),
      fmt(cpu('pipe'), 0),
      fmt(cpu('front'), 0),
      fmt(cpu('front') - cpu('pipe'), 0),
      fmt((cpu('front') - cpu('pipe')) / TOKENS, 2),
      fmt(cpu('front') / cpu('pipe'), 2),
    ]);
  }
  const memoryRows: string[][] = [];
  for (const name of ['pipe', 'front'] as const) {
    const short = await memory(proxies[name], TOKENS);
    const long = await memory(proxies[name], LONG_TOKENS);
    const mib = (bytes: number): string => fmt(bytes / MiB, 1);
    memoryRows.push([
      name === 'front' ? 'front' : 'direct pipe',
      `${mib(short.peakRss)} / ${mib(long.peakRss)}`,
      `${mib(short.peakHeapUsed)} / ${mib(long.peakHeapUsed)}`,
      `${mib(short.peakExternal)} / ${mib(long.peakExternal)}`,
      mib(long.peakRss - short.peakRss),
      mib(long.peakHeapUsed - short.peakHeapUsed),
    ]);
  }
  for (const child of [engine, proxies.front, proxies.pipe]) child.process.disconnect();
  const same =
    [...(lengths.get('front') ?? [])].join(',') === [...(lengths.get('pipe') ?? [])].join(',');
  emit({
    name: 'openai-front',
    tables: [
      {
        title: `Streamed chat requests through the front and a direct pipe: ${REQUESTS} requests × ${TOKENS} SSE chunks per round, medians of ${ROUNDS} rounds each (alternated)`,
        columns: [
          'in flight',
          'proxy',
          'TTFB p50 ms',
          'TTFB p99 ms',
          'requests/s',
          'chunks/s',
          'added TTFB p50 ms',
          'front / pipe',
        ],
        rows,
      },
      {
        title:
          'CPU time of the proxy process per request (µs, user + system), medians of the rounds',
        columns: ['in flight', 'direct pipe', 'front', 'added', 'added per chunk', 'front / pipe'],
        rows: cpuRows,
      },
      {
        title: `Proxy process memory peaks (MiB, sampled every 5 ms), ${MEMORY_REQUESTS} requests at 64 in flight: answers of ${TOKENS} / ${LONG_TOKENS} chunks`,
        columns: ['proxy', 'RSS', 'heap used', 'external', 'RSS added', 'heap added'],
        rows: memoryRows,
      },
    ],
    notes: [
      `Layout: engine, front and pipe each in a child process; the client (node:http) in the bench process; ${cpus().length} logical cores. 1-minute load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after.`,
      `Answer bodies delivered: front ${[...(lengths.get('front') ?? [])].join(', ')} bytes, pipe ${[...(lengths.get('pipe') ?? [])].join(', ')} bytes (${same ? 'identical' : 'DIFFERENT'}).`,
      'Chunks/s counts the content chunks (200 per answer; each answer also has a role chunk, a final chunk and [DONE]).',
    ],
  });
}

await main();
