/**
 * Routing policies side by side: the same fleet, the same requests, different choices.
 * Also a prefill/decode pair with `selectPair`.
 *
 * Run: `npx tsx examples/policies.ts`.
 */
import { createPolicy, type PolicyName, selectPair, WorkerRegistry } from 'fleetroute';

const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
for (let i = 1; i <= 4; i++) {
  await registry.register({ url: `http://10.0.0.${i}:8000`, models: ['llama-3.1-8b'] });
}
const workers = registry.getByModel('llama-3.1-8b');
const ring = registry.getHashRing('llama-3.1-8b');

// Three conversations, two turns each; every turn repeats the conversation's prefix.
const system = Array.from({ length: 300 }, (_, i) => 1000 + i);
const requests = ['alice', 'bob', 'carol', 'alice', 'bob', 'carol'].map((user, turn) => ({
  routingKey: user,
  tokens: [...system, user.length, turn],
  ring,
}));

const names: PolicyName[] = [
  'round_robin',
  'power_of_two',
  'least_load',
  'consistent_hashing',
  'prefix_hash',
  'cache_aware',
  'manual',
];
for (const name of names) {
  const policy = createPolicy(name, { seed: 7 });
  const picks = requests.map((request) => {
    const worker = policy.select(workers, request);
    return worker === undefined ? '-' : worker.url.slice(-6, -5); // the host's last digit
  });
  console.log(`${name.padEnd(20)} ${picks.join(' ')}`);
}

// One worker fails: consistent hashing moves only its keys, and gives them back on recovery.
const policy = createPolicy('consistent_hashing');
const owner = policy.select(workers, { routingKey: 'alice' })!;
await registry.transitionStatus(owner.id, 'not_ready');
const failover = policy.select(workers, { routingKey: 'alice' })!;
await registry.transitionStatus(owner.id, 'ready');
const back = policy.select(workers, { routingKey: 'alice' })!;
console.log(`\nalice: ${owner.url} → (down) ${failover.url} → (recovered) ${back.url}`);

// Prefill/decode disaggregation: one policy instance per leg.
for (let i = 1; i <= 2; i++)
  await registry.register({
    url: `http://10.0.1.${i}:8000`,
    type: 'prefill',
    bootstrapPort: 9000 + i,
  });
for (let i = 1; i <= 3; i++)
  await registry.register({ url: `http://10.0.2.${i}:8000`, type: 'decode' });
const legs = { prefill: createPolicy('bucket'), decode: createPolicy('least_load') };
const pair = selectPair(
  registry.getPrefillWorkers(),
  registry.getDecodeWorkers(),
  { tokens: system },
  legs,
);
console.log(
  `prefill ${pair?.prefill.url} (bootstrap port ${pair?.prefill.bootstrapPort}) → decode ${pair?.decode.url}`,
);
registry.close();
