/**
 * Data-parallel ranks behind one endpoint: a stand-in engine on one port runs four ranks, each
 * with its own prefix cache. The registry has one worker per rank (`url@rank`); `cache_aware`
 * picks the rank that holds a prompt's prefix, and `dataParallelHint` tells the engine which rank
 * that is — the engine reports the rank it was asked for.
 *
 *   npx tsx examples/data-parallel.ts
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dataParallelHint, Router, WorkerRegistry } from 'fleetroute';

// The engine: answers with the rank named by the request's header (vLLM reads the same header).
const engine = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ rank: Number(req.headers['x-data-parallel-rank'] ?? -1) }));
  });
});
await new Promise<void>((resolve) => engine.listen(0, '127.0.0.1', resolve));
const base = `http://127.0.0.1:${(engine.address() as AddressInfo).port}`;

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
for (let rank = 0; rank < 4; rank++)
  await registry.register({ url: `${base}@${rank}`, dpSize: 4, models: ['llama'] });
const router = new Router({ registry, transport: { probe: async () => true }, health: false });
router.start();

const system = 'You are a support agent for a large shop. '.repeat(40);
const prompts = ['Where is my order?', 'Can I return shoes?', 'Where is my order?'];
for (const question of prompts) {
  const text = `${system}\n${question}`;
  const answer = await router.execute({ model: 'llama', text }, async (worker, { signal }) => {
    const hint = dataParallelHint(worker);
    const response = await fetch(`${worker.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...hint?.headers },
      body: JSON.stringify({ model: 'llama', prompt: text, ...hint?.body }),
      signal,
    });
    const { rank } = (await response.json()) as { rank: number };
    return { status: response.status, routed: worker.dpRank, served: rank };
  });
  console.log(
    `"${question}": routed to rank ${answer.routed}, engine served rank ${answer.served}`,
  );
}

await router.close();
registry.close();
engine.close();
