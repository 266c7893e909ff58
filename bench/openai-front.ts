/**
 * What the OpenAI front costs against the simplest streaming proxy: streamed chat requests on
 * loopback, each answered with 200 SSE content chunks by a minimal vLLM-like engine, sent
 * through (a) `createOpenAINodeHandler` over a `Router` with two ready workers and (b) a "direct
 * pipe" (read the body, `fetch` the engine, write the answer's chunks as they come).
 *
 * Layout (2 cores): the engine, the front and the pipe each run in their own child process
 * (`bench/openai-front-child.ts`); this process is the client (`node:http`, keep-alive, a fixed
 * number of requests in flight, every answer read to its end). Nothing is pinned: the client,
 * the proxy under test and the engine all need CPU at once, and on a shared machine a pinned
 * process cannot move to a core another job left idle. The front and the pipe are measured in
 * alternating rounds (A B B A …) in the same run, so machine noise hits both; only one of them
 * carries traffic at a time, the other sits idle.
 *
 * Figures: time to first byte (from the request's creation to its first body byte) p50 and p99,
 * requests/s and chunks/s of each round, medians over rounds, with 1, 16 and 64 requests in
 * flight; the proxy process's CPU time per request (`process.cpuUsage`), which the other
 * processes on the cores do not inflate; and the memory peaks of a fresh proxy process for
 * answers of 200 chunks against answers of 2,000.
 *
 * `FLEETROUTE_BENCH_PROFILE=front` (or `pipe`, `engine`, a comma-separated list) also writes that
 * child's CPU profile (`node --cpu-prof`) under `scratch/openai-front-profiles/<role>/`.
 */
import { type ChildProcess, fork } from 'node:child_process';
import { Agent, request } from 'node:http';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { emit, fmt, median } from './harness.js';
import { type ChildMessage, MODEL, type ProcessSample } from './openai-front-child.js';

const CHILD = fileURLToPath(new URL('./openai-front-child.ts', import.meta.url));
/** Where `FLEETROUTE_BENCH_PROFILE` writes CPU profiles (see above). */
const PROFILE_DIR = 'scratch/openai-front-profiles';
const TOKENS = 200;
const LONG_TOKENS = 2_000;
const REQUESTS = 1_000;
const ROUNDS = 4;
/** 1 in flight: the latency the front adds with no queue in front of it. */
const CONCURRENCIES = [1, 16, 64] as const;
/** Requests per memory phase (at 64 in flight): two waves. */
const MEMORY_REQUESTS = 128;

/** Requests per round: fewer one at a time, where each waits for the last. */
function requestsAt(concurrency: number): number {
  return concurrency === 1 ? 200 : REQUESTS;
}

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
  requests: number,
  concurrency: number,
): Promise<RoundResult> {
  const before = await sample(proxy, false);
  const result = await load(proxy.ports[0]!, payloads, requests, concurrency);
  const after = await sample(proxy, false);
  const seen = lengths.get(name) ?? new Set<number>();
  for (const b of result.bytes) seen.add(b);
  lengths.set(name, seen);
  return {
    ttfbP50: percentile(result.ttfbs, 50),
    ttfbP99: percentile(result.ttfbs, 99),
    requestsPerS: (requests * 1000) / result.ms,
    cpuUsPerRequest: (after.cpuUs - before.cpuUs) / requests,
  };
}

/** A proxy's memory peaks and CPU time per request over one phase. */
interface Phase {
  readonly sample: ProcessSample;
  readonly cpuUsPerRequest: number;
}

/** `MEMORY_REQUESTS` answers of `tokens` chunks at 64 in flight, peaks restarted before. */
async function phase(proxy: Child, tokens: number): Promise<Phase> {
  const before = await sample(proxy, true);
  await load(proxy.ports[0]!, bodies(64, tokens), MEMORY_REQUESTS, 64);
  const after = await sample(proxy, true);
  return { sample: after, cpuUsPerRequest: (after.cpuUs - before.cpuUs) / MEMORY_REQUESTS };
}

/** Fresh proxy processes (one at a time), warmed up, then answers of 200 and of 2,000 chunks. */
async function memoryPhases(engineArgs: readonly string[]): Promise<Record<ProxyName, Phase[]>> {
  const out = {} as Record<ProxyName, Phase[]>;
  for (const name of NAMES) {
    const proxy = await startChild(name, engineArgs);
    await load(proxy.ports[0]!, bodies(64, TOKENS), 64, 64);
    out[name] = [await phase(proxy, TOKENS), await phase(proxy, LONG_TOKENS)];
    proxy.process.disconnect();
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Run

const MiB = 2 ** 20;
const NAMES = ['pipe', 'front'] as const;
const LABEL: Record<ProxyName, string> = { pipe: 'direct pipe', front: 'front' };

/** Alternated rounds at one concurrency: medians per proxy. */
async function rounds(
  proxies: Record<ProxyName, Child>,
  concurrency: number,
): Promise<Record<ProxyName, RoundResult>> {
  const requests = requestsAt(concurrency);
  const payloads = bodies(requests, TOKENS);
  const results: Record<ProxyName, RoundResult[]> = { front: [], pipe: [] };
  // Warm-up (JIT, connection pools), not recorded.
  for (const name of NAMES)
    await load(proxies[name].ports[0]!, payloads, Math.min(300, requests), concurrency);
  for (let r = 0; r < ROUNDS; r++) {
    const order: ProxyName[] = r % 2 === 0 ? ['front', 'pipe'] : ['pipe', 'front'];
    for (const name of order)
      results[name].push(await round(name, proxies[name], payloads, requests, concurrency));
  }
  const m = (name: ProxyName): RoundResult => ({
    ttfbP50: median(results[name].map((x) => x.ttfbP50)),
    ttfbP99: median(results[name].map((x) => x.ttfbP99)),
    requestsPerS: median(results[name].map((x) => x.requestsPerS)),
    cpuUsPerRequest: median(results[name].map((x) => x.cpuUsPerRequest)),
  });
  return { front: m('front'), pipe: m('pipe') };
}

function throughputRows(concurrency: number, r: Record<ProxyName, RoundResult>): string[][] {
  return NAMES.map((name) => {
    const front = name === 'front';
    return [
      String(concurrency),
      LABEL[name],
      fmt(r[name].ttfbP50, 2),
      fmt(r[name].ttfbP99, 2),
      fmt(r[name].requestsPerS, 0),
      fmt(r[name].requestsPerS * TOKENS, 0),
      front ? fmt(r.front.ttfbP50 - r.pipe.ttfbP50, 2) : '',
      front ? fmt(r.front.requestsPerS / r.pipe.requestsPerS, 3) : '',
    ];
  });
}

function cpuRow(label: string, pipe: number, front: number): string[] {
  return [label, fmt(pipe, 0), fmt(front, 0), fmt(front - pipe, 0), fmt(front / pipe, 2)];
}

function memoryRows(phases: Record<ProxyName, Phase[]>): string[][] {
  const mib = (bytes: number): string => fmt(bytes / MiB, 1);
  return NAMES.map((name) => {
    const [short, long] = phases[name].map((p) => p.sample) as [ProcessSample, ProcessSample];
    return [
      LABEL[name],
      `${mib(short.peakRss)} / ${mib(long.peakRss)}`,
      `${mib(short.peakHeapUsed)} / ${mib(long.peakHeapUsed)}`,
      `${mib(short.peakExternal)} / ${mib(long.peakExternal)}`,
      mib(long.peakRss - short.peakRss),
      mib(long.peakHeapUsed - short.peakHeapUsed),
    ];
  });
}

async function main(): Promise<void> {
  const loadBefore = loadavg()[0] ?? 0;
  const started = performance.now();
  const engine = await startChild('engine');
  const args = engine.ports.map(String);
  const proxies: Record<ProxyName, Child> = {
    front: await startChild('front', args),
    pipe: await startChild('pipe', args),
  };
  const rows: string[][] = [];
  const cpuRows: string[][] = [];
  for (const concurrency of CONCURRENCIES) {
    const r = await rounds(proxies, concurrency);
    rows.push(...throughputRows(concurrency, r));
    cpuRows.push(
      cpuRow(
        `${TOKENS} chunks, ${concurrency} in flight`,
        r.pipe.cpuUsPerRequest,
        r.front.cpuUsPerRequest,
      ),
    );
  }
  proxies.front.process.disconnect();
  proxies.pipe.process.disconnect();
  const phases = await memoryPhases(args);
  engine.process.disconnect();
  const long = (name: ProxyName): number => phases[name][1]!.cpuUsPerRequest;
  cpuRows.push(cpuRow(`${LONG_TOKENS} chunks, 64 in flight`, long('pipe'), long('front')));
  const seen = (name: ProxyName): string => [...(lengths.get(name) ?? [])].join(', ');
  emit({
    name: 'openai-front',
    tables: [
      {
        title: `Streamed chat requests through the front and a direct pipe, ${TOKENS} SSE chunks per answer: ${REQUESTS} requests per round (${requestsAt(1)} with 1 in flight), medians of ${ROUNDS} rounds each, alternated`,
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
        title: 'CPU time of the proxy process per request (µs, user + system)',
        columns: ['answers', 'direct pipe', 'front', 'added', 'front / pipe'],
        rows: cpuRows,
      },
      {
        title: `Proxy process memory peaks (MiB, sampled every 10 ms; a fresh process each, warmed up), ${MEMORY_REQUESTS} requests at 64 in flight: answers of ${TOKENS} / ${LONG_TOKENS} chunks`,
        columns: ['proxy', 'RSS', 'heap used', 'external', 'RSS added', 'heap added'],
        rows: memoryRows(phases),
      },
    ],
    notes: [
      `Answer bodies delivered (bytes): front ${seen('front')}, pipe ${seen('pipe')} (${seen('front') === seen('pipe') ? 'identical' : 'DIFFERENT'}).`,
      'Chunks/s counts content chunks (200 per answer; each answer also has a role chunk, a final chunk and [DONE]).',
      `Layout: engine, front and pipe each in its own child process, the client (node:http) in this one; ${cpus().length} logical cores, unpinned. 1-minute load average ${loadBefore.toFixed(2)} before, ${(loadavg()[0] ?? 0).toFixed(2)} after; ${fmt((performance.now() - started) / 1000, 1)} s.`,
    ],
  });
}

await main();
