/**
 * `SharedState` (src/shared/shared-state.ts) with real Routers over a `MemorySharedStore`: its
 * options, one router per instance, what `close()` withdraws, `stats()`, and what a store that
 * fails or never answers does to each part (degraded, reported, nothing waits or rejects, and
 * back to ok once the store answers).
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  createPolicy,
  MemorySharedStore,
  type Policy,
  Router,
  type SelectRequest,
  SharedState,
  type SharedStateEvent,
  type SharedStateOptions,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import type {
  LoadSync,
  LoadSyncReply,
  PrefixHolder,
  SessionRecord,
  SharedStore,
} from '../../src/shared/shared-store.js';
import { viewOf } from '../../src/workers/candidate-view.js';
import { throwsCode } from '../support/fixtures.js';

const URLS = ['http://w0:8000', 'http://w1:8000'] as const;
const transport = { probe: async () => true };
const send = async (worker: Worker) => ({ status: 200, url: worker.url });

type Mode = 'answer' | 'fail' | 'hang';
type Method = Exclude<keyof SharedStore, 'kind'>;

/**
 * A store that answers from a `MemorySharedStore`, rejects every call (`fail`), or returns
 * promises that never settle (`hang`); it counts the calls of each method.
 */
class ControlledStore implements SharedStore {
  readonly kind = 'controlled';
  readonly inner = new MemorySharedStore();
  readonly calls: Record<Method, number> = {
    syncLoads: 0,
    leave: 0,
    getSession: 0,
    putSession: 0,
    matchPrefix: 0,
    recordPrefix: 0,
  };
  mode: Mode = 'answer';

  #run<T>(method: Method, call: () => Promise<T>): Promise<T> {
    this.calls[method]++;
    if (this.mode === 'fail') return Promise.reject(new Error('store down'));
    if (this.mode === 'hang') return new Promise<T>(() => {});
    return call();
  }

  syncLoads(sync: LoadSync): Promise<LoadSyncReply> {
    return this.#run('syncLoads', () => this.inner.syncLoads(sync));
  }
  leave(routerId: string): Promise<void> {
    return this.#run('leave', () => this.inner.leave(routerId));
  }
  getSession(key: string): Promise<SessionRecord | undefined> {
    return this.#run('getSession', () => this.inner.getSession(key));
  }
  putSession(key: string, primary: string, secondary: string | undefined, ttlMs: number) {
    return this.#run('putSession', () => this.inner.putSession(key, primary, secondary, ttlMs));
  }
  matchPrefix(blocks: readonly string[], ttlMs: number, maxHolders: number) {
    return this.#run<readonly PrefixHolder[]>('matchPrefix', () =>
      this.inner.matchPrefix(blocks, ttlMs, maxHolders),
    );
  }
  recordPrefix(blocks: readonly string[], url: string, ttlMs: number, maxHolders: number) {
    return this.#run('recordPrefix', () => this.inner.recordPrefix(blocks, url, ttlMs, maxHolders));
  }
}

interface Replica {
  readonly registry: WorkerRegistry;
  readonly router: Router;
  readonly shared: SharedState;
  readonly events: SharedStateEvent[];
  /** The codes the router's logger was given at `warn`. */
  readonly warnings: string[];
  readonly manual: Policy;
  readonly cacheAware: Policy;
}

const opened: Replica[] = [];

afterEach(async () => {
  for (const r of opened.splice(0)) {
    await r.router.close();
    await r.registry.close();
  }
});

/**
 * A started router over URLS (wildcard workers) with this shared state: `manual` for model `s`
 * (a pick of `random` chooses among the available workers), `cache_aware` placing misses on the
 * least loaded worker for model `p`, and round robin otherwise.
 */
async function replica(
  shared: SharedState,
  options: { random?: () => number } = {},
): Promise<Replica> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const url of URLS) await registry.register({ url });
  const events: SharedStateEvent[] = [];
  const warnings: string[] = [];
  const manual = createPolicy('manual', { random: options.random ?? (() => 0) });
  const cacheAware = createPolicy('cache_aware', { missPlacement: 'least_load' });
  const router = new Router({
    registry,
    transport,
    health: false,
    loadPolling: false,
    policy: createPolicy('round_robin', { random: () => 0 }),
    policies: { s: manual, p: cacheAware },
    shared,
    reportLeakedLeases: false,
    logger: { warn: (fields) => warnings.push(String(fields.code)) },
  });
  router.on('sharedState', (event) => {
    events.push(event);
  });
  router.start();
  const r = { registry, router, shared, events, warnings, manual, cacheAware };
  opened.push(r);
  return r;
}

/** Shared state with no sync timer, short deadlines and a short probe interval. */
function sharedOver(store: SharedStore, options: Partial<SharedStateOptions> = {}): SharedState {
  return new SharedState({
    store,
    loads: { refreshMs: 0, timeoutMs: 20 },
    sessions: { deadlineMs: 5 },
    prefixIndex: { deadlineMs: 5, blockChars: 8 },
    probeMs: 1,
    ...options,
  });
}

const TEXT = 'the same long system prompt, then the question'.padEnd(64, '.');
const sessionRequest = (key: string): SelectRequest => ({ model: 's', routingKey: key });
const prefixRequest: SelectRequest = { model: 'p', text: TEXT };

const loadOf = (r: Replica, url: string): number => r.registry.getByUrl(url)!.load;
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs `step` until `done()` holds, at most `rounds` times (a bounded wait, never a timing). */
async function until(done: () => boolean, step: () => Promise<unknown>, rounds = 500) {
  for (let i = 0; i < rounds && !done(); i++) {
    await sleep(2);
    await step();
  }
  expect(done(), 'reached within the bounded number of rounds').toBe(true);
}

describe('SharedState options', () => {
  const store = new MemorySharedStore();

  it.each([
    ['no options', undefined],
    ['no store', {}],
    ['a store that is not one', { store: {} }],
    ['a store without matchPrefix', { store: { kind: 'x', syncLoads: async () => ({}) } }],
    ['a null store', { store: null }],
  ])('rejects %s with INVALID_ARGUMENT naming the store', (_, options) => {
    const error = throwsCode(() => new SharedState(options as never), 'INVALID_ARGUMENT');
    if (options !== undefined) expect(error.message).toContain('store');
  });

  it.each([
    ['loads.liveMs 0', { loads: { liveMs: 0 } }, 'loads.liveMs'],
    ['loads.liveMs -1', { loads: { liveMs: -1 } }, 'loads.liveMs'],
    ['loads.liveMs 1.5', { loads: { liveMs: 1.5 } }, 'loads.liveMs'],
    ['loads.liveMs as text', { loads: { liveMs: '2000' } }, 'loads.liveMs'],
    ['loads true', { loads: true }, 'loads'],
    ['an unknown option', { capacity: 3 }, 'capacity'],
    ['an unknown loads option', { loads: { every: 5 } }, 'loads.every'],
    ['sessions.deadlineMs 0', { sessions: { deadlineMs: 0 } }, 'sessions.deadlineMs'],
    ['prefixIndex.maxHolders 0', { prefixIndex: { maxHolders: 0 } }, 'prefixIndex.maxHolders'],
    ['degradeAfter 0', { degradeAfter: 0 }, 'degradeAfter'],
    ['an empty routerId', { routerId: '' }, 'routerId'],
    ['maxPendingWrites 0', { maxPendingWrites: 0 }, 'maxPendingWrites'],
  ])('rejects %s with INVALID_ARGUMENT naming it', (_, options, field) => {
    const error = throwsCode(
      () => new SharedState({ store, ...options } as never),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toContain(field);
  });

  it('takes its id and store as given, and an id of its own otherwise', () => {
    const named = new SharedState({ store, routerId: 'edge-1' });
    expect([named.routerId, named.store]).toEqual(['edge-1', store]);
    const a = new SharedState({ store });
    const b = new SharedState({ store });
    expect(a.routerId).not.toBe(b.routerId);
  });

  it('turns each part off with false: syncs do nothing, the counters stay at zero', async () => {
    const inner = new ControlledStore();
    const shared = new SharedState({
      store: inner,
      loads: false,
      sessions: false,
      prefixIndex: false,
    });
    const r = await replica(shared);
    await shared.sync();
    await r.router.execute(sessionRequest('k'), send);
    await r.router.execute(prefixRequest, send);
    await shared.flush();
    expect(Object.values(inner.calls).every((n) => n === 0)).toBe(true);
  });

  it.each([
    ['an empty object', {}],
    ['a number', 5],
    ['an object missing close', { attach() {}, prepare() {}, placed() {} }],
  ])('is required of a Router as a SharedState: %s is rejected', async (_, shared) => {
    const registry = await WorkerRegistry.create();
    throwsCode(
      () => new Router({ registry, transport, shared: shared as never }),
      'INVALID_ARGUMENT',
    );
    await registry.close();
  });
});

describe('one SharedState per router', () => {
  it('throws INVALID_ARGUMENT when a second router starts with it', async () => {
    const shared = sharedOver(new MemorySharedStore());
    await replica(shared);
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const second = new Router({ registry, transport, shared, health: false, loadPolling: false });
    throwsCode(() => second.start(), 'INVALID_ARGUMENT');
    await registry.close();
  });

  it("a router that failed to start leaves the other router's shared state running when it closes", async () => {
    const store = new MemorySharedStore();
    const shared = sharedOver(store);
    const a = await replica(shared);
    const b = await replica(sharedOver(store));
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const second = new Router({ registry, transport, shared, health: false, loadPolling: false });
    throwsCode(() => second.start(), 'INVALID_ARGUMENT');
    await second.close();
    await registry.close();
    const lease = a.router.select({})!;
    await a.shared.sync();
    await b.shared.sync();
    expect(loadOf(b, lease.worker.url)).toBe(1);
    lease.release();
  });

  it('throws when a second router on the same registry starts with it', async () => {
    const shared = sharedOver(new MemorySharedStore());
    const a = await replica(shared);
    const second = new Router({
      registry: a.registry,
      transport,
      shared,
      health: false,
      loadPolling: false,
    });
    throwsCode(() => second.start(), 'INVALID_ARGUMENT');
    await second.close();
  });

  it('close() still writes a session placed just before it', async () => {
    const store = new MemorySharedStore();
    const a = await replica(sharedOver(store), { random: () => 0 });
    const lease = a.router.select(sessionRequest('late-user'))!;
    lease.release();
    opened.splice(opened.indexOf(a), 1);
    await a.router.close();
    await a.registry.close();
    const b = await replica(sharedOver(store), { random: () => 0.999 });
    const served = await b.router.execute(sessionRequest('late-user'), send);
    expect(served.url).toBe(lease.worker.url);
  });
});

describe('shared loads', () => {
  it("folds the other routers' in-flight counts into each worker's load", async () => {
    const store = new MemorySharedStore();
    const a = await replica(sharedOver(store, { routerId: 'a' }));
    const b = await replica(sharedOver(store, { routerId: 'b' }));
    const leases = [a.router.select(), a.router.select(), a.router.select()];
    const onW0 = leases.filter((l) => l?.worker.url === URLS[0]).length;
    await a.shared.sync();
    await b.shared.sync();
    expect([loadOf(b, URLS[0]), loadOf(b, URLS[1])]).toEqual([onW0, 3 - onW0]);
    expect(viewOf(b.registry.getAll()).totalLoad()).toBe(3);
    for (const lease of leases) lease?.release();
    await a.shared.sync();
    await b.shared.sync();
    expect([loadOf(b, URLS[0]), loadOf(b, URLS[1])]).toEqual([0, 0]);
    expect(viewOf(b.registry.getAll()).totalLoad()).toBe(0);
  });

  it("close() withdraws this router's counts, and clears the others' from its workers", async () => {
    const store = new MemorySharedStore();
    const a = await replica(sharedOver(store, { routerId: 'a' }));
    const b = await replica(sharedOver(store, { routerId: 'b' }));
    const fromA = a.registry.getByUrl(URLS[0])!.acquire();
    const fromB = b.registry.getByUrl(URLS[1])!.acquire();
    await a.shared.sync();
    await b.shared.sync();
    await a.shared.sync();
    expect([loadOf(a, URLS[0]), loadOf(a, URLS[1])]).toEqual([1, 1]);
    expect([loadOf(b, URLS[0]), loadOf(b, URLS[1])]).toEqual([1, 1]);
    expect(store.routerCount).toBe(2);

    await a.router.close();
    expect(store.routerCount).toBe(1);
    // a's own lease is still counted on its worker; b's request no longer is.
    expect([loadOf(a, URLS[0]), loadOf(a, URLS[1])]).toEqual([1, 0]);
    await b.shared.sync();
    expect([loadOf(b, URLS[0]), loadOf(b, URLS[1])]).toEqual([0, 1]);
    expect(viewOf(b.registry.getAll()).totalLoad()).toBe(1);
    fromA.release();
    fromB.release();
    await a.shared.close(); // idempotent
  });

  it('rebuilds its contribution after the store lost it', async () => {
    const store = new ControlledStore();
    const a = await replica(sharedOver(store, { routerId: 'a' }));
    const lease = a.router.select();
    await a.shared.sync();
    expect(a.shared.stats().loads.rebuilds).toBe(1);
    await store.inner.leave('a'); // the store forgets a's counts (a restart, an expiry)
    await a.shared.sync(); // refused: a learns it must send everything
    await a.shared.sync();
    expect(a.shared.stats().loads.rebuilds).toBe(2);
    const observer = await store.inner.syncLoads({
      routerId: 'observer',
      epoch: 'o',
      full: true,
      entries: [],
      liveMs: 2000,
    });
    expect(observer.loads).toEqual([{ url: lease!.worker.url, load: 1, prefilling: 1 }]);
  });

  it('keeps the group totals right when a worker is removed and registered again between syncs', async () => {
    const store = new MemorySharedStore();
    const a = await replica(sharedOver(store, { routerId: 'a' }));
    const b = await replica(sharedOver(store, { routerId: 'b' }));
    const held = [a.router.select(), a.router.select()];
    expect(held.every((l) => l !== undefined)).toBe(true);
    await a.shared.sync();
    await b.shared.sync();
    expect(viewOf(b.registry.getAll()).totalLoad()).toBe(2);
    const w0 = b.registry.getByUrl(URLS[0])!;
    await b.registry.remove(w0.id);
    await b.registry.register({ url: URLS[0] });
    await b.shared.sync();
    expect(viewOf(b.registry.getAll()).totalLoad()).toBe(2);
    for (const lease of held) lease?.release();
    await a.shared.sync();
    await b.shared.sync();
    expect(viewOf(b.registry.getAll()).totalLoad()).toBe(0);
  });
});

describe('SharedState.stats', () => {
  it('reports every part with its state and counters, as a copy', async () => {
    const store = new MemorySharedStore();
    await replica(sharedOver(store, { routerId: 'other' }));
    const shared = sharedOver(store, { routerId: 'me' });
    const r = await replica(shared);
    await shared.sync(); // runs after the sync the start began
    await r.router.execute(sessionRequest('user-1'), send);
    await shared.flush();
    const lookup = { timeouts: 0, failures: 0, dropped: 0, ignored: 0 };
    const stats = shared.stats();
    expect(stats).toEqual({
      routerId: 'me',
      loads: {
        syncs: 2,
        failures: 0,
        timeouts: 0,
        rebuilds: 1,
        routers: 1,
        ignored: 0,
        state: 'ok',
      },
      sessions: { state: 'ok', lookups: 1, hits: 0, writes: 1, ...lookup },
      prefixIndex: { state: 'ok', lookups: 0, hits: 0, writes: 0, ...lookup },
    });
    (stats.sessions as { lookups: number }).lookups = 99;
    expect(shared.stats().sessions.lookups).toBe(1);
  });
});

describe('sharing across routers', () => {
  it('keeps a session on its worker whichever router serves it', async () => {
    const store = new MemorySharedStore();
    const a = await replica(sharedOver(store), { random: () => 0 });
    const b = await replica(sharedOver(store), { random: () => 0.999 });
    const first = await a.router.execute(sessionRequest('user-7'), send);
    await a.shared.flush();
    const again = await b.router.execute(sessionRequest('user-7'), send);
    expect(again.url).toBe(first.url);
    expect(b.shared.stats().sessions.hits).toBe(1);
    // Without the shared session, b places a new key elsewhere.
    const fresh = await b.router.execute(sessionRequest('user-8'), send);
    expect(fresh.url).not.toBe(first.url);
  });

  it('sends a prefix to the worker another router sent it to', async () => {
    const store = new MemorySharedStore();
    const a = await replica(sharedOver(store, { loads: false }));
    const b = await replica(sharedOver(store, { loads: false }));
    const busy = a.registry.getByUrl(URLS[0])!.acquire(); // a's miss goes to w1
    const first = await a.router.execute(prefixRequest, send);
    expect(first.url).toBe(URLS[1]);
    await a.shared.flush();
    const again = await b.router.execute(prefixRequest, send);
    expect(again.url).toBe(URLS[1]);
    expect(b.shared.stats().prefixIndex.hits).toBe(1);
    busy.release();
  });
});

describe('values a store answers that no router wrote', () => {
  /** A store that answers what it is given, whatever the call. */
  function lyingStore(answers: {
    loads?: unknown;
    routers?: unknown;
    ignored?: unknown;
    session?: unknown;
    holders?: unknown;
  }): SharedStore {
    const inner = new MemorySharedStore();
    return {
      kind: 'lying',
      syncLoads: async (sync) => {
        await inner.syncLoads(sync);
        return {
          accepted: true,
          routers: (answers.routers ?? 1) as number,
          loads: (answers.loads ?? []) as LoadSyncReply['loads'],
          ...(answers.ignored === undefined ? {} : { ignored: answers.ignored as number }),
        };
      },
      leave: (id) => inner.leave(id),
      getSession: async () => answers.session as SessionRecord | undefined,
      putSession: (...args) => inner.putSession(...args),
      matchPrefix: async () => answers.holders as readonly PrefixHolder[],
      recordPrefix: (...args) => inner.recordPrefix(...args),
    };
  }

  it('ignores load entries out of bounds, counted, and keeps the valid ones', async () => {
    const store = lyingStore({
      loads: [
        { url: URLS[0], load: 3, prefilling: 1 },
        { url: URLS[1], load: 1e7, prefilling: 0 },
        { url: URLS[1], load: Number.POSITIVE_INFINITY, prefilling: 0 },
        { url: URLS[1], load: 2, prefilling: 5 },
        { url: URLS[1], load: -1, prefilling: 0 },
        { url: 7, load: 1, prefilling: 0 },
        null,
      ],
      routers: Number.NaN,
      ignored: 4,
    });
    const r = await replica(sharedOver(store));
    await r.shared.sync();
    const before = r.shared.stats().loads.ignored;
    await r.shared.sync();
    expect([loadOf(r, URLS[0]), loadOf(r, URLS[1])]).toEqual([3, 0]);
    // Per sync: 6 entries, the router count, and the store's own 4.
    expect(r.shared.stats().loads.ignored - before).toBe(11);
    expect(r.shared.stats().loads).toMatchObject({ state: 'ok', failures: 0, routers: 0 });
  });

  it('ignores a non-array answer to a sync, counted', async () => {
    const r = await replica(sharedOver(lyingStore({ loads: 'a lot' })));
    await r.shared.sync();
    const before = r.shared.stats().loads.ignored;
    await r.shared.sync();
    expect(r.shared.stats().loads.ignored - before).toBe(1);
    expect(r.shared.stats().loads).toMatchObject({ state: 'ok', failures: 0 });
  });

  it.each([
    ['a URL of 40,000 characters', { primary: `http://${'w'.repeat(40_000)}`, ttlLeftMs: 1000 }],
    ['a URL with a newline', { primary: 'http://w0:8000\nx', ttlLeftMs: 1000 }],
    ['no time left', { primary: URLS[0], ttlLeftMs: -1 }],
    ['a secondary that is not a string', { primary: URLS[0], secondary: 4, ttlLeftMs: 1000 }],
    ['not an object', 'http://w0:8000'],
  ])('ignores a session with %s, counted, and places the key itself', async (_, session) => {
    const r = await replica(sharedOver(lyingStore({ session }), { loads: false }));
    const served = await r.router.execute(sessionRequest('user-1'), send);
    expect(URLS).toContain(served.url);
    expect(r.shared.stats().sessions).toMatchObject({ hits: 0, ignored: 1 });
  });

  it('keeps at most maxHolders prefix holders of one run, recent and of the lookup, and counts the rest', async () => {
    const holder = (url: string, blocks: number, ageMs: number) => ({ url, blocks, ageMs });
    const store = lyingStore({
      holders: [
        holder(URLS[1], 8, 10), // the whole prompt: 8 blocks of 8 characters
        holder(URLS[0], 7, 10), // another run
        holder(URLS[0], 8, -5_000), // dated ahead
        holder(URLS[0], 8, 1e9), // older than the TTL
        holder(URLS[0], 99, 10), // deeper than the lookup
        holder(URLS[0], 8, 10), // beyond maxHolders (1)
      ],
    });
    const r = await replica(
      sharedOver(store, {
        loads: false,
        prefixIndex: { deadlineMs: 5, blockChars: 8, maxHolders: 1 },
      }),
    );
    const busy = r.registry.getByUrl(URLS[1])!.acquire(); // alone, r's miss would go to w0
    const served = await r.router.execute(prefixRequest, send);
    busy.release();
    expect(served.url).toBe(URLS[1]);
    expect(r.shared.stats().prefixIndex).toMatchObject({ hits: 1, ignored: 5 });
  });
});

describe('a store that fails', () => {
  it('degrades each part with the error, reported once, while routing goes on', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store);
    const r = await replica(shared);
    await shared.sync();
    store.mode = 'fail';
    await shared.sync();
    expect((await r.router.execute(sessionRequest('user-1'), send)).status).toBe(200);
    expect((await r.router.execute(prefixRequest, send)).status).toBe(200);
    expect((await r.router.execute({}, send)).status).toBe(200);
    await r.router.execute(sessionRequest('user-2'), send);
    await shared.sync();
    await shared.flush();
    expect(r.events).toEqual([
      { type: 'sharedState', part: 'loads', state: 'degraded', reason: 'store down' },
      { type: 'sharedState', part: 'sessions', state: 'degraded', reason: 'store down' },
      { type: 'sharedState', part: 'prefixIndex', state: 'degraded', reason: 'store down' },
    ]);
    expect(r.warnings).toEqual(Array(3).fill('FLEETROUTE_SHARED_STATE_DEGRADED'));
    const stats = shared.stats();
    expect([stats.loads.state, stats.sessions.state, stats.prefixIndex.state]).toEqual([
      'degraded',
      'degraded',
      'degraded',
    ]);
    expect(stats.loads.failures).toBe(2);
    expect(stats.sessions.failures).toBeGreaterThanOrEqual(1);
    // Placements made while degraded are not written: dropped, and counted.
    expect(stats.sessions.writes).toBe(0);
    expect(stats.sessions.dropped).toBe(2);
    expect(stats.prefixIndex.dropped).toBe(1);
    expect(store.calls.putSession + store.calls.recordPrefix).toBe(0);
  });

  it('comes back to ok once the store answers again', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store);
    const r = await replica(shared);
    store.mode = 'fail';
    await shared.sync();
    await r.router.execute(sessionRequest('user-1'), send);
    await r.router.execute(prefixRequest, send);
    store.mode = 'answer';
    await shared.sync();
    // While degraded, a probe lookup runs at most once per probeMs, in the background.
    await until(
      () => shared.stats().sessions.state === 'ok' && shared.stats().prefixIndex.state === 'ok',
      async () => {
        await r.router.prepare(sessionRequest('user-1'));
        await r.router.prepare(prefixRequest);
      },
    );
    expect(
      r.events
        .filter((e) => e.state === 'ok')
        .map((e) => e.part)
        .sort(),
    ).toEqual(['loads', 'prefixIndex', 'sessions']);
    // Ok again: placements are written.
    await r.router.execute(sessionRequest('user-9'), send);
    await shared.flush();
    expect(store.calls.putSession).toBe(1);
  });

  it('a store method that throws instead of rejecting degrades the part the same way', async () => {
    const store = new ControlledStore();
    const throwing: SharedStore = {
      kind: 'throwing',
      syncLoads: (sync) => store.syncLoads(sync),
      leave: (id) => store.leave(id),
      getSession: () => {
        throw new Error('sync throw');
      },
      putSession: (...args) => store.putSession(...args),
      matchPrefix: (...args) => store.matchPrefix(...args),
      recordPrefix: (...args) => store.recordPrefix(...args),
    };
    const shared = sharedOver(throwing);
    const r = await replica(shared);
    expect((await r.router.execute(sessionRequest('user-1'), send)).status).toBe(200);
    expect(r.events).toEqual([
      { type: 'sharedState', part: 'sessions', state: 'degraded', reason: 'sync throw' },
    ]);
  });
});

describe('a store that never answers', () => {
  it('times session lookups out, and after degradeAfter misses stops waiting on them', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store, { loads: false, probeMs: 3_600_000, degradeAfter: 3 });
    const r = await replica(shared);
    store.mode = 'hang';
    for (let i = 0; i < 3; i++)
      expect((await r.router.execute(sessionRequest(`user-${i}`), send)).status).toBe(200);
    expect(shared.stats().sessions).toMatchObject({ state: 'degraded', lookups: 3, timeouts: 3 });
    expect(r.events).toEqual([
      { type: 'sharedState', part: 'sessions', state: 'degraded', reason: 'timeout' },
    ]);
    // Degraded: no lookup is asked of the store, so there is nothing to wait for.
    expect(shared.prepare(sessionRequest('user-9'), r.manual)).toBeUndefined();
    for (let i = 3; i < 6; i++) await r.router.execute(sessionRequest(`user-${i}`), send);
    expect(store.calls.getSession).toBe(3);
    expect(shared.stats().sessions).toMatchObject({ lookups: 3, timeouts: 3 });
  });

  it('times prefix lookups out the same way', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store, { loads: false, probeMs: 3_600_000, degradeAfter: 2 });
    const r = await replica(shared);
    store.mode = 'hang';
    await r.router.execute(prefixRequest, send);
    expect(shared.stats().prefixIndex).toMatchObject({ state: 'ok', timeouts: 1 });
    await r.router.execute(prefixRequest, send);
    expect(shared.stats().prefixIndex).toMatchObject({ state: 'degraded', timeouts: 2 });
    expect(shared.prepare(prefixRequest, r.cacheAware)).toBeUndefined();
    await r.router.execute(prefixRequest, send);
    expect(store.calls.matchPrefix).toBe(2);
  });

  it('resets the count of misses when a lookup answers in time', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store, { loads: false, degradeAfter: 2 });
    const r = await replica(shared);
    store.mode = 'hang';
    await r.router.execute(sessionRequest('user-1'), send);
    store.mode = 'answer';
    await r.router.execute(sessionRequest('user-2'), send);
    store.mode = 'hang';
    await r.router.execute(sessionRequest('user-3'), send);
    expect(shared.stats().sessions).toMatchObject({ state: 'ok', timeouts: 2 });
  });

  it('times syncs out, degrades loads on the first, keeps routing, and still closes', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store, { degradeAfter: 2 });
    const r = await replica(shared);
    await shared.sync();
    store.mode = 'hang';
    const lease = r.router.select();
    await shared.sync();
    // degradeAfter counts lookup misses only: a sync past loads.timeoutMs degrades at once.
    expect(shared.stats().loads).toMatchObject({ state: 'degraded', timeouts: 1 });
    await shared.sync();
    expect(shared.stats().loads).toMatchObject({ state: 'degraded', timeouts: 2 });
    expect(r.events).toEqual([
      { type: 'sharedState', part: 'loads', state: 'degraded', reason: 'timeout' },
    ]);
    expect(r.router.select()).toBeDefined();
    lease?.release();
    await r.router.close(); // leave() never answers: close waits at most loads.timeoutMs
    expect(store.calls.leave).toBe(1);
  });

  it('holds flush() and close() up at most loads.timeoutMs for a write it never answers', {
    timeout: 10_000,
  }, async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store, { loads: { refreshMs: 0, timeoutMs: 20 } });
    const r = await replica(shared);
    await shared.sync();
    store.mode = 'hang';
    r.router.select(sessionRequest('user-1'))?.release();
    await shared.flush();
    expect(store.calls.putSession).toBe(1);
    await shared.flush(); // nothing queued: the unanswered write is not waited for again
    r.router.select(sessionRequest('user-2'))?.release();
    await shared.close(); // writes user-2's placement, waits for it no longer than the bound
    expect(store.calls.putSession).toBe(2);
    await r.router.close();
  });

  it('recovers each part once the store answers again', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store, { degradeAfter: 1 });
    const r = await replica(shared);
    store.mode = 'hang';
    await shared.sync();
    await r.router.execute(sessionRequest('user-1'), send);
    await r.router.execute(prefixRequest, send);
    expect(r.events.map((e) => e.state)).toEqual(['degraded', 'degraded', 'degraded']);
    store.mode = 'answer';
    await shared.sync();
    await until(
      () => r.events.filter((e) => e.state === 'ok').length === 3,
      async () => {
        await r.router.prepare(sessionRequest('user-1'));
        await r.router.prepare(prefixRequest);
      },
    );
    const stats = shared.stats();
    expect([stats.loads.state, stats.sessions.state, stats.prefixIndex.state]).toEqual([
      'ok',
      'ok',
      'ok',
    ]);
  });
});

describe('maxPendingWrites', () => {
  it('holds at most that many placements, dropping the ones beyond, counted', async () => {
    const store = new ControlledStore();
    const shared = sharedOver(store, { loads: false, maxPendingWrites: 2 });
    const r = await replica(shared);
    for (let i = 0; i < 5; i++) r.router.select(sessionRequest(`user-${i}`))?.release();
    expect(shared.stats().sessions.dropped).toBe(3);
    await shared.flush();
    expect(store.calls.putSession).toBe(2);
    expect(store.inner.sessionCount).toBe(2);
    expect(shared.stats().sessions).toMatchObject({ writes: 2, dropped: 3 });
    // The first two were kept: another router finds exactly those sessions.
    const other = await replica(sharedOver(store, { loads: false }));
    const found: number[] = [];
    for (let i = 0; i < 5; i++) {
      const before = other.shared.stats().sessions.hits;
      await other.router.prepare(sessionRequest(`user-${i}`));
      if (other.shared.stats().sessions.hits > before) found.push(i);
    }
    expect(found).toEqual([0, 1]);
  });
});
