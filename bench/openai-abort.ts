/**
 * How soon a client's disconnect reaches the engine through the OpenAI front: a client reads a
 * few chunks of a streamed answer, then aborts; the time is from its `abort()` to the moment the
 * engine's response closes (the front aborted its call to the engine), measured in one process
 * with `performance.now()`, through each framework adapter (Node `http`, Express, Fastify, Hono on
 * `@hono/node-server`). Stand-in vLLM engines over real sockets (`test/support/vllm-engine.ts`).
 *
 * Run: `npx tsx bench/openai-abort.ts` (a few seconds). Not part of `bench/run.ts`: its figures
 * are latencies, not ratios.
 */
import { FRAMEWORKS, startGateway } from '../test/openai/support/gateway.js';
import { emit, fmt, median } from './harness.js';

const TRIALS = 30;

async function trial(url: string, model: string): Promise<number> {
  const controller = new AbortController();
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      model,
      stream: true,
      max_tokens: 100_000,
      messages: [{ role: 'user', content: 'x' }],
    }),
    signal: controller.signal,
  });
  const reader = response.body!.getReader();
  for (let i = 0; i < 3; i++) await reader.read();
  const started = performance.now();
  controller.abort();
  await reader.read().catch(() => {});
  return started;
}

const rows: string[][] = [];
for (const framework of FRAMEWORKS) {
  const gateway = await startGateway({ framework, engines: 1, engine: { chunkDelayMs: 5 } });
  const engine = gateway.engines[0]!;
  const latencies: number[] = [];
  for (let i = 0; i < TRIALS; i++) {
    const before = engine.abandoned;
    const started = await trial(gateway.url, engine.model);
    const deadline = performance.now() + 5_000;
    while (engine.abandoned === before && performance.now() < deadline)
      await new Promise((resolve) => setTimeout(resolve, 1));
    if (engine.abandoned === before)
      throw new Error(`${framework}: the engine never saw the abort`);
    latencies.push(engine.abandonedAt[engine.abandonedAt.length - 1]! - started);
  }
  await gateway.close();
  latencies.sort((a, b) => a - b);
  rows.push([
    framework,
    fmt(median(latencies), 2),
    fmt(latencies[Math.floor(latencies.length * 0.9)]!, 2),
    fmt(latencies.at(-1)!, 2),
  ]);
}

emit({
  name: 'openai-abort',
  tables: [
    {
      title: `client abort → engine's response closed, ms (${TRIALS} trials per framework)`,
      columns: ['framework', 'median', 'p90', 'max'],
      rows,
    },
  ],
  notes: ['The engine writes a chunk every 5 ms; the client has read three when it aborts.'],
});
