/**
 * Property tests of shared in-flight loads (src/shared/load-share.ts over a MemorySharedStore):
 *
 * 1. For any interleaving of selects, releases, first tokens, syncs, router crashes and clock
 *    steps across 2–3 routers sharing one store — `fc.scheduler()` deciding when each operation
 *    runs, when the store applies each sync and when its answer lands — once every live router
 *    has synced twice with the crashed routers past `liveMs`, every live router reads each
 *    worker's `load` (and `prefilling`) as the unreleased leases on it held by live routers.
 * 2. For any sequence that includes store restarts (the store's state lost), what the store
 *    holds for each router is exactly its local counts as of its last accepted sync, a sync
 *    after a restart is refused and a full one follows at once, rebuilding the contribution, and every
 *    router reads the others' stored counts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  MemorySharedStore,
  Router,
  SharedState,
  type WorkerLease,
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
import { runs } from '../helpers/fc-settings.js';
import { fakeClock } from '../support/fixtures.js';

const URLS: readonly string[] = ['http://w0:8000', 'http://w1:8000', 'http://w2:8000'];
const LIVE_MS = 1000;
const transport = { probe: async () => true };

/**
 * Forwards to `inner()`; with a scheduler, each sync waits for the scheduler before the store
 * applies it and again before its answer is delivered.
 */
class ForwardingStore implements SharedStore {
  readonly kind = 'forwarding';
  readonly #inner: () => SharedStore;
  readonly #scheduler: fc.Scheduler | undefined;

  constructor(inner: () => SharedStore, scheduler?: fc.Scheduler) {
    this.#inner = inner;
    this.#scheduler = scheduler;
  }

  async syncLoads(sync: LoadSync): Promise<LoadSyncReply> {
    const s = this.#scheduler;
    if (s === undefined) return this.#inner().syncLoads(sync);
    await s.schedule(Promise.resolve(), `store applies ${sync.routerId}`);
    const reply = await this.#inner().syncLoads(sync);
    return s.schedule(Promise.resolve(reply), `${sync.routerId} reads the answer`);
  }
  leave(routerId: string): Promise<void> {
    return this.#inner().leave(routerId);
  }
  getSession(key: string): Promise<SessionRecord | undefined> {
    return this.#inner().getSession(key);
  }
  putSession(key: string, primary: string, secondary: string | undefined, ttlMs: number) {
    return this.#inner().putSession(key, primary, secondary, ttlMs);
  }
  matchPrefix(blocks: readonly string[], ttlMs: number, maxHolders: number) {
    return this.#inner().matchPrefix(blocks, ttlMs, maxHolders) as Promise<readonly PrefixHolder[]>;
  }
  recordPrefix(blocks: readonly string[], url: string, ttlMs: number, maxHolders: number) {
    return this.#inner().recordPrefix(blocks, url, ttlMs, maxHolders);
  }
}

interface Member {
  readonly registry: WorkerRegistry;
  readonly router: Router;
  readonly shared: SharedState;
}

/** `n` started routers, each over its own registry of the same URLs, sharing `store`. */
async function members(n: number, store: SharedStore): Promise<Member[]> {
  const out: Member[] = [];
  for (let k = 0; k < n; k++) {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    for (const url of URLS) await registry.register({ url });
    const shared = new SharedState({
      store,
      routerId: `r${k}`,
      loads: { refreshMs: 0, liveMs: LIVE_MS, timeoutMs: 600_000 },
      sessions: false,
      prefixIndex: false,
    });
    const router = new Router({
      registry,
      transport,
      policy: 'least_load',
      health: false,
      loadPolling: false,
      reportLeakedLeases: false,
      shared,
    });
    router.start();
    out.push({ registry, router, shared });
  }
  return out;
}

async function closeAll(group: readonly Member[]): Promise<void> {
  for (const m of group) {
    await m.router.close();
    await m.registry.close();
  }
}

interface Held {
  readonly router: number;
  readonly lease: WorkerLease;
  prefilling: boolean;
}

/** Unreleased leases per URL (and of those, still prefilling) among `held` passing `keep`. */
function countsOf(
  held: readonly Held[],
  keep: (h: Held) => boolean,
): Map<string, [number, number]> {
  const out = new Map<string, [number, number]>();
  for (const h of held) {
    if (h.lease.released || !keep(h)) continue;
    const c = out.get(h.lease.worker.url) ?? [0, 0];
    c[0]++;
    if (h.prefilling) c[1]++;
    out.set(h.lease.worker.url, c);
  }
  return out;
}

function release(held: Held[], i: number): void {
  const h = held[i % Math.max(1, held.length)];
  h?.lease.release();
}

function firstToken(held: Held[], i: number): void {
  const h = held[i % Math.max(1, held.length)];
  if (h !== undefined && !h.lease.released && h.lease.firstToken()) h.prefilling = false;
}

// ----- 1. interleavings with crashes ---------------------------------------------------------

type Op =
  | { kind: 'select'; router: number }
  | { kind: 'release'; lease: number }
  | { kind: 'firstToken'; lease: number }
  | { kind: 'sync'; router: number }
  | { kind: 'crash'; router: number }
  | { kind: 'advance'; ms: number };

const router = fc.nat(2);
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('select' as const), router }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('release' as const), lease: fc.nat() }) },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('firstToken' as const), lease: fc.nat() }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('sync' as const), router }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('crash' as const), router }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('advance' as const),
      ms: fc.integer({ min: 0, max: LIVE_MS / 10 }),
    }),
  },
);

describe('shared loads (property)', () => {
  it('at quiescence every live router reads the leases held by live routers, whatever the interleaving', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 2, max: 3 }),
        fc.array(op, { minLength: 1, maxLength: 30 }),
        fc.scheduler(),
        async (n, ops, s) => {
          const clock = fakeClock(1_000_000);
          const memory = new MemorySharedStore({ clock: clock.read });
          const group = await members(n, new ForwardingStore(() => memory, s));
          const crashed = new Set<number>();
          const held: Held[] = [];
          const live = (k: number): boolean => !crashed.has(k);

          const run = async (o: Op): Promise<void> => {
            switch (o.kind) {
              case 'select': {
                const k = o.router % n;
                if (!live(k)) return;
                const lease = group[k]!.router.select();
                if (lease !== undefined) held.push({ router: k, lease, prefilling: true });
                return;
              }
              case 'release': {
                // A crashed router never releases: its leases are abandoned.
                const own = held.filter((h) => live(h.router));
                release(own, o.lease);
                return;
              }
              case 'firstToken':
                firstToken(
                  held.filter((h) => live(h.router)),
                  o.lease,
                );
                return;
              case 'sync':
                if (live(o.router % n)) await group[o.router % n]!.shared.sync();
                return;
              case 'crash':
                crashed.add(o.router % n);
                return;
              case 'advance':
                clock.now += o.ms;
                return;
            }
          };

          const running = ops.map((o) => s.schedule(Promise.resolve(o.kind)).then(() => run(o)));
          await s.waitFor(Promise.all(running));
          await s.waitIdle();

          // Quiescence: the crashed routers' last heartbeats are older than liveMs; each live
          // router syncs twice, so every one has read what every other one wrote.
          clock.now += LIVE_MS + 1;
          const alive = group.map((_, k) => k).filter(live);
          for (let round = 0; round < 2; round++)
            for (const k of alive) await s.waitFor(group[k]!.shared.sync());

          const expected = countsOf(held, (h) => live(h.router));
          for (const k of alive) {
            const registry = group[k]!.registry;
            let sum = 0;
            for (const url of URLS) {
              const worker = registry.getByUrl(url)!;
              const [load, prefilling] = expected.get(url) ?? [0, 0];
              expect(worker.load, `router ${k}, ${url}: load`).toBe(load);
              expect(worker.prefilling, `router ${k}, ${url}: prefilling`).toBe(prefilling);
              sum += load;
            }
            expect(viewOf(registry.getAll()).totalLoad(), `router ${k}: total`).toBe(sum);
          }
          await closeAll(group);
        },
      ),
      runs(150, 2_000),
    );
  });
});

// ----- 2. store restarts ---------------------------------------------------------------------

type RestartOp =
  | { kind: 'select'; router: number }
  | { kind: 'release'; lease: number }
  | { kind: 'firstToken'; lease: number }
  | { kind: 'sync'; router: number }
  | { kind: 'restart' };

const restartOp: fc.Arbitrary<RestartOp> = fc.oneof(
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('select' as const), router }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('release' as const), lease: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('firstToken' as const), lease: fc.nat() }),
  },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('sync' as const), router }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('restart' as const) }) },
);

/** What the model says the store holds for one router. */
interface Share {
  /** The store holds this router's contribution (it was not lost since the last full sync). */
  held: boolean;
  /** The router's next sync is a full one. */
  full: boolean;
  /** Its counts as of its last accepted sync (empty while not held). */
  counts: Map<string, [number, number]>;
  rebuilds: number;
}

type Counts = Map<string, [number, number]>;

function add(into: Counts, from: Counts): void {
  for (const [url, [l, p]] of from) {
    const c = into.get(url) ?? [0, 0];
    into.set(url, [c[0] + l, c[1] + p]);
  }
}

const asRecord = (counts: Counts): Record<string, [number, number]> =>
  Object.fromEntries([...counts].filter(([, [l, p]]) => l > 0 || p > 0).sort());

describe('shared loads across store restarts (property)', () => {
  it("the store holds each router's counts as of its last accepted sync, rebuilt after a restart", async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.array(restartOp, { minLength: 1, maxLength: 40 }),
        async (n, ops) => {
          const clock = fakeClock(1_000_000);
          let memory = new MemorySharedStore({ clock: clock.read });
          const group = await members(n, new ForwardingStore(() => memory));
          const held: Held[] = [];
          const local = (k: number): Counts => countsOf(held, (h) => h.router === k);
          // The start's full sync, then a partial one.
          for (const m of group) await m.shared.sync();
          const model: Share[] = group.map(() => ({
            held: true,
            full: false,
            counts: new Map(),
            rebuilds: 1,
          }));

          /** What an observer reads from the store: every router's stored counts, summed. */
          const stored = async (): Promise<Counts> => {
            const reply = await memory.syncLoads({
              routerId: 'observer',
              epoch: 'observer',
              full: true,
              entries: [],
              liveMs: LIVE_MS,
            });
            return new Map(reply.loads.map((e) => [e.url, [e.load, e.prefilling]]));
          };

          const check = async (k: number): Promise<void> => {
            const all: Counts = new Map();
            for (const share of model) add(all, share.counts);
            expect(asRecord(await stored()), 'the store').toEqual(asRecord(all));
            expect(group[k]!.shared.stats().loads.rebuilds, `r${k}: rebuilds`).toBe(
              model[k]!.rebuilds,
            );
            // Router k reads its own leases plus what the store holds for the others.
            const others: Counts = new Map();
            model.forEach((share, j) => {
              if (j !== k) add(others, share.counts);
            });
            add(others, local(k));
            for (const url of URLS) {
              const worker = group[k]!.registry.getByUrl(url)!;
              const [load, prefilling] = others.get(url) ?? [0, 0];
              expect([worker.load, worker.prefilling], `r${k}, ${url}`).toEqual([load, prefilling]);
            }
          };

          const sync = async (k: number): Promise<void> => {
            await group[k]!.shared.sync();
            const share = model[k]!;
            if (share.full) {
              share.full = false;
              share.held = true;
              share.rebuilds++;
              share.counts = local(k);
            } else if (share.held) {
              share.counts = local(k);
            } else {
              // Refused (the store lost it): a full sync follows at once, in the same call.
              share.held = true;
              share.rebuilds++;
              share.counts = local(k);
            }
            await check(k);
          };

          for (const o of ops) {
            if (o.kind === 'select') {
              const k = o.router % n;
              const lease = group[k]!.router.select();
              if (lease !== undefined) held.push({ router: k, lease, prefilling: true });
            } else if (o.kind === 'release') release(held, o.lease);
            else if (o.kind === 'firstToken') firstToken(held, o.lease);
            else if (o.kind === 'sync') await sync(o.router % n);
            else {
              memory = new MemorySharedStore({ clock: clock.read });
              for (const share of model) {
                share.held = false;
                share.counts = new Map();
              }
            }
          }
          // Two syncs each bring every contribution back, whatever was lost.
          for (let round = 0; round < 2; round++) for (let k = 0; k < n; k++) await sync(k);
          const all: Counts = new Map();
          for (let k = 0; k < n; k++) add(all, local(k));
          expect(asRecord(await stored())).toEqual(asRecord(all));
          await closeAll(group);
        },
      ),
      runs(150, 2_000),
    );
  });
});
