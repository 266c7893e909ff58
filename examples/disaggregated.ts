/**
 * Prefill/decode disaggregation through `fleetroute/openai`: stand-in prefill and decode engines
 * for vLLM (NIXL) and SGLang, and the OpenAI front running both legs of each request.
 *
 * - vLLM: the prefill leg (max_tokens 1, no stream) answers `kv_transfer_params`; the decode leg
 *   gets the original body with them.
 * - SGLang: both legs at once, with the same `bootstrap_room`; the decode waits for its prefill.
 * - Conditional disaggregation: the same prompt again is cached on its decode worker
 *   (`decodePolicy: 'cache_aware'`), so it skips the prefill leg.
 *
 *   npx tsx examples/disaggregated.ts
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Router, WorkerRegistry } from 'fleetroute';
import { createOpenAINodeHandler } from 'fleetroute/openai';

type Kind = 'vllm-prefill' | 'vllm-decode' | 'sglang-prefill' | 'sglang-decode';
const seen: Array<{ kind: Kind; text: string; body: Record<string, unknown> }> = [];
const rooms = new Map<string, () => void>();
const arrived = new Set<string>();

/** A stand-in engine: records each request's body and answers like the engine of `kind`. */
async function engine(kind: Kind): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const text = Buffer.concat(chunks).toString();
      const body = JSON.parse(text) as Record<string, unknown>;
      seen.push({ kind, text, body });
      const room = /"bootstrap_room":(\d+)/.exec(text)?.[1] ?? '';
      if (kind === 'sglang-prefill') {
        arrived.add(room);
        rooms.get(room)?.();
      }
      if (kind === 'sglang-decode' && !arrived.has(room))
        await new Promise<void>((resolve) => rooms.set(room, resolve)); // waits for its KV cache
      const kv =
        kind === 'vllm-prefill'
          ? {
              remote_engine_id: 'prefill-1',
              remote_block_ids: [7, 8],
              remote_host: '127.0.0.1',
              remote_port: 5600,
            }
          : undefined;
      if (body.stream === true) {
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        for (const word of ['Paris', ' is', ' the', ' capital.'])
          res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: word }] })}\n\n`);
        res.end('data: [DONE]\n\n');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' });
      const answer = kind.endsWith('prefill') ? 'Paris' : 'Paris is the capital.';
      res.end(JSON.stringify({ choices: [{ index: 0, text: answer }], kv_transfer_params: kv }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}
const servers: ReturnType<typeof createServer>[] = [];

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
for (const runtime of ['vllm', 'sglang'] as const) {
  const model = `llama-${runtime}`;
  await registry.register({
    url: await engine(`${runtime}-prefill`),
    models: [model],
    type: 'prefill',
    runtime,
  });
  await registry.register({
    url: await engine(`${runtime}-decode`),
    models: [model],
    type: 'decode',
    runtime,
  });
}
const router = new Router({
  registry,
  transport: { probe: async () => true },
  health: false,
  decodePolicy: 'cache_aware', // its cache knowledge drives conditional disaggregation
});
const front = createServer(createOpenAINodeHandler({ router }));
await new Promise<void>((resolve) => front.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(front.address() as AddressInfo).port}/v1/completions`;

async function complete(model: string, prompt: string, stream: boolean): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt, max_tokens: 32, stream }),
  });
  const text = await response.text();
  if (!stream) return (JSON.parse(text) as { choices: Array<{ text: string }> }).choices[0]!.text;
  return [...text.matchAll(/"text":"([^"]*)"/g)].map((m) => m[1]).join('');
}

const prompt = 'You are a geography tutor. Answer in one sentence. '.repeat(30);
const last = (kind: Kind) => seen.filter((s) => s.kind === kind).at(-1);

console.log(`vllm answer: ${await complete('llama-vllm', `${prompt}Capital of France?`, false)}`);
const vllmPrefill = last('vllm-prefill')!.body;
console.log(
  `vllm prefill leg: max_tokens ${vllmPrefill.max_tokens}, stream ${vllmPrefill.stream}; decode leg got kv_transfer_params from ${(last('vllm-decode')!.body.kv_transfer_params as { remote_engine_id: string }).remote_engine_id}, max_tokens ${last('vllm-decode')!.body.max_tokens}`,
);

console.log(
  `sglang answer (streamed): ${await complete('llama-sglang', 'Capital of France?', true)}`,
);
const roomOf = (kind: Kind) => /"bootstrap_room":(\d+)/.exec(last(kind)!.text)?.[1];
console.log(
  `sglang rooms: prefill ${roomOf('sglang-prefill')}, decode ${roomOf('sglang-decode')}, same: ${roomOf('sglang-prefill') === roomOf('sglang-decode')}`,
);

const prefillsBefore = seen.filter((s) => s.kind === 'vllm-prefill').length;
await complete('llama-vllm', `${prompt}Capital of France?`, false);
const skipped = seen.filter((s) => s.kind === 'vllm-prefill').length === prefillsBefore;
console.log(`vllm, the same prompt again: prefill leg ${skipped ? 'skipped' : 'run'}`);

front.close();
await router.close();
registry.close();
for (const server of servers) server.close();
