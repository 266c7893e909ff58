/**
 * Admission control: two workers that take two requests each, and a burst of thirteen — nine from
 * a batch tenant, then three from a chat tenant, then one urgent request. What fits runs at once;
 * the urgent one jumps the queue; the chat tenant's requests alternate with the batch tenant's
 * instead of waiting behind all of them; what the queue cannot hold is turned away with
 * `SATURATED` and a time to retry — nothing is lost.
 *
 *   npx tsx examples/admission.ts
 */
import { FleetRouteError, Router, WorkerRegistry } from 'fleetroute';

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
await registry.register({ url: 'http://gpu-a:8000', models: ['llama'] });
await registry.register({ url: 'http://gpu-b:8000', models: ['llama'] });

const router = new Router({
  registry,
  transport: { probe: async () => true },
  health: false,
  policy: 'least_load',
  // A worker is full at two requests; at most eight wait; the client is told to retry after 2 s.
  admission: { maxInFlight: 2, maxQueued: 8, retryAfterMs: 2_000 },
});
router.start();

const burst = [
  ...Array.from({ length: 9 }, (_, i) => ({ id: `bulk-${i}`, tenant: 'batch-jobs', priority: 0 })),
  ...Array.from({ length: 3 }, (_, i) => ({ id: `chat-${i}`, tenant: 'chat-app', priority: 0 })),
  { id: 'urgent', tenant: 'chat-app', priority: 10 },
];

const started: string[] = [];
const outcomes = await Promise.all(
  burst.map(async ({ id, tenant, priority }) => {
    try {
      await router.execute({ model: 'llama', tenant, priority }, async () => {
        started.push(id);
        // The engine's work: one turn of the event loop here, seconds in real life.
        await new Promise((resolve) => setTimeout(resolve, 5));
        return { status: 200 };
      });
      return `${id}: served`;
    } catch (error) {
      if (FleetRouteError.is(error, 'SATURATED'))
        return `${id}: turned away (${error.reason}), retry after ${error.retryAfterMs} ms`;
      throw error;
    }
  }),
);

console.log(`started in this order: ${started.join(', ')}`);
for (const line of outcomes) console.log(line);
const stats = router.stats().admission!;
console.log(
  `admitted at once ${stats.admitted}, after a wait ${stats.admittedAfterWait}, turned away ${stats.rejected.queue_full}`,
);
await router.close();
registry.close();
