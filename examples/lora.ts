/**
 * LoRA adapters: four workers serve one base model and its adapters. Their load reports (stand-ins
 * for what the HTTP transport reads from vLLM's `vllm:lora_requests_info` and residency gauges)
 * say which adapters each holds; `adapterAware` sends an adapter's requests there, places an
 * adapter no worker holds on the same workers every router would pick, and leaves base-model
 * requests to `cache_aware` alone.
 *
 *   npx tsx examples/lora.ts
 */
import {
  adapterAware,
  createPolicy,
  type LoadReport,
  Router,
  type Worker,
  WorkerRegistry,
} from 'fleetroute';

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
for (let i = 0; i < 4; i++)
  await registry.register({
    url: `http://gpu-${i}:8000`,
    models: ['llama', 'sql-lora', 'chat-lora', 'new-lora'],
  });

// What each engine's /metrics would say: sql-lora is loaded on gpu-1, chat-lora on gpu-3.
const reports: Record<string, LoadReport> = {
  'http://gpu-0:8000': {
    runningRequests: 2,
    adapters: { running: [], waiting: [], resident: [], maxAdapters: 4 },
  },
  'http://gpu-1:8000': {
    runningRequests: 3,
    adapters: { running: ['sql-lora'], waiting: [], resident: ['sql-lora'], maxAdapters: 4 },
  },
  'http://gpu-2:8000': {
    runningRequests: 1,
    adapters: { running: [], waiting: [], resident: [], maxAdapters: 4 },
  },
  'http://gpu-3:8000': {
    runningRequests: 2,
    adapters: { running: [], waiting: [], resident: ['chat-lora'], maxAdapters: 4 },
  },
};
const router = new Router({
  registry,
  transport: { probe: async () => true, loads: async (worker: Worker) => reports[worker.url] },
  // 'new-lora' is named as an adapter too: no report lists it yet.
  policy: adapterAware(createPolicy('cache_aware'), {
    adapters: (model) => model.endsWith('-lora'),
  }),
  health: false,
});
router.start();
await router.pollLoads(); // deliver the reports once, now

const requests = [
  { model: 'sql-lora', text: 'Translate to SQL: customers who ordered twice' },
  { model: 'sql-lora', text: 'Translate to SQL: the ten largest orders' },
  { model: 'chat-lora', text: 'Hello there' },
  { model: 'new-lora', text: 'First request of an adapter nobody holds' },
  { model: 'new-lora', text: 'Second request of that adapter' },
  { model: 'llama', text: 'A base-model request' },
];
for (const request of requests) {
  const lease = router.select(request);
  console.log(`${request.model.padEnd(9)} → ${lease?.worker.url ?? 'none'}`);
  lease?.release();
}

await router.close();
registry.close();
