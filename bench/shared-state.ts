/**
 * What shared state on Redis costs: (a) `router.select` with `SharedState` over a
 * `RedisSharedStore` (default options) against the same router without `shared`, in the same
 * run, at 64 and 2,048 workers, with the writes' flush measured apart (it runs after `select`,
 * on the next turn of the event loop); and the awaited `router.prepare` lookup. (b) The Redis
 * commands per second of four routers driven by timers, from the server's `INFO commandstats`
 * and `INFO stats`.
 *
 * Workloads: `cache_aware` on 1,024-token prompts whose first half is one of 16 shared system
 * prompts; `least_load` with no prompt; `manual` with 4,096 routing keys. A local `redis-server`
 * (persistence off) on a free loopback port; each case has its own namespace. Figures are
 * printed, never judged: the ratio and the flatness of loads-only traffic in the rate are the
 * ones to read.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Redis } from 'ioredis';
import {
  Router,
  type SelectRequest,
  SharedState,
  type WorkerLease,
  WorkerRegistry,
} from '../src/index.js';
import { RedisSharedStore } from '../src/redis/index.js';
import { startRedis } from '../test/support/redis-server.js';
import { seededRandom, sessionKeys, workerUrls } from './fixtures.js';
import { collectGarbage, emit, fmt, median, type Table } from './harness.js';

type Policy = 'cache_aware' | 'least_load' | 'manual';
const POLICIES: readonly Policy[] = ['cache_aware', 'least_load', 'manual'];
const FLEETS = [64, 2_048] as const;
const REQUESTS = 1_024;
const BATCH = 64;
const routerOptions = {
  transport: { probe: async () => true },
  logger: {}, // a degraded part is counted from the router's observations, not logged
  health: false,
  loadPolling: false,
  reportLeakedLeases: false,
} as const;

/** `count` requests for `policy` (see the module comment). */
function requests(policy: Policy, count: number, seed: number): SelectRequest[] {
  if (policy === 'least_load') return Array.from({ length: count }, () => ({ model: 'm' }));
  if (policy === 'manual')
    return sessionKeys(count, seed).map((routingKey) => ({ model: 'm', routingKey }));
  const random = seededRandom(seed);
  const token = () => Math.floor(random() * 50_000);
  const heads = Array.from({ length: 16 }, () => Uint32Array.from({ length: 512 }, token));
  return Array.from({ length: count }, (_, i) => {
    const tokens = new Uint32Array(1_024);
    tokens.set(heads[i % 16]!);
    for (let t = 512; t < 1_024; t++) tokens[t] = token();
    return { model: 'm', tokens };
  });
}

async function registryOf(workers: number): Promise<WorkerRegistry> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const url of workerUrls(workers)) await registry.register({ url, models: ['m'] });
  return registry;
}

const cpuUs = (since: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(since);
  return used.user + used.system;
};

/** One fresh shared state per router (a router starts and closes its own). */
async function sharedOf(url: string, namespace: string): Promise<SharedState> {
  return new SharedState({ store: await RedisSharedStore.create({ url, namespace }) });
}

/** Closes a router and its shared state's store. */
async function closeRouter(router: Router, shared: SharedState): Promise<void> {
  await router.close();
  await (shared.store as RedisSharedStore).close();
}

/** {@link BATCH} `select` + `release` from request `from` on; returns the ns taken. */
function batch(router: Router, reqs: readonly SelectRequest[], from: number): number {
  const start = process.hrtime.bigint();
  for (let k = 0; k < BATCH; k++) router.select(reqs[(from + k) % reqs.length])?.release();
  return Number(process.hrtime.bigint() - start);
}

function writesOf(shared: SharedState): number {
  const s = shared.stats();
  return s.sessions.writes + s.prefixIndex.writes;
}

/**
 * Select ns/op without and with shared state: 15 samples of about 40 ms each, the two routers'
 * batches alternating (ABBA) inside every sample so both meet the same machine; medians over
 * every batch, and of the ratio over every pair, so a batch preempted by another process
 * does not move them. After each batch with shared state, its queued writes are flushed and
 * timed apart (wall, and this process's CPU); after each batch without, the event loop turns.
 */
async function selectCost(
  registry: WorkerRegistry,
  policy: Policy,
  shared: SharedState,
  reqs: readonly SelectRequest[],
) {
  const reference = new Router({ ...routerOptions, registry, policy });
  const router = new Router({ ...routerOptions, registry, policy, shared });
  reference.start();
  router.start();
  let warmNs = 0;
  for (let b = 0; b < 64; b++) {
    warmNs += batch(reference, reqs, b * BATCH) + batch(router, reqs, b * BATCH);
    await shared.flush();
  }
  const pairs = Math.max(4, Math.round(40e6 / (warmNs / 128)));
  const refNs: number[] = [];
  const sharedNs: number[] = [];
  const ratios: number[] = [];
  let flushNs = 0;
  let flushCpuUs = 0;
  let placements = 0;
  const writesBefore = writesOf(shared);
  for (let s = 0; s < 15; s++) {
    collectGarbage();
    for (let b = 0; b < pairs; b++) {
      const from = (s * pairs + b) * BATCH;
      let r = 0;
      // ABBA: each router's batches follow the other's flush and a bare turn equally often.
      if (b % 2 === 0) {
        r = batch(reference, reqs, from);
        await new Promise(setImmediate);
      }
      const w = batch(router, reqs, from);
      const cpu = process.cpuUsage();
      const flushStart = process.hrtime.bigint();
      await shared.flush();
      flushNs += Number(process.hrtime.bigint() - flushStart);
      flushCpuUs += cpuUs(cpu);
      placements += BATCH;
      if (b % 2 === 1) {
        r = batch(reference, reqs, from);
        await new Promise(setImmediate);
      }
      refNs.push(r);
      sharedNs.push(w);
      ratios.push(w / r);
    }
  }
  const writes = writesOf(shared) - writesBefore;
  const sync = await syncCost(shared);
  await reference.close();
  await closeRouter(router, shared);
  // Median ns per select + release over every batch; the ratio's median over the pairs.
  return {
    reference: median(refNs) / BATCH,
    shared: median(sharedNs) / BATCH,
    ratio: median(ratios),
    flushUs: flushNs / 1e3 / placements,
    flushCpuUs: flushCpuUs / placements,
    writesPerPlacement: writes / placements,
    syncMs: sync.ms,
    syncCpuUs: sync.cpuUs,
  };
}

/** `await router.prepare(request)` then `select` + `release`, one request at a time. */
async function prepareCost(
  registry: WorkerRegistry,
  policy: Policy,
  shared: SharedState,
  reqs: readonly SelectRequest[],
) {
  const router = new Router({ ...routerOptions, registry, policy, shared });
  router.start();
  const part = () => (policy === 'manual' ? shared.stats().sessions : shared.stats().prefixIndex);
  for (let i = 0; i < 256; i++) {
    await router.prepare(reqs[i]);
    router.select(reqs[i])?.release();
  }
  await shared.flush();
  const before = part();
  const writesBefore = writesOf(shared);
  const us: number[] = [];
  for (let i = 0; i < reqs.length; i++) {
    const start = process.hrtime.bigint();
    await router.prepare(reqs[i]);
    us.push(Number(process.hrtime.bigint() - start) / 1e3);
    router.select(reqs[i])?.release();
  }
  await shared.flush();
  const after = part();
  const writes = writesOf(shared) - writesBefore;
  await closeRouter(router, shared);
  us.sort((x, y) => x - y);
  return {
    medianUs: median(us),
    p99Us: us[Math.floor(us.length * 0.99)]!,
    hits: after.hits - before.hits,
    timeouts: after.timeouts - before.timeouts,
    lookups: after.lookups - before.lookups,
    writesPerPlacement: writes / reqs.length,
  };
}

/** ms (wall) and µs (this process's CPU) of one load sync of a router alone, median of 21. */
async function syncCost(shared: SharedState): Promise<{ ms: number; cpuUs: number }> {
  const ms: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < 21; i++) {
    const used = process.cpuUsage();
    const start = process.hrtime.bigint();
    await shared.sync();
    ms.push(Number(process.hrtime.bigint() - start) / 1e6);
    cpu.push(cpuUs(used));
  }
  return { ms: median(ms), cpuUs: median(cpu) };
}

/** Part (a): one row per fleet size and policy in each table. */
async function routerCosts(url: string): Promise<Table[]> {
  const select: string[][] = [];
  const background: string[][] = [];
  const prepare: string[][] = [];
  for (const workers of FLEETS) {
    const registry = await registryOf(workers);
    for (const policy of POLICIES) {
      const reqs = requests(policy, REQUESTS, 11);
      const namespace = `bench-select-${policy}-${workers}`;
      const c = await selectCost(registry, policy, await sharedOf(url, namespace), reqs);
      const p =
        policy === 'least_load'
          ? undefined
          : await prepareCost(registry, policy, await sharedOf(url, namespace), reqs);
      const label = [fmt(workers, 0), policy];
      select.push([...label, fmt(c.reference, 0), fmt(c.shared, 0), `${fmt(c.ratio, 3)}×`]);
      background.push([
        ...label,
        fmt(c.writesPerPlacement, 2),
        fmt(c.flushUs, 1),
        fmt(c.flushCpuUs, 1),
        fmt(c.syncMs, 2),
        fmt(c.syncCpuUs, 0),
      ]);
      if (p !== undefined)
        prepare.push([
          ...label,
          fmt(p.medianUs, 0),
          fmt(p.p99Us, 0),
          `${fmt(p.hits, 0)}/${fmt(p.lookups, 0)}`,
          fmt(p.timeouts, 0),
          fmt(p.writesPerPlacement, 2),
        ]);
    }
    registry.close();
  }
  return [
    {
      title: 'router.select + release: ns per call, without and with SharedState on Redis',
      columns: ['workers', 'policy', 'no shared state', 'shared state', 'ratio'],
      rows: select,
    },
    {
      title: 'Background work of shared state (after select, off its path)',
      columns: [
        'workers',
        'policy',
        'writes / placement',
        'flush µs / placement (wall)',
        'flush CPU µs / placement',
        'load sync ms (wall)',
        'load sync CPU µs',
      ],
      rows: background,
    },
    {
      title: 'await router.prepare (the lookup execute does before routing), one request at a time',
      columns: [
        'workers',
        'policy',
        'median µs',
        'p99 µs',
        'hits',
        'timeouts',
        'writes / placement',
      ],
      rows: prepare,
    },
  ];
}

// (b) Redis traffic of four routers ----------------------------------------------------------

interface Scenario {
  readonly name: string;
  readonly policy: Policy;
  /** Requests per second per router. */
  readonly rate: number;
  readonly sessions: boolean;
  readonly prefixIndex: boolean;
  /** The lookup deadline, when not the default (10 ms). */
  readonly deadlineMs?: number;
}

const LOADS = { policy: 'least_load', sessions: false, prefixIndex: false } as const;
const PREFIX = {
  policy: 'cache_aware',
  rate: 1_000,
  sessions: false,
  prefixIndex: true,
} as const;
const SESSIONS = { policy: 'manual', rate: 1_000, sessions: true, prefixIndex: false } as const;
const SCENARIOS: readonly Scenario[] = [
  { name: 'loads only', rate: 250, ...LOADS },
  { name: 'loads only', rate: 1_000, ...LOADS },
  { name: 'loads only', rate: 4_000, ...LOADS },
  { name: 'loads + prefix index', ...PREFIX },
  { name: 'loads + prefix index, deadline 50 ms', ...PREFIX, deadlineMs: 50 },
  { name: 'loads + prefix index', ...PREFIX, rate: 250 },
  { name: 'loads + prefix index, deadline 50 ms', ...PREFIX, rate: 250, deadlineMs: 50 },
  { name: 'loads + sessions', ...SESSIONS },
  { name: 'loads + sessions, deadline 50 ms', ...SESSIONS, deadlineMs: 50 },
];
const ROUTERS = 4;
const FLEET = 64;
const WARMUP_MS = 1_000;
const MEASURE_MS = 5_000;
const HOLD_MS = 500;
const TICK_MS = 10;

interface ServerCounts {
  /** The server's clock (ms) when the counts were read. */
  readonly at: number;
  readonly evalsha: number;
  /** Every command's calls in `INFO commandstats`, those run inside scripts included. */
  readonly commands: number;
  /** `total_commands_processed` from `INFO stats`. */
  readonly processed: number;
  /** CPU seconds the server has used (`INFO cpu`: user + system). */
  readonly cpuS: number;
}

/** The server's counters, read at one instant (one `MULTI`: `TIME`, then `INFO`). */
async function serverCounts(client: Redis): Promise<ServerCounts> {
  const replies = await client.multi().time().info('stats').info('commandstats').info('cpu').exec();
  const [time, stats, commandstats, cpu] = (replies ?? []).map(([error, value]) => {
    if (error) throw error;
    return value;
  }) as [[string, string], string, string, string];
  let evalsha = 0;
  let commands = 0;
  for (const match of commandstats.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) {
    if (match[1] === 'info' || match[1] === 'time' || match[1] === 'multi' || match[1] === 'exec')
      continue; // this measurement's own
    commands += Number(match[2]);
    if (match[1] === 'evalsha' || match[1] === 'eval') evalsha += Number(match[2]);
  }
  const field = (text: string, name: string) =>
    Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(text)?.[1]);
  return {
    at: Number(time[0]) * 1000 + Number(time[1]) / 1000,
    evalsha,
    commands,
    processed: field(stats, 'total_commands_processed'),
    cpuS: field(cpu, 'used_cpu_user') + field(cpu, 'used_cpu_sys'),
  };
}

/** What one router's shared state has done so far. */
interface RouterCounts {
  /** Store calls (round trips). */
  readonly trips: number;
  readonly lookups: number;
  readonly timeouts: number;
}

function routerCounts(shared: SharedState): RouterCounts {
  const { loads, sessions, prefixIndex } = shared.stats();
  const lookups = sessions.lookups + prefixIndex.lookups;
  const writes = sessions.writes + prefixIndex.writes;
  return {
    trips: loads.syncs + loads.failures + loads.timeouts + lookups + writes,
    lookups,
    timeouts: sessions.timeouts + prefixIndex.timeouts,
  };
}

interface Replica {
  readonly router: Router;
  readonly shared: SharedState;
  readonly registry: WorkerRegistry;
  readonly held: { lease: WorkerLease; at: number }[];
  readonly random: () => number;
  taken: number;
  degraded: number;
}

async function replicas(url: string, s: Scenario, namespace: string): Promise<Replica[]> {
  const out: Replica[] = [];
  const config = s.deadlineMs === undefined ? {} : { deadlineMs: s.deadlineMs };
  const part = (on: boolean) => (on ? config : false);
  for (let r = 0; r < ROUTERS; r++) {
    const registry = await registryOf(FLEET);
    const store = await RedisSharedStore.create({ url, namespace });
    const shared = new SharedState({
      store,
      sessions: part(s.sessions),
      prefixIndex: part(s.prefixIndex),
    });
    const router = new Router({ ...routerOptions, registry, policy: s.policy, shared });
    const replica: Replica = {
      router,
      shared,
      registry,
      held: [],
      random: seededRandom(101 + r),
      taken: 0,
      degraded: 0,
    };
    router.on('sharedState', (event) => {
      if (event.state === 'degraded') replica.degraded++;
    });
    router.start();
    out.push(replica);
  }
  return out;
}

/**
 * Every {@link TICK_MS}, each replica releases the leases it has held for {@link HOLD_MS} and
 * starts the requests due at `rate` since the start (each one `prepare`, then `select`, as
 * `execute` does; requests drawn at random, so every router meets every session and prompt).
 * Returns when `stop` resolves, with every lease released.
 */
async function drive(
  fleet: readonly Replica[],
  reqs: readonly SelectRequest[],
  rate: number,
  stop: Promise<void>,
): Promise<void> {
  const started = performance.now();
  let pending = 0;
  const tick = () => {
    const now = performance.now();
    const due = Math.floor((rate * (now - started)) / 1000);
    for (const replica of fleet) {
      const held = replica.held;
      let old = 0;
      while (old < held.length && now - held[old]!.at >= HOLD_MS) held[old++]!.lease.release();
      if (old > 0) held.splice(0, old);
      for (; replica.taken < due; replica.taken++) {
        const request = reqs[Math.floor(replica.random() * reqs.length)]!;
        pending++;
        void replica.router.prepare(request).then(() => {
          pending--;
          const lease = replica.router.select(request);
          if (lease !== undefined) held.push({ lease, at: performance.now() });
        });
      }
    }
  };
  const timer = setInterval(tick, TICK_MS);
  await stop;
  clearInterval(timer);
  for (let i = 0; i < 1_000 && pending > 0; i++) await new Promise((r) => setTimeout(r, 5));
  for (const replica of fleet) {
    for (const { lease } of replica.held) lease.release();
    replica.held.length = 0;
  }
}

/** After {@link WARMUP_MS}, what the server and each router count over {@link MEASURE_MS}. */
async function measure(client: Redis, fleet: readonly Replica[]) {
  const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));
  const taken = () => fleet.reduce((n, f) => n + f.taken, 0);
  const degraded = () => fleet.reduce((n, f) => n + f.degraded, 0);
  await sleep(WARMUP_MS);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  const before = await serverCounts(client);
  const routersBefore = fleet.map((f) => routerCounts(f.shared));
  const requestsBefore = taken();
  const degradedBefore = degraded();
  const start = performance.now();
  loop.enable();
  await sleep(MEASURE_MS);
  loop.disable();
  const ms = performance.now() - start;
  const routers = fleet.map((f, i) => ({
    before: routersBefore[i]!,
    after: routerCounts(f.shared),
  }));
  const requests = taken() - requestsBefore;
  const after = await serverCounts(client);
  return {
    ms,
    server: { before, after },
    routers,
    requests,
    degraded: degraded() - degradedBefore,
    loopP99Ms: loop.percentile(99) / 1e6,
  };
}

/**
 * Part (b): one row per scenario. Server rates are over the server's clock between its two
 * readings; the routers' over this process's clock. `own` is what one pair of readings adds to
 * `total_commands_processed` on an idle server.
 */
async function trafficOf(
  url: string,
  client: Redis,
  s: Scenario,
  index: number,
  own: number,
): Promise<string[]> {
  const fleet = await replicas(url, s, `bench-traffic-${index}`);
  const reqs = requests(s.policy, 4_096, 23 + index);
  let window: Awaited<ReturnType<typeof measure>> | undefined;
  const measured = measure(client, fleet).then((w) => {
    window = w;
  });
  await drive(fleet, reqs, s.rate, measured);
  for (const { router, shared, registry } of fleet) {
    await closeRouter(router, shared);
    registry.close();
  }
  const w = window!;
  const { before, after } = w.server;
  const onServer = (n: number) => (n * 1000) / (after.at - before.at);
  const local = (n: number) => (n * 1000) / w.ms;
  const evalsha = onServer(after.evalsha - before.evalsha);
  const requestsPerSecond = local(w.requests);
  const trips = w.routers.map((r) => local(r.after.trips - r.before.trips));
  const lookups = w.routers.reduce((n, r) => n + r.after.lookups - r.before.lookups, 0);
  const timeouts = w.routers.reduce((n, r) => n + r.after.timeouts - r.before.timeouts, 0);
  return [
    s.name,
    fmt(s.rate, 0),
    fmt(requestsPerSecond / ROUTERS, 0),
    fmt(evalsha, 0),
    `${fmt(Math.min(...trips), 0)}–${fmt(Math.max(...trips), 0)}`,
    fmt(onServer(after.commands - before.commands), 0),
    fmt(onServer(after.processed - before.processed - own), 0),
    `${fmt(100 * onServer(after.cpuS - before.cpuS), 0)}%`,
    fmt(evalsha / requestsPerSecond, 3),
    lookups === 0 ? 'n/a' : `${fmt((100 * timeouts) / lookups, 1)}%`,
    fmt(w.degraded, 0),
    fmt(w.loopP99Ms, 1),
  ];
}

async function traffic(url: string): Promise<Table> {
  const client = new Redis(url, { lazyConnect: true });
  client.on('error', () => {});
  await client.connect();
  const idle = [await serverCounts(client), await serverCounts(client)] as const;
  const own = idle[1].processed - idle[0].processed;
  const rows: string[][] = [];
  for (const [i, s] of SCENARIOS.entries()) rows.push(await trafficOf(url, client, s, i, own));
  await client.quit();
  return {
    title: `Redis traffic: ${ROUTERS} routers × ${FLEET} workers, leases held ${HOLD_MS} ms, ${MEASURE_MS / 1000} s measured`,
    columns: [
      'shared',
      'req/s per router',
      'achieved',
      'EVALSHA/s (server)',
      'round trips/s per router',
      'commands/s incl. scripts',
      'total_commands_processed/s',
      'redis-server CPU',
      'EVALSHA per request',
      'lookups past deadline',
      'degraded events',
      'event loop p99 ms',
    ],
    rows,
  };
}

const server = await startRedis();
try {
  const url = server.url;
  const tables = [...(await routerCosts(url)), await traffic(url)];
  emit({
    name: 'shared-state',
    tables,
    notes: [
      '"No shared state" is the same router options on the same registry without `shared`, measured in alternation with it in the same run.',
      "select never waits on Redis: it queues the placement; the flush (the queued placements' writes) runs on the next turn of the event loop. Its wall time is mostly the round trip; its CPU is this process only (redis-server apart). The load sync runs once per refreshMs (100 ms) per router.",
      'select alone (no prepare) knows nothing of what the store holds, so manual writes every placement and cache_aware every new block; after prepare (as execute does) unchanged sessions and blocks already held are not written again.',
      'Traffic: every 10 ms each router starts the requests due (prepare, then select) and releases leases older than 500 ms. "Achieved" is requests started per router per second in the window; above the asked rate, the driver was catching up after falling behind (the process was saturated: see the event-loop delay).',
      'EVALSHA/s counts round trips (one per store call). "Commands/s incl. scripts" adds what the scripts run on the server (total_commands_processed counts them too). Loads only: one sync per router per 100 ms whatever the rate; the commands inside it grow with the workers whose count changed since the last sync, so they are bounded by the fleet (64 workers × 4 routers), not by the rate.',
      'A lookup past its deadline (10 ms by default) routes on local state; 3 in a row degrade the part (no lookups or writes but one probe per second) until one answers in time.',
    ],
  });
} finally {
  await server.stop();
}
