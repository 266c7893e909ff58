import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPolicy, type Worker, type WorkerLease, WorkerRegistry } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const fleetOf = (n: number) => buildFleet(Array.from({ length: n }, () => ready));
const tokens = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => (i * 7919 + seed * 104_729) % 50_000);

async function registryFleet(
  n: number,
): Promise<{ registry: WorkerRegistry; workers: readonly Worker[] }> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < n; i++)
    await registry.register({ url: `http://10.1.0.${i}:8000`, models: ['m'] });
  return { registry, workers: registry.getByModel('m') };
}

describe('prefix_hash', () => {
  it('sends prompts that share their first prefixTokens tokens and end within the next block to the same worker', async () => {
    const { workers } = await fleetOf(8);
    const policy = createPolicy('prefix_hash', { prefixTokens: 64 });
    const shared = tokens(64, 1);

    const picks = [0, 1, 2, 3].map((suffix) =>
      policy.select(workers, { tokens: [...shared, ...tokens(60, suffix + 10)] }),
    );

    expect(new Set(picks).size).toBe(1);
  });

  it('with maxTrackedPrefixes 0, keys on the first prefixTokens tokens only, whatever follows', async () => {
    const { workers } = await fleetOf(8);
    const policy = createPolicy('prefix_hash', { prefixTokens: 64, maxTrackedPrefixes: 0 });
    const shared = tokens(64, 1);

    const picks = [0, 1, 2, 3].map((suffix) =>
      policy.select(workers, { tokens: [...shared, ...tokens(100, suffix + 10)] }),
    );

    expect(new Set(picks).size).toBe(1);
  });

  it('keys text on its first 4 × prefixTokens characters', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash', { prefixTokens: 8 });
    const head = 'You are a careful assistant.'.padEnd(32, '.'); // 4 × prefixTokens characters

    const a = policy.select(workers, { text: `${head} What is 2+2?` });
    const b = policy.select(workers, { text: `${head} Translate this.` });
    let moved = 0;
    for (let i = 0; i < 40; i++)
      if (policy.select(workers, { text: `${i} ${head}` }) !== a) moved++;

    expect(b).toBe(a);
    expect(moved).toBeGreaterThan(20); // different prefixes spread
  });

  it('tokens win over text when both are given', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash');
    const t = tokens(300, 3);

    for (let i = 0; i < 20; i++) {
      expect(policy.select(workers, { tokens: t, text: `text ${i}` })).toBe(
        policy.select(workers, { tokens: t }),
      );
    }
  });

  it('a hot prefix spills clockwise to the next worker under the load bound', async () => {
    const { registry, workers } = await registryFleet(8);
    const policy = createPolicy('prefix_hash');
    const ring = registry.getHashRing('m');
    const hot = tokens(256, 42);
    const leases: WorkerLease[] = [];

    for (let r = 0; r < 40; r++) {
      const total = workers.reduce((sum, w) => sum + w.load, 0);
      const cap = Math.ceil((1.25 * (total + 1)) / workers.length);
      const chosen = policy.select(workers, { tokens: hot, ring })!;
      expect(chosen.load + 1).toBeLessThanOrEqual(cap);
      leases.push(chosen.acquire());
    }
    const used = new Set(leases.map((l) => l.worker));
    expect(used.size).toBeGreaterThan(1);
    expect(Math.max(...workers.map((w) => w.load))).toBeLessThanOrEqual(
      Math.ceil(1.25 * (40 / 8) + 1),
    );
  });

  it('the spill order is the ring order: the same as ring.find with a load predicate', async () => {
    const { registry, workers } = await registryFleet(6);
    const ring = registry.getHashRing('m');
    const policy = createPolicy('prefix_hash', { prefixTokens: 4 });
    // Load every worker except a few so the bound excludes the loaded ones.
    const leases = workers.flatMap((w, i) =>
      i % 2 === 0 ? [w.acquire(), w.acquire(), w.acquire()] : [],
    );
    const total = workers.reduce((sum, w) => sum + w.load, 0);
    const cap = Math.ceil((1.25 * (total + 1)) / workers.length);

    const text = 'abcdefghijklmnop'; // 16 characters = 4 × prefixTokens
    const chosen = policy.select(workers, { text, ring })!;
    const expected = ring.find(text, (url) => registry.getByUrl(url)!.load + 1 <= cap);

    expect(chosen.url).toBe(expected);
    for (const lease of leases) lease.release();
  });

  it('without tokens or text, picks the least-loaded available worker', async () => {
    const { workers } = await buildFleet([
      { ...ready, load: 3 },
      { ...ready, load: 1 },
      { ...ready, load: 1 },
    ]);

    expect(createPolicy('prefix_hash').select(workers, {})).toBe(workers[1]);
  });

  it('reads non-integer, negative and huge token values as 0 without throwing', async () => {
    const { workers } = await fleetOf(4);
    const policy = createPolicy('prefix_hash');

    const odd = policy.select(workers, { tokens: [1.5, -3, Number.NaN, 2 ** 40, 7] });
    const zeros = policy.select(workers, { tokens: [0, 0, 0, 0, 7] });

    expect(odd).toBe(zeros);
  });

  it('reads bigint, string and missing token values as 0 without throwing', async () => {
    const { workers } = await fleetOf(4);
    const policy = createPolicy('prefix_hash');
    const odd = [3n, 'x', null, undefined, 7] as unknown as number[];

    expect(policy.select(workers, { tokens: odd })).toBe(
      policy.select(workers, { tokens: [0, 0, 0, 0, 7] }),
    );
  });

  it('keeps every in-flight count within ceil(1.25 × mean + 1) over 10,000 requests with random completions', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 24 }),
        fc.integer({ min: 1, max: 1_000_000 }),
        fc.boolean(),
        async (n, seed, useRegistry) => {
          const { workers } = useRegistry ? await registryFleet(n) : await fleetOf(n);
          const policy = createPolicy('prefix_hash', { prefixTokens: 8 });
          let state = seed;
          const random = () => {
            state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
            return state / 4_294_967_296;
          };
          const inFlight: WorkerLease[] = [];
          for (let r = 0; r < 10_000; r++) {
            // A skewed workload: a few hot prefixes take most requests.
            const prefix = Math.floor(random() ** 4 * 30);
            const chosen = policy.select(workers, { tokens: [prefix, 1, 2, 3, 4, 5, 6, 7] })!;
            const lease = chosen.acquire();
            inFlight.push(lease);
            const mean = inFlight.length / n;
            if (chosen.load > Math.ceil(1.25 * mean + 1)) {
              throw new Error(
                `request ${r}: ${chosen.url} has ${chosen.load} in flight, mean ${mean}`,
              );
            }
            while (inFlight.length > 0 && random() < 0.45) {
              inFlight.splice(Math.floor(random() * inFlight.length), 1)[0]!.release();
            }
          }
          for (const lease of inFlight) lease.release();
        },
      ),
      runs(8, 30),
    );
  });

  it('two instances and two processes place every prefix on the same URL', async () => {
    const script = `
      import { createPolicy, WorkerRegistry } from './src/index.ts';
      const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
      for (let i = 0; i < 12; i++) await registry.register({ url: 'http://w' + i + ':8000' });
      const policy = createPolicy('prefix_hash');
      const out = [];
      for (let k = 0; k < 30; k++) out.push(policy.select(registry.getAll(), { tokens: [k, k * 3, 99] }).url);
      for (let k = 0; k < 30; k++) out.push(policy.select(registry.getAll(), { text: 'prompt ' + k }).url);
      console.log(JSON.stringify(out));
    `;
    const child = JSON.parse(
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
      }),
    ) as string[];
    const { workers } = await fleetOf(12);
    const a = createPolicy('prefix_hash');
    const b = createPolicy('prefix_hash');
    const here: string[] = [];
    for (let k = 0; k < 30; k++) here.push(a.select(workers, { tokens: [k, k * 3, 99] })!.url);
    for (let k = 0; k < 30; k++) here.push(a.select(workers, { text: `prompt ${k}` })!.url);
    const again: string[] = [];
    for (let k = 0; k < 30; k++)
      again.push(b.select([...workers].reverse(), { tokens: [k, k * 3, 99] })!.url);
    for (let k = 0; k < 30; k++)
      again.push(b.select([...workers].reverse(), { text: `prompt ${k}` })!.url);

    expect(child).toEqual(here);
    expect(again).toEqual(here);
  });
});

describe('prefix_hash memory', () => {
  it('a select of a prompt of at most one block allocates nothing, as a plain array or a Uint32Array', () => {
    // Run in a child with a young generation large enough that no collection hides garbage; the
    // least of five rounds, as code the compiler emits meanwhile lands in the heap too (on a
    // loaded machine a round can carry a few KB of it: the bound, 8 bytes, is a tenth of the
    // 80 bytes per select a block view and a BigInt cost).
    const script = `
      import { createPolicy, WorkerRegistry } from './src/index.ts';
      const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
      for (let i = 0; i < 64; i++) await registry.register({ url: 'http://w' + i + ':8000', models: ['m'] });
      const workers = registry.getByModel('m');
      let seed = 7;
      const next = () => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
      const plain = Array.from({ length: 512 }, () => Array.from({ length: 256 }, () => next() % 150000));
      const out = {};
      for (const [kind, prompts] of [['plain', plain], ['typed', plain.map((p) => Uint32Array.from(p))]]) {
        const policy = createPolicy('prefix_hash');
        const requests = prompts.map((tokens) => ({ tokens }));
        const run = (n) => { for (let i = 0; i < n; i++) policy.select(workers, requests[i % 512]); };
        run(20000);
        out[kind] = Infinity;
        for (let round = 0; round < 5; round++) {
          globalThis.gc();
          const before = process.memoryUsage().heapUsed;
          run(20000);
          out[kind] = Math.min(out[kind], (process.memoryUsage().heapUsed - before) / 20000);
        }
      }
      console.log(JSON.stringify(out));
    `;
    const flags = ['--expose-gc', '--max-semi-space-size=64', '--import', 'tsx'];
    const perSelect = JSON.parse(
      execFileSync(process.execPath, [...flags, '--input-type=module', '-e', script], {
        encoding: 'utf8',
      }),
    ) as { plain: number; typed: number };

    expect(perSelect.plain).toBeLessThan(8); // bytes per select
    expect(perSelect.typed).toBeLessThan(8);
  });
});

describe('prefix_hash on odd candidate lists', () => {
  it('skips holes, undefined, null, plain objects and numbers: the same pick as the workers alone, never a throw', async () => {
    const { registry } = await registryFleet(3);
    const [a, b, c] = registry.getByModel('m') as [Worker, Worker, Worker];
    // A list built from ids after a removal: `registry.get(id)` is undefined for the removed one.
    const ids = [a.id, 'worker-gone', b.id, c.id];
    const fromIds = ids.map((id) => registry.get(id)) as Worker[];
    // biome-ignore lint/suspicious/noSparseArray: a list with a hole is the case under test
    const sparse = [a, , b, c] as Worker[];
    const mixed = [a, {}, 3, null, b, c] as unknown as Worker[];
    const policy = createPolicy('prefix_hash');

    const lists = [fromIds, sparse, mixed, [a, undefined, b, c] as Worker[]];
    for (const request of [{ text: 'hello' }, { tokens: tokens(64, 3) }]) {
      const expected = policy.select([a, b, c], request);
      for (const list of lists) expect(policy.select(list, request)).toBe(expected);
    }
    for (const list of lists) expect([a, b, c]).toContain(policy.select(list, {}));
  });
});

describe('prefix_hash token inputs', () => {
  it('a Uint32Array and a plain array of the same tokens pick the same worker', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash', { prefixTokens: 64 });
    for (let k = 0; k < 50; k++) {
      const list = tokens(100, k).map((t) => t + 2 ** 31 * (k % 2)); // some ids above 2³¹
      expect(policy.select(workers, { tokens: Uint32Array.from(list) })).toBe(
        policy.select(workers, { tokens: list }),
      );
    }
  });
});
