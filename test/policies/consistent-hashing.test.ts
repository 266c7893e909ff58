import { execFileSync } from 'node:child_process';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPolicy, WorkerRegistry } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const fleetOf = (n: number) => buildFleet(Array.from({ length: n }, () => ready));

describe('consistent_hashing', () => {
  it('sends the same routing key to the same worker, every time', async () => {
    const { workers } = await fleetOf(8);
    const policy = createPolicy('consistent_hashing', { seed: 1 });

    const first = policy.select(workers, { routingKey: 'session-7' });
    for (let r = 0; r < 20; r++)
      expect(policy.select(workers, { routingKey: 'session-7' })).toBe(first);
  });

  it('takes the key from request.routingKey, then x-fleetroute-routing-key, then authorization / x-forwarded-for / cookie', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('consistent_hashing', { seed: 1 });
    const owner = (key: string) => policy.select(workers, { routingKey: key });

    const cases: [object, string][] = [
      [{ routingKey: 'a', headers: { 'x-fleetroute-routing-key': 'b' } }, 'a'],
      [{ headers: { 'X-FleetRoute-Routing-Key': 'b', authorization: 'c' } }, 'b'],
      [{ headers: new Headers({ authorization: 'Bearer c', cookie: 'd' }) }, 'Bearer c'],
      [{ headers: { authorization: '', 'x-forwarded-for': ['', '10.1.2.3'] } }, '10.1.2.3'],
      [{ headers: { cookie: 'sid=9' } }, 'sid=9'],
      [{ routingKey: '', headers: { 'x-fleetroute-routing-key': 'e' } }, 'e'],
    ];
    for (const [request, key] of cases) expect(policy.select(workers, request)).toBe(owner(key));
  });

  it('routes to the worker named by x-fleetroute-target-worker, by URL or id', async () => {
    const { workers } = await fleetOf(4);
    const policy = createPolicy('consistent_hashing');

    expect(
      policy.select(workers, { headers: { 'x-fleetroute-target-worker': workers[2]!.url } }),
    ).toBe(workers[2]);
    expect(
      policy.select(workers, { headers: { 'x-fleetroute-target-worker': workers[3]!.id } }),
    ).toBe(workers[3]);
  });

  it('a target worker that is unknown or unavailable gives undefined, never another worker', async () => {
    const { workers } = await buildFleet([ready, { ...ready, status: 'not_ready' }]);
    const policy = createPolicy('consistent_hashing');

    expect(
      policy.select(workers, { headers: { 'x-fleetroute-target-worker': 'http://nope:1' } }),
    ).toBeUndefined();
    expect(
      policy.select(workers, { headers: { 'x-fleetroute-target-worker': workers[1]!.url } }),
    ).toBeUndefined();
  });

  it('fails over clockwise past an unavailable owner, and a recovered owner gets exactly its keys back', async () => {
    const { registry, workers } = await fleetOf(6);
    const policy = createPolicy('consistent_hashing', { seed: 1 });
    const keys = Array.from({ length: 300 }, (_, i) => `user-${i}`);
    const before = keys.map((k) => policy.select(workers, { routingKey: k }));
    const victim = workers[2]!;

    await registry.transitionStatus(victim.id, 'not_ready');
    const during = keys.map((k) => policy.select(workers, { routingKey: k }));
    await registry.transitionStatus(victim.id, 'ready');
    const after = keys.map((k) => policy.select(workers, { routingKey: k }));

    keys.forEach((_, i) => {
      if (before[i] === victim) expect(during[i]).not.toBe(victim);
      else expect(during[i]).toBe(before[i]); // only the victim's keys moved
    });
    expect(after).toEqual(before);
    expect(before.filter((w) => w === victim).length).toBeGreaterThan(0);
  });

  it('uses request.ring when given: the registry ring and the policy agree with ring.find', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (let i = 0; i < 10; i++)
      await registry.register({ url: `http://10.0.0.${i}:8000`, models: ['m'] });
    const workers = registry.getByModel('m');
    const ring = registry.getHashRing('m');
    const policy = createPolicy('consistent_hashing');

    for (let k = 0; k < 50; k++) {
      expect(policy.select(workers, { routingKey: `k${k}`, ring })!.url).toBe(ring.find(`k${k}`));
    }
  });

  it('namespaces keys per leg: prefill and decode placements are independent of the single-leg one', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('consistent_hashing');
    let differs = 0;
    for (let k = 0; k < 100; k++) {
      const single = policy.select(workers, { routingKey: `k${k}` });
      const prefill = policy.select(workers, { routingKey: `k${k}`, leg: 'prefill' });
      expect(prefill).toBe(policy.select(workers, { routingKey: `prefill:k${k}` }));
      if (single !== prefill) differs++;
    }
    expect(differs).toBeGreaterThan(50);
  });

  it('without any key, spreads requests at random over available workers', async () => {
    const { workers } = await fleetOf(4);
    const policy = createPolicy('consistent_hashing', { seed: 5 });

    const seen = new Set(Array.from({ length: 200 }, () => policy.select(workers, {})));

    expect(seen.size).toBe(4);
  });

  it('two instances, and two processes, route every key to the same URL', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 20 }),
        fc.array(fc.string({ minLength: 1 }), { maxLength: 30 }),
        async (n, keys) => {
          const { workers } = await fleetOf(n);
          const a = createPolicy('consistent_hashing', { seed: 1 });
          const b = createPolicy('consistent_hashing', { seed: 2 });
          for (const key of keys)
            expect(a.select(workers, { routingKey: key })).toBe(
              b.select([...workers].reverse(), { routingKey: key }),
            );
        },
      ),
      runs(30, 100),
    );
    const script = `
      import { createPolicy, WorkerRegistry } from './src/index.ts';
      const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
      for (let i = 0; i < 12; i++) await registry.register({ url: 'http://w' + i + ':8000' });
      const policy = createPolicy('consistent_hashing');
      const out = [];
      for (let k = 0; k < 40; k++) out.push(policy.select(registry.getAll(), { routingKey: 'key-' + k }).url);
      console.log(JSON.stringify(out));
    `;
    const child = JSON.parse(
      execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        encoding: 'utf8',
      }),
    ) as string[];
    const { workers } = await fleetOf(12);
    const policy = createPolicy('consistent_hashing');
    const here = Array.from(
      { length: 40 },
      (_, k) => policy.select(workers, { routingKey: `key-${k}` })!.url,
    );
    expect(child).toEqual(here);
  });
});
