/**
 * Router replicas for the shared-state tests on a real `redis-server`: each a started `Router`
 * over a registry of its own (the same worker URLs in every one), with a `SharedState` over a
 * `RedisSharedStore` of its own. A {@link Teardown} closes what a test built, last built first,
 * whether the test passed or not.
 */
import { Redis } from 'ioredis';
import {
  type Policy,
  type PolicyName,
  Router,
  SharedState,
  type SharedStateEvent,
  type SharedStateOptions,
  type Worker,
  type WorkerLease,
  WorkerRegistry,
  type WorkerStatus,
} from '../../src/index.js';
import { RedisSharedStore, type RedisSharedStoreOptions } from '../../src/redis/index.js';
import { workerInternals } from '../../src/workers/worker.js';
import { hasRedisServer, type RedisServer, startRedis } from '../support/redis-server.js';

/**
 * Whether to skip the suites: only where `redis-server` is not installed, and never in CI
 * (`CI=true`), where a missing server must fail them.
 */
export const noRedis = !hasRedisServer() && process.env.CI !== 'true';

/** Steps that undo what a test built, run last first; every step runs even when one throws. */
export class Teardown {
  readonly #steps: (() => unknown)[] = [];

  add(step: () => unknown): void {
    this.#steps.push(step);
  }

  async run(): Promise<void> {
    let first: unknown;
    for (let step = this.#steps.pop(); step !== undefined; step = this.#steps.pop()) {
      try {
        await step();
      } catch (error) {
        first ??= error;
      }
    }
    if (first !== undefined) throw first;
  }
}

/** A `redis-server` stopped at teardown. */
export async function redisServer(
  t: Teardown,
  options: { readonly password?: string; readonly port?: number } = {},
): Promise<RedisServer> {
  const server = await startRedis(options);
  t.add(() => server.stop());
  return server;
}

/** A raw ioredis client for looking at the server behind the store's back. */
export async function adminClient(t: Teardown, url: string): Promise<Redis> {
  const client = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    commandTimeout: 5000,
  });
  client.on('error', () => {}); // each test asserts on what its commands answer
  t.add(() => client.disconnect());
  await client.connect();
  return client;
}

export interface Replica {
  readonly registry: WorkerRegistry;
  readonly router: Router;
  readonly shared: SharedState;
  readonly store: RedisSharedStore;
  /** Every `sharedState` observation of the router, in order. */
  readonly events: SharedStateEvent[];
  /** The codes of the router's logged warnings, in order. */
  readonly warnings: string[];
  /**
   * The leases {@link take} took, held until teardown: a lease nothing references is released
   * when it is garbage-collected, which would take its count away in the middle of a test.
   */
  readonly held: WorkerLease[];
}

export interface ReplicaOptions {
  /** Workers `http://w0:8000` … (default 4). */
  readonly workers?: number;
  /** The models every worker serves (default `['m']`). */
  readonly models?: readonly string[];
  readonly policy?: Policy | PolicyName;
  readonly policies?: Readonly<Record<string, Policy | PolicyName>>;
  /** Over the store's `url` (the server's) and `connectTimeoutMs` (5 s). */
  readonly store?: RedisSharedStoreOptions;
  /**
   * Over the replica's defaults: loads synced by hand (`refreshMs: 0`), and lookup deadlines
   * wide enough that a busy test machine never routes on local state by accident.
   */
  readonly shared?: Omit<SharedStateOptions, 'store'>;
}

/** The URL of worker `i`. */
export const workerUrl = (i: number): string => `http://w${i}:8000`;

/** A started router sharing state through its own store on `url`. */
export async function replica(
  t: Teardown,
  url: string,
  options: ReplicaOptions = {},
): Promise<Replica> {
  const store = await RedisSharedStore.create({ url, connectTimeoutMs: 5000, ...options.store });
  t.add(() => store.close());
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  t.add(() => registry.close());
  const models = options.models ?? ['m'];
  for (let i = 0; i < (options.workers ?? 4); i++)
    await registry.register({ url: workerUrl(i), models: [...models] });
  const shared = new SharedState({
    store,
    loads: { refreshMs: 0 },
    sessions: { deadlineMs: 2000 },
    prefixIndex: { deadlineMs: 2000 },
    ...options.shared,
  });
  const warnings: string[] = [];
  const router = new Router({
    registry,
    logger: { warn: (fields) => warnings.push(String(fields.code)) },
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
    policy: options.policy ?? 'round_robin',
    ...(options.policies === undefined ? {} : { policies: options.policies }),
    shared,
  });
  t.add(() => router.close());
  const events: SharedStateEvent[] = [];
  router.on('sharedState', (event) => {
    events.push(event);
  });
  const held: WorkerLease[] = [];
  t.add(() => {
    for (const lease of held) lease.release();
  });
  router.start();
  return { registry, router, shared, store, events, warnings, held };
}

/** `n` leases taken by the replica's `select` on model `m`, held until released or teardown. */
export function take(r: Replica, n: number): WorkerLease[] {
  const leases: WorkerLease[] = [];
  for (let i = 0; i < n; i++) {
    const lease = r.router.select({ model: 'm' });
    if (lease === undefined) throw new Error('no worker to take a lease on');
    leases.push(lease);
  }
  r.held.push(...leases);
  return leases;
}

/** Leases per worker URL. */
export function countByUrl(leases: readonly WorkerLease[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const lease of leases) counts.set(lease.worker.url, (counts.get(lease.worker.url) ?? 0) + 1);
  return counts;
}

/** Every worker's `load` as the replica sees it, by URL (workers at zero included). */
export function loadsOf(r: Replica): Map<string, number> {
  return new Map(r.registry.getAll().map((w) => [w.url, w.load]));
}

/** Leases per URL, with every worker of the replica present (zero when it has none). */
export function expectedLoads(
  r: Replica,
  counts: ReadonlyMap<string, number>,
): Map<string, number> {
  return new Map(r.registry.getAll().map((w) => [w.url, counts.get(w.url) ?? 0]));
}

/** The sum of every worker's `load` as the replica sees it. */
export function totalLoad(r: Replica): number {
  let sum = 0;
  for (const w of r.registry.getAll()) sum += w.load;
  return sum;
}

/** This process's own in-flight count on `worker` (what its shared state publishes). */
export function localLoad(worker: Worker): number {
  return workerInternals.runtimeOf(worker).localLoad;
}

/** Syncs every replica's loads once, in order. */
export async function syncAll(replicas: readonly Replica[]): Promise<void> {
  for (const r of replicas) await r.shared.sync();
}

/** Sets the status of the replica's worker at `url` in its own registry. */
export async function setStatus(r: Replica, url: string, status: WorkerStatus): Promise<void> {
  const worker = r.registry.getByUrl(url);
  if (worker === undefined) throw new Error(`no worker ${url}`);
  await r.registry.transitionStatus(worker.id, status);
}

/** `execute` with a send that answers 200: resolves to the URL of the worker that was sent it. */
export async function routedTo(
  r: Pick<Replica, 'router'>,
  request: Parameters<Router['execute']>[0],
): Promise<string> {
  const { url } = await r.router.execute(request, async (worker) => ({
    status: 200,
    url: worker.url,
  }));
  return url;
}

/** Whether the replica observed `part` turning `state`. */
export function observed(
  r: Replica,
  part: SharedStateEvent['part'],
  state: SharedStateEvent['state'],
): boolean {
  return r.events.some((e) => e.part === part && e.state === state);
}

/** The replica's last observation of `part`. */
export function lastOf(r: Replica, part: SharedStateEvent['part']): SharedStateEvent | undefined {
  return r.events.findLast((e) => e.part === part);
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Calls `check` until it holds or `withinMs` has passed (a bound, never an expectation of
 * speed), pausing 20 ms between calls. Resolves whether it held.
 */
export async function until(
  check: () => boolean | Promise<boolean>,
  withinMs = 10_000,
): Promise<boolean> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() >= deadline) return false;
    await sleep(20);
  }
}

/** `length` token ids from `seed` (xorshift32): two seeds share no prefix beyond chance. */
export function tokens(seed: number, length: number): number[] {
  let state = (seed * 2_654_435_761) >>> 0 || 1;
  const out: number[] = [];
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out.push((state >>> 0) % 50_000);
  }
  return out;
}
