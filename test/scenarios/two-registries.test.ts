/**
 * Two registries in one process (the simulator runs several): a status change in one must not
 * invalidate what policies cached about the other's candidate lists.
 */
import { describe, expect, it } from 'vitest';
import { createPolicy, WorkerRegistry } from '../../src/index.js';
import { countReads } from '../support/policy-contract.js';

async function readyFleet(prefix: string, n: number) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < n; i++)
    await registry.register({ url: `http://${prefix}${i}:8000`, models: ['m'] });
  return registry;
}

describe('two registries in one process', () => {
  it('least_load keeps its cached nominal for one registry while the other’s workers change status', async () => {
    const a = await readyFleet('a', 8);
    const b = await readyFleet('b', 8);
    const policy = createPolicy('least_load', { seed: 1 });
    const workers = a.getByModel('m');
    policy.select(workers, {}); // the first call reads every candidate and caches the nominal
    const warm = countReads(workers, () => policy.select(workers, {}));
    expect(warm.reads.reduce((x, y) => x + y, 0)).toBe(2); // two samples

    for (const w of b.getAll()) await b.transitionStatus(w.id, 'not_ready');
    const after = countReads(workers, () => policy.select(workers, {}));

    expect(after.reads.reduce((x, y) => x + y, 0)).toBe(2); // still current: no full pass
  });

  it('a status change in the same registry does invalidate it (one full pass, then samples again)', async () => {
    const a = await readyFleet('a', 8);
    const policy = createPolicy('least_load', { seed: 1 });
    const workers = a.getByModel('m');
    policy.select(workers, {});
    await a.transitionStatus(workers[3]!.id, 'not_ready');
    const pass = countReads(workers, () => policy.select(workers, {}));
    expect(pass.reads.reduce((x, y) => x + y, 0)).toBe(8);
    const again = countReads(workers, () => policy.select(workers, {}));
    expect(again.reads.reduce((x, y) => x + y, 0)).toBe(2);
  });
});
