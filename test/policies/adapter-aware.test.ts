/**
 * `adapterAware`: the tiers an adapter's candidates are narrowed to (holding it, new placements
 * with a free slot, the rest), load spill between them, the identity of the narrowed lists, and
 * transparency — everything the inner policy offers is offered by the wrapper.
 */
import { describe, expect, it } from 'vitest';
import { hasKvKeyPath } from '../../src/cache/kv-key-target.js';
import {
  adapterAware,
  createPolicy,
  type LoadReport,
  type Policy,
  Router,
  type SelectRequest,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { topByWeight } from '../../src/policies/adapter-aware/adapter-tiers.js';
import { sharingOf } from '../../src/policies/placement-sharing.js';
import { prefillChargeOf } from '../../src/policies/prefill-charge.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const fleet = async (n: number) =>
  (await buildFleet(Array.from({ length: n }, () => ready))).workers;

/** An inner policy that records the lists it is given and picks the least-loaded worker. */
function recorder() {
  const lists: (readonly Worker[])[] = [];
  const calls: string[] = [];
  const policy: Policy = {
    name: 'least_load',
    select(workers: readonly Worker[]) {
      lists.push(workers);
      let best: Worker | undefined;
      for (const w of workers)
        if (w.isAvailable() && (best === undefined || w.load < best.load)) best = w;
      return best;
    },
    explain: () => ({ branch: 'inner', matched: undefined }),
    updateLoads: () => calls.push('updateLoads'),
    removeWorker: (url) => calls.push(`removeWorker ${url}`),
    workerRestarted: (url) => calls.push(`workerRestarted ${url}`),
    reset: () => calls.push('reset'),
    close: () => calls.push('close'),
  };
  return { policy, lists, calls, last: () => lists[lists.length - 1]! };
}

function reports(entries: Record<string, LoadReport['adapters']>): Map<string, LoadReport> {
  return new Map(
    Object.entries(entries).map(([url, adapters]) => [
      url,
      adapters === undefined ? {} : { adapters },
    ]),
  );
}

function urls(list: readonly Worker[]): string[] {
  return list.map((w) => w.url).sort();
}

const LORA: SelectRequest = { model: 'sql-lora', text: 'select' };

describe('adapterAware: which requests it narrows', () => {
  it('hands base-model requests and requests without a model to the inner policy untouched', async () => {
    const workers = await fleet(4);
    const inner = recorder();
    const policy = adapterAware(inner.policy);
    policy.updateLoads!(reports({ [workers[1]!.url]: { running: ['sql-lora'], waiting: [] } }));

    policy.select(workers, { model: 'base', text: 'x' });
    policy.select(workers, { text: 'x' });

    expect(inner.lists).toEqual([workers, workers]);
  });

  it("with 'reported', narrows only models some report listed as adapters", async () => {
    const workers = await fleet(4);
    const inner = recorder();
    const policy = adapterAware(inner.policy);

    policy.select(workers, LORA);
    expect(inner.last()).toBe(workers);

    policy.updateLoads!(reports({ [workers[2]!.url]: { running: ['sql-lora'], waiting: [] } }));
    policy.select(workers, LORA);
    expect(urls(inner.last())).toEqual([workers[2]!.url]);
  });

  it("with 'all' or a predicate, narrows the models it names", async () => {
    const workers = await fleet(4);
    const inner = recorder();
    const policy = adapterAware(inner.policy, {
      adapters: (m) => m.endsWith('-lora'),
      placements: 1,
    });

    policy.select(workers, LORA);
    policy.select(workers, { model: 'base' });

    expect(inner.lists[0]).toHaveLength(1);
    expect(inner.lists[1]).toBe(workers);
  });
});

describe('adapterAware: tiers', () => {
  it('prefers the workers whose report lists the adapter: resident, else running or waiting', async () => {
    const workers = await fleet(5);
    const [a, b, c, d] = workers.map((w) => w.url);
    const inner = recorder();
    const policy = adapterAware(inner.policy);
    policy.updateLoads!(
      reports({
        [a!]: { running: [], waiting: ['sql-lora'] },
        [b!]: { running: [], waiting: [], resident: ['sql-lora'] },
        // Residency is listed: a waiting adapter there is not resident.
        [c!]: { running: [], waiting: ['sql-lora'], resident: [] },
        [d!]: { running: ['other'], waiting: [] },
      }),
    );

    policy.select(workers, LORA);

    expect(urls(inner.last())).toEqual([a, b]);
  });

  it('remembers where it sent an adapter for recentMs, then places it again', async () => {
    const workers = await fleet(6);
    let now = 0;
    const inner = recorder();
    const policy = adapterAware(inner.policy, {
      adapters: 'all',
      recentMs: 1_000,
      clock: () => now,
    });

    const first = policy.select(workers, LORA)!;
    const placements = inner.last();
    now = 999;
    policy.select(workers, LORA);
    const held = inner.last();
    now = 1_999; // 1,000 ms after the last send (which refreshed the memory)
    policy.select(workers, LORA);

    expect(placements).toHaveLength(2);
    expect(held).toEqual([first]);
    expect(inner.last()).toEqual(placements);
  });

  it('forgets what a restarted or removed worker held', async () => {
    const workers = await fleet(4);
    const inner = recorder();
    const policy = adapterAware(inner.policy, { adapters: 'all', placements: 1 });
    const placed = topByWeight(workers, 'sql-lora', 1)[0]!;
    const holder = workers.find((w) => w !== placed)!;
    policy.updateLoads!(
      reports({ [holder.url]: { running: [], waiting: [], resident: ['sql-lora'] } }),
    );
    policy.select(workers, LORA);
    expect(inner.last()).toEqual([holder]);

    policy.workerRestarted!(holder.url, { detectedBy: 'health' });
    policy.select(workers, LORA);

    expect(inner.last()).toEqual([placed]);
  });

  it('places a new adapter on the top `placements` workers by rendezvous weight, free slots first', async () => {
    const workers = await fleet(8);
    const inner = recorder();
    const policy = adapterAware(inner.policy, { adapters: 'all', placements: 3 });
    const ranked = topByWeight(workers, 'sql-lora', 8);
    // The two of highest weight are full; every other has a free slot.
    const full = { running: ['x', 'y'], waiting: [], maxAdapters: 2 };
    const free = { running: ['x'], waiting: [], maxAdapters: 2 };
    policy.updateLoads!(
      reports(Object.fromEntries(ranked.map((w, i) => [w.url, i < 2 ? full : free]))),
    );

    policy.select(workers, LORA);

    expect(urls(inner.last())).toEqual(urls(ranked.slice(2, 5)));
  });

  it('without slot counts, places a new adapter on the `placements` workers of highest weight', async () => {
    const workers = await fleet(8);
    const inner = recorder();
    const policy = adapterAware(inner.policy, { adapters: 'all' });

    policy.select(workers, LORA);

    expect(urls(inner.last())).toEqual(urls(topByWeight(workers, 'sql-lora', 2)));
  });
});

describe('adapterAware: load spill', () => {
  async function spillCase(holderLoad: number) {
    const workers = await fleet(4);
    const holder = workers[3]!;
    for (let i = 0; i < holderLoad; i++) holder.acquire();
    const inner = recorder();
    const policy = adapterAware(inner.policy, { spillLoad: 4, placements: 1 });
    policy.updateLoads!(reports({ [holder.url]: { running: ['sql-lora'], waiting: [] } }));
    policy.select(workers, LORA);
    return { holder, list: inner.last(), workers };
  }

  it('keeps the holding tier while its least-loaded worker is under spillLoad above the least-loaded candidate', async () => {
    const { holder, list } = await spillCase(3);

    expect(list).toEqual([holder]);
  });

  it('widens to the placements, then to everyone, at spillLoad more', async () => {
    const { holder, list, workers } = await spillCase(4);
    const top = topByWeight(
      workers.filter((w) => w !== holder),
      'sql-lora',
      1,
    )[0]!;

    expect(list).toEqual([holder, top]);
  });

  it('widens past an unavailable holding tier', async () => {
    const workers = await fleet(3);
    workers[0]!.circuitBreaker.forceOpen();
    const inner = recorder();
    const policy = adapterAware(inner.policy, { placements: 1 });
    policy.updateLoads!(reports({ [workers[0]!.url]: { running: ['sql-lora'], waiting: [] } }));

    const picked = policy.select(workers, LORA);

    expect(inner.last()).toHaveLength(2);
    expect(picked).not.toBe(workers[0]);
  });
});

describe('adapterAware: the narrowed lists keep their identity', () => {
  it('hands the inner policy the same array until a report changes the tiers', async () => {
    const workers = await fleet(4);
    const inner = recorder();
    const policy = adapterAware(inner.policy);
    const listed = reports({ [workers[1]!.url]: { running: ['sql-lora'], waiting: [] } });
    policy.updateLoads!(listed);

    policy.select(workers, LORA);
    policy.select(workers, LORA);
    policy.updateLoads!(listed); // same adapters: same tiers
    policy.select(workers, LORA);
    policy.updateLoads!(reports({ [workers[2]!.url]: { running: ['sql-lora'], waiting: [] } }));
    policy.select(workers, LORA);

    expect(inner.lists[1]).toBe(inner.lists[0]);
    expect(inner.lists[2]).toBe(inner.lists[0]);
    expect(inner.lists[3]).not.toBe(inner.lists[0]);
    expect(urls(inner.lists[3]!)).toEqual([workers[1]!.url, workers[2]!.url].sort());
  });
});

describe('adapterAware: transparent to routers, shared state and KV feeds', () => {
  it('forwards explain, updateLoads, removeWorker, workerRestarted, reset, close and the name', async () => {
    const inner = recorder();
    const policy = adapterAware(inner.policy);

    policy.updateLoads!(new Map());
    policy.removeWorker!('http://w0:8000');
    policy.workerRestarted!('http://w1:8000', { detectedBy: 'health' });
    policy.reset!();
    policy.close!();

    expect(policy.name).toBe('least_load');
    expect(policy.explain!()).toEqual({ branch: 'inner', matched: undefined });
    expect(inner.calls).toEqual([
      'updateLoads',
      'removeWorker http://w0:8000',
      'workerRestarted http://w1:8000',
      'reset',
      'close',
    ]);
  });

  it("offers cache_aware's sharing port, KV-key path and prefill charge", async () => {
    const workers = await fleet(3);
    const inner = createPolicy('cache_aware', { pageSize: 32 });
    const policy = adapterAware(inner);

    const port = sharingOf(policy);
    expect(port?.kind).toBe('prefixes');
    expect(sharingOf(policy)).toBe(port);
    expect(hasKvKeyPath(policy)).toBe(true);
    expect((policy as unknown as { kvPageSize: number }).kvPageSize).toBe(32);

    const picked = policy.select(workers, { text: 'a prompt of some length', model: 'base' });
    expect(prefillChargeOf(policy)).toBe(prefillChargeOf(inner));
    expect(prefillChargeOf(policy)?.worker).toBe(picked);
  });

  it('takes another router’s placement of an adapter, told through the port, as a send', async () => {
    const workers = await fleet(4);
    const policy = adapterAware(createPolicy('cache_aware'), { adapters: 'all' });
    const port = sharingOf(policy)!;
    if (port.kind !== 'prefixes') throw new Error('prefix port expected');

    port.remember(workers, 'sql-lora', 'select', workers[3]!.url);

    expect(policy.select(workers, LORA)).toBe(workers[3]);
  });

  it('behind a Router: decision events carry the inner policy’s name and branch, and adapter requests stay on their worker', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (let i = 0; i < 4; i++) await registry.register({ url: `http://w${i}:8000` });
    const router = new Router({
      registry,
      transport: { probe: async () => true },
      policy: adapterAware(createPolicy('cache_aware'), { adapters: 'all' }),
      health: false,
    });
    const decisions: { policy: string; branch: string | undefined }[] = [];
    router.on('decision', (e) => decisions.push({ policy: e.policy, branch: e.branch }));
    router.start();

    const picked = ['one prompt', 'another prompt', 'a third'].map((text) => {
      const lease = router.select({ model: 'sql-lora', text })!;
      lease.release();
      return lease.worker.url;
    });

    expect(new Set(picked).size).toBe(1);
    expect(decisions[0]).toEqual({ policy: 'cache_aware', branch: 'cache_miss' });
    await router.close();
    registry.close();
  });

  it('offers nothing the inner policy does not', () => {
    const policy = adapterAware(createPolicy('round_robin'));

    expect(sharingOf(policy)).toBeUndefined();
    expect(hasKvKeyPath(policy)).toBe(false);
    expect(prefillChargeOf(policy)).toBeUndefined();
  });
});

describe('adapterAware: options', () => {
  it('refuses unknown options, bad values and a non-policy', () => {
    const inner = createPolicy('random');

    expect(() => adapterAware(inner, { recentMS: 1 } as never)).toThrow(
      /recentMS is not an option/,
    );
    expect(() => adapterAware(inner, { adapters: 'some' as never })).toThrow(/adapters/);
    expect(() => adapterAware(inner, { placements: 0 })).toThrow(/placements/);
    expect(() => adapterAware({} as Policy)).toThrow(/inner/);
  });

  it('bounds the adapter names it learns from reports', async () => {
    const workers = await fleet(2);
    const inner = recorder();
    const policy = adapterAware(inner.policy, { maxAdapters: 2 });
    policy.updateLoads!(reports({ [workers[0]!.url]: { running: ['a', 'b', 'c'], waiting: [] } }));

    policy.select(workers, { model: 'c' });

    expect(inner.last()).toBe(workers);
  });
});
