/**
 * `simulate`: replays a workload against a simulated fleet, routed by one policy through the
 * public `Router`, and measures what users feel — cache hits, time to first token, balance — and
 * what the router costs.
 *
 * The router sees only what a real one sees: the requests (tokens and routing key), its own
 * leases (released at completion), and, every `loadPollIntervalMs`, load reports like the ones a
 * metrics endpoint gives. It never reads the simulated caches.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import { fail, readInteger, readNumber, readObject } from '../core/options.js';
import { createPolicy } from '../policies/create-policy.js';
import { type LoadReport, POLICY_NAMES, type Policy, type PolicyName } from '../policies/policy.js';
import { WorkerRegistry } from '../registry/worker-registry.js';
import { Router } from '../router/router.js';
import type { WorkerLease } from '../workers/lease.js';
import type { ArrivalProcess } from './arrivals.js';
import { blockKeys } from './block-keys.js';
import { Engine, type Job } from './engine.js';
import { EventQueue } from './event-queue.js';
import { DEFAULT_FLEET_MODEL, type FleetModel, type FleetModelOptions } from './fleet-model.js';
import { percentiles, spread } from './metrics.js';
import { SeededRandom } from './random.js';
import type { PolicyRun } from './result.js';
import type { Workload } from './workload.js';

/**
 * Options of {@link simulate}.
 *
 * @public
 */
export interface SimulationOptions {
  readonly workload: Workload;
  /** The policy under test, built with `createPolicy(policy, policyConfig)` per router. */
  readonly policy: PolicyName;
  /** The policy's configuration (its `clock` and `seed` are set by the simulator). */
  readonly policyConfig?: Readonly<Record<string, unknown>>;
  /** The fleet; unspecified fields take {@link DEFAULT_FLEET_MODEL}'s values. */
  readonly fleet?: FleetModelOptions;
  /** @defaultValue `{ kind: 'all_at_once' }` */
  readonly arrivals?: ArrivalProcess;
  /**
   * Independent routers sharing the fleet, each with its own registry and policy state;
   * requests are spread over them round-robin. @defaultValue 1
   */
  readonly routers?: number;
  /** Seeds arrivals and every policy's random choices. @defaultValue 1 */
  readonly seed?: number;
  /**
   * Simulated ms between load reports to the policies (`policy.updateLoads`), as a router's load
   * polling would deliver them; 0 sends none. @defaultValue 10,000
   */
  readonly loadPollIntervalMs?: number;
  /** Simulated ms between timeline samples (doubled as needed to keep ≤ 1,000 samples). @defaultValue 250 */
  readonly sampleIntervalMs?: number;
  /** Measure routing precision (costs one cache walk per worker per request). @defaultValue true */
  readonly precision?: boolean;
  /** Called as requests complete (about 100 times per run). */
  readonly onProgress?: (completed: number, total: number) => void;
}

const ARRIVAL = 0;
const STEP = 1;
const POLL = 2;
const SAMPLE = 3;
const MAX_SAMPLES = 1_000;

/** The routing side of one router. */
interface RouterSide {
  readonly registry: WorkerRegistry;
  readonly router: Router;
  readonly policy: Policy;
}

/**
 * Runs one policy on `options.workload` over the simulated fleet and reports the outcome.
 * Deterministic for a given seed, except `routingMicrosPerRequest` (wall-clock time).
 *
 * @returns the run's {@link PolicyRun}.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for an invalid option (naming it).
 * Cost: O(requests × (prompt blocks + workers when `precision`)) plus O(engine steps × batch).
 * @public
 */
export async function simulate(options: SimulationOptions): Promise<PolicyRun> {
  const o = resolveSimulationOptions(options);
  const { workload, fleet: model } = o;
  const requests = workload.requests;
  const total = requests.length;
  let now = 0;
  const clock = (): number => now;

  const urls = Array.from({ length: model.workers }, (_, i) => `http://sim-worker-${i}:8000`);
  const workerOf = new Map(urls.map((url, i) => [url, i]));
  const sides: RouterSide[] = [];
  for (let k = 0; k < o.routers; k++) {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready', clock });
    for (const url of urls) await registry.register({ url });
    const config = { ...o.policyConfig, clock, seed: (o.seed * 1_000_003 + k) >>> 0 };
    const policy = createPolicy(o.policy, config as never) as Policy;
    const router = new Router({
      registry,
      transport: { probe: async () => true },
      policy,
      health: false,
      loadPolling: false,
      reportLeakedLeases: false,
    });
    router.start();
    sides.push({ registry, router, policy });
  }

  const queue = new EventQueue();
  let completed = 0;
  let unroutable = 0;
  let outputTokens = 0;
  let firstSend = Number.NaN;
  let lastCompletion = 0;
  const ttft: number[] = [];
  const routed = new Array<number>(model.workers).fill(0);
  const done = new Uint8Array(total);
  const parked = new Map<number, number[]>();
  const progressEvery = Math.max(1, Math.floor(total / 100));
  let sent = 0;
  let nextClosedLoop = 0;
  let routingMs = 0;
  let consideredForPrecision = 0;
  let precise = 0;
  const matches = new Int32Array(model.workers);

  const engines: Engine[] = [];
  const hooks = {
    wakeAt: (time: number, worker: number): void => queue.push(time, STEP, worker),
    completed: (job: Job, time: number): void => {
      (job.handle as WorkerLease).release({ ok: true, status: 200 });
      ttft.push(job.firstTokenAt - job.sentAt);
      outputTokens += job.request.outputLength;
      lastCompletion = time;
      finish(job.request.id);
    },
  };
  for (let i = 0; i < model.workers; i++) engines.push(new Engine(i, model, hooks));

  const finish = (id: number): void => {
    completed++;
    done[id] = 1;
    const waiting = parked.get(id);
    if (waiting !== undefined) {
      parked.delete(id);
      for (const next of waiting) queue.push(now, ARRIVAL, next);
    }
    if (o.arrivals.kind === 'closed_loop' && nextClosedLoop < total) {
      queue.push(now, ARRIVAL, nextClosedLoop++);
    }
    if (o.onProgress !== undefined && (completed % progressEvery === 0 || completed === total)) {
      o.onProgress(completed, total);
    }
  };

  const send = (id: number): void => {
    const request = requests[id]!;
    if (request.after !== undefined && done[request.after] === 0) {
      const list = parked.get(request.after);
      if (list === undefined) parked.set(request.after, [id]);
      else list.push(id);
      return;
    }
    if (Number.isNaN(firstSend)) firstSend = now;
    const side = sides[sent++ % sides.length]!;
    const tokens = request.tokens();
    const keys = blockKeys(tokens, model.blockSize);
    let best = 0;
    if (o.precision) {
      const limit = Math.min(keys.length, Math.floor((request.promptLength - 1) / model.blockSize));
      for (let w = 0; w < engines.length; w++) {
        const m = engines[w]!.cache.match(keys, limit);
        matches[w] = m;
        if (m > best) best = m;
      }
    }
    const selectRequest =
      request.routingKey === undefined ? { tokens } : { tokens, routingKey: request.routingKey };
    const started = performance.now();
    const lease = side.router.select(selectRequest);
    routingMs += performance.now() - started;
    const worker = lease === undefined ? undefined : workerOf.get(lease.worker.url);
    if (lease === undefined || worker === undefined) {
      lease?.release();
      unroutable++;
      finish(id);
      return;
    }
    if (best > 0) {
      consideredForPrecision++;
      if (matches[worker] === best) precise++;
    }
    routed[worker]!++;
    engines[worker]!.submit(
      {
        request,
        keys,
        sentAt: now,
        handle: lease,
        cachedTokens: 0,
        prefillLeft: 0,
        decodeLeft: 0,
        decoding: false,
        firstTokenAt: 0,
        pinned: [],
        privateBlocks: 0,
      },
      now,
    );
  };

  o.onProgress?.(0, total);
  // Arrivals.
  const arrivals = o.arrivals;
  if (arrivals.kind === 'all_at_once') {
    for (let i = 0; i < total; i++) queue.push(0, ARRIVAL, i);
  } else if (arrivals.kind === 'poisson') {
    const random = new SeededRandom(o.seed ^ 0x5eed_a11);
    const mean = 1000 / arrivals.ratePerSecond;
    let t = 0;
    for (let i = 0; i < total; i++) {
      queue.push(t, ARRIVAL, i);
      t += random.exponential(mean);
    }
  } else if (arrivals.kind === 'closed_loop') {
    for (; nextClosedLoop < Math.min(arrivals.concurrency, total); nextClosedLoop++) {
      queue.push(0, ARRIVAL, nextClosedLoop);
    }
  } else {
    const speedup = arrivals.speedup ?? 1;
    for (let i = 0; i < total; i++) {
      const stamp = requests[i]!.timestamp;
      queue.push(stamp === undefined ? 0 : stamp / speedup, ARRIVAL, i);
    }
  }
  if (o.loadPollIntervalMs > 0) queue.push(0, POLL, 0);

  // Timeline of requests in flight per worker.
  let sampleMs = o.sampleIntervalMs;
  const timeline: number[][] = engines.map(() => []);
  let samplesStarted = false;

  const busy = (): boolean => completed < total;
  let event = queue.pop();
  while (event !== undefined) {
    now = event.time;
    switch (event.kind) {
      case ARRIVAL:
        send(event.target);
        if (!samplesStarted && !Number.isNaN(firstSend)) {
          samplesStarted = true;
          queue.push(now, SAMPLE, 0);
        }
        break;
      case STEP:
        engines[event.target]!.step(now);
        break;
      case POLL:
        if (busy()) {
          deliverLoads(sides, engines, urls, now);
          queue.push(now + o.loadPollIntervalMs, POLL, 0);
        }
        break;
      case SAMPLE:
        if (busy()) {
          for (let w = 0; w < engines.length; w++) timeline[w]!.push(engines[w]!.inFlight);
          if (timeline[0]!.length >= MAX_SAMPLES) {
            for (const series of timeline) halve(series);
            sampleMs *= 2;
          }
          queue.push(now + sampleMs, SAMPLE, 0);
        }
        break;
    }
    event = queue.pop();
  }

  for (const side of sides) {
    await side.router.close();
    side.registry.close();
  }
  if (completed !== total) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      `workload: ${total - completed} requests never ran (an 'after' names a request that never completes)`,
    );
  }

  let cached = 0;
  let prompt = 0;
  for (const engine of engines) {
    cached += engine.cachedTokens;
    prompt += engine.promptTokens;
  }
  const start = Number.isNaN(firstSend) ? 0 : firstSend;
  const makespanMs = Math.max(0, lastCompletion - start);
  const served = total - unroutable;
  const load = spread(routed);
  return {
    policy: o.policy,
    requests: total,
    completed: served,
    hitRate: prompt === 0 ? 0 : cached / prompt,
    ttftMs: percentiles(ttft),
    throughput: {
      requestsPerSecond: makespanMs === 0 ? 0 : served / (makespanMs / 1000),
      outputTokensPerSecond: makespanMs === 0 ? 0 : outputTokens / (makespanMs / 1000),
    },
    makespanMs,
    load: { perWorker: routed, maxOverMean: load.maxOverMean, cv: load.cv },
    precision: consideredForPrecision === 0 ? undefined : precise / consideredForPrecision,
    routingMicrosPerRequest: sent === 0 ? 0 : (routingMs * 1000) / sent,
    timeline: { intervalMs: sampleMs, inFlight: timeline },
  };
}

/** Each router's policy gets the reports a metrics endpoint would give at `now`. */
function deliverLoads(
  sides: readonly RouterSide[],
  engines: readonly Engine[],
  urls: readonly string[],
  now: number,
): void {
  const reports = new Map<string, LoadReport>();
  for (let w = 0; w < engines.length; w++) {
    const engine = engines[w]!;
    const capacity = engine.cache.capacity;
    const report: LoadReport =
      capacity === Number.POSITIVE_INFINITY
        ? { runningRequests: engine.running, waitingRequests: engine.waiting, at: now }
        : {
            runningRequests: engine.running,
            waitingRequests: engine.waiting,
            tokenUsage: Math.min(1, engine.cache.used / capacity),
            at: now,
          };
    reports.set(urls[w]!, report);
  }
  for (const side of sides) side.policy.updateLoads?.(reports);
}

/** Merges neighbouring samples (keeping the larger), halving the series. */
function halve(series: number[]): void {
  const half = Math.ceil(series.length / 2);
  for (let i = 0; i < half; i++) {
    series[i] = Math.max(series[2 * i]!, series[2 * i + 1] ?? 0);
  }
  series.length = half;
}

interface ResolvedSimulationOptions {
  readonly workload: Workload;
  readonly policy: PolicyName;
  readonly policyConfig: Readonly<Record<string, unknown>>;
  readonly fleet: FleetModel;
  readonly arrivals: ArrivalProcess;
  readonly routers: number;
  readonly seed: number;
  readonly loadPollIntervalMs: number;
  readonly sampleIntervalMs: number;
  readonly precision: boolean;
  readonly onProgress: ((completed: number, total: number) => void) | undefined;
}

function resolveSimulationOptions(options: SimulationOptions): ResolvedSimulationOptions {
  const o = readObject('simulate options', options);
  const workload = readWorkload(o.workload);
  if (!(POLICY_NAMES as readonly unknown[]).includes(o.policy)) {
    fail('policy', `one of ${POLICY_NAMES.join(', ')}`, o.policy);
  }
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') {
    fail('onProgress', 'a function', o.onProgress);
  }
  return {
    workload,
    policy: o.policy as PolicyName,
    policyConfig: readObject('policyConfig', o.policyConfig),
    fleet: readFleetModel(o.fleet),
    arrivals: resolveArrivals(o.arrivals),
    routers: readInteger('routers', o.routers, 1, 1, 1_024),
    seed: readInteger('seed', o.seed, 1, 0, 0xffff_ffff),
    loadPollIntervalMs: readNumber('loadPollIntervalMs', o.loadPollIntervalMs, 10_000, 0, 1e9),
    sampleIntervalMs: readNumber('sampleIntervalMs', o.sampleIntervalMs, 250, 1, 1e9),
    precision: o.precision === undefined ? true : o.precision === true,
    onProgress: o.onProgress as ResolvedSimulationOptions['onProgress'],
  };
}

/** @internal `value` as a workload (an object with a `requests` array), or a typed error. */
export function readWorkload(value: unknown): Workload {
  const workload = value as Workload | undefined;
  if (typeof workload !== 'object' || workload === null || !Array.isArray(workload.requests)) {
    fail('workload', 'a Workload', workload);
  }
  return workload;
}

/**
 * The fleet model with defaults filled in and every field checked.
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the field.
 * @public
 */
export function resolveFleetModel(options?: FleetModelOptions): FleetModel {
  return readFleetModel(options);
}

function readFleetModel(options: unknown): FleetModel {
  const o = readObject('fleet', options);
  const d = DEFAULT_FLEET_MODEL;
  for (const key of Object.keys(o)) {
    if (!Object.hasOwn(d, key)) fail(`fleet.${key}`, 'not an option', o[key]);
  }
  const cacheTokens =
    o.cacheTokens === Number.POSITIVE_INFINITY
      ? Number.POSITIVE_INFINITY
      : readInteger('fleet.cacheTokens', o.cacheTokens, d.cacheTokens, 1, 1e12);
  return Object.freeze({
    workers: readInteger('fleet.workers', o.workers, d.workers, 1, 4_096),
    cacheTokens,
    blockSize: readInteger('fleet.blockSize', o.blockSize, d.blockSize, 1, 4_096),
    prefillTokensPerSecond: readNumber(
      'fleet.prefillTokensPerSecond',
      o.prefillTokensPerSecond,
      d.prefillTokensPerSecond,
      1,
      1e9,
    ),
    decodeStepMs: readNumber('fleet.decodeStepMs', o.decodeStepMs, d.decodeStepMs, 0, 1e6),
    decodeStepPerRequestMs: readNumber(
      'fleet.decodeStepPerRequestMs',
      o.decodeStepPerRequestMs,
      d.decodeStepPerRequestMs,
      0,
      1e6,
    ),
    maxRunning: readInteger('fleet.maxRunning', o.maxRunning, d.maxRunning, 1, 1_000_000),
    maxBatchTokens: readInteger('fleet.maxBatchTokens', o.maxBatchTokens, d.maxBatchTokens, 1, 1e9),
  });
}

function resolveArrivals(value: unknown): ArrivalProcess {
  if (value === undefined) return { kind: 'all_at_once' };
  const o = readObject('arrivals', value);
  switch (o.kind) {
    case 'all_at_once':
      return { kind: 'all_at_once' };
    case 'poisson':
      if (o.ratePerSecond === undefined) fail('arrivals.ratePerSecond', 'a rate', undefined);
      return {
        kind: 'poisson',
        ratePerSecond: readNumber('arrivals.ratePerSecond', o.ratePerSecond, Number.NaN, 1e-9, 1e9),
      };
    case 'closed_loop':
      return {
        kind: 'closed_loop',
        concurrency: readInteger('arrivals.concurrency', o.concurrency, 1, 1, 1e9),
      };
    case 'trace':
      return { kind: 'trace', speedup: readNumber('arrivals.speedup', o.speedup, 1, 1e-9, 1e9) };
    default:
      return fail('arrivals.kind', "'all_at_once', 'poisson', 'closed_loop' or 'trace'", o.kind);
  }
}
