/**
 * A retry policy of your own: `retry.shouldRetry` retries only idempotent requests (those with an
 * `idempotency-key` header), never a 429, and waits at most 100 ms — handing every other case to
 * the default decision, which retries at once after a `Retry-After` (the worker that sent it cools
 * down instead) — while `retry.onRetry` logs each retry. Four scenarios over three in-memory
 * workers, each starting from a fresh fleet, show what it changes.
 *
 * Run: `npx tsx examples/retry-policy.ts`.
 */
import {
  createPolicy,
  type RetryOutcome,
  Router,
  type ShouldRetry,
  type Worker,
  WorkerRegistry,
} from 'fleetroute';

type Answer = { readonly status: number; readonly headers?: Record<string, string> };
type Behaviour = 'ok' | 'reset' | 'loading' | 'rate-limited';

/** The in-memory "model servers": what each one does with a request. */
const behaviour = new Map<string, Behaviour>();
async function serve(worker: Worker): Promise<Answer> {
  switch (behaviour.get(worker.url)) {
    case 'reset':
      throw Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' });
    case 'loading':
      return { status: 503, headers: { 'retry-after': '1' } };
    case 'rate-limited':
      return { status: 429, headers: { 'retry-after': '30' } };
    default:
      return { status: 200 };
  }
}

const isIdempotent = (outcome: RetryOutcome): boolean => {
  const headers = outcome.request.headers;
  const key =
    headers instanceof Headers ? headers.get('idempotency-key') : headers?.['idempotency-key'];
  return key !== undefined && key !== null;
};

const shouldRetry: ShouldRetry = (outcome, attempt, byDefault) => {
  if (!isIdempotent(outcome)) return false; // a second POST could run the side effect twice
  if (outcome.kind === 'status' && outcome.status === 429) return false; // the fleet is saturated
  const delay = byDefault(outcome, attempt); // backoff, or 0 after a Retry-After
  return delay === false ? false : Math.min(delay, 100);
};

const cause = (outcome: RetryOutcome): string => {
  if (outcome.kind === 'error') return (outcome.error as Error).message;
  const { status, retryAfterMs } = outcome;
  return retryAfterMs === undefined
    ? `status ${status}`
    : `status ${status}, Retry-After ${retryAfterMs} ms`;
};

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
const urls = ['http://gpu-1:8000', 'http://gpu-2:8000', 'http://gpu-3:8000'];
for (const url of urls) await registry.register({ url, models: ['llama-3.1-8b'] });

const router = new Router({
  registry,
  transport: { probe: async () => true },
  health: false,
  loadPolling: false,
  // Seeded, so every run starts its rotation at gpu-1 and prints the same story.
  policy: createPolicy('round_robin', { seed: 5 }),
  retry: {
    maxAttempts: 3,
    initialBackoffMs: 20,
    shouldRetry,
    onRetry: ({ attempt, delayMs, outcome, worker }) => {
      const cooldownMs = worker.circuitBreaker.cooldownMs; // set by the Retry-After, if any
      const cooling =
        cooldownMs > 0 ? `; ${worker.url} cools down for ${Math.ceil(cooldownMs / 1_000)} s` : '';
      console.log(
        `  attempt ${attempt} on ${worker.url} failed (${cause(outcome)}): retrying in ${delayMs.toFixed(0)} ms${cooling}`,
      );
    },
  },
});
router.start();

/** Sends one request through the router and prints how it ended. */
async function run(title: string, headers: Record<string, string>, fleet: Behaviour[]) {
  for (const [i, url] of urls.entries()) behaviour.set(url, fleet[i]!);
  // A fresh fleet: no breaker open, no cooldown left by the scenario before.
  for (const worker of registry.getAll()) worker.circuitBreaker.reset();
  console.log(`${title} [${fleet.join(', ')}]`);
  const attempts = router.stats().attempts;
  try {
    const answer = await router.execute({ model: 'llama-3.1-8b', headers }, serve);
    console.log(
      `  → status ${answer.status} after ${router.stats().attempts - attempts} attempt(s)`,
    );
  } catch (error) {
    const message = (error as Error).message;
    console.log(`  → threw "${message}" after ${router.stats().attempts - attempts} attempt(s)`);
  }
}

const key = { 'idempotency-key': 'req-42' };
await run('idempotent request, two workers down:', key, ['reset', 'ok', 'loading']);
await run('POST without idempotency key, all workers resetting:', {}, ['reset', 'reset', 'reset']);
await run('idempotent request, every worker rate-limited:', key, [
  'rate-limited',
  'rate-limited',
  'rate-limited',
]);
await run('idempotent request, all workers resetting:', key, ['reset', 'reset', 'reset']);

const { attempts, retries } = router.stats();
console.log(`\n${attempts} attempts and ${retries} retries in all`);
await router.close();
