/**
 * The options of `simulate`, and the one place that checks them and fills in their defaults.
 *
 * @module
 */

import { type AdmissionConfig, readAdmission } from '../admission/admission-options.js';
import { DEFAULT_PAGE_SIZE } from '../cache/block-hashes.js';
import {
  boolean,
  callback,
  custom,
  integer,
  number,
  OptionTable,
  type Resolved,
} from '../core/option-table.js';
import { fail, readInteger, readNumber, readObject } from '../core/options.js';
import { ADAPTER_AWARE_OPTIONS, type AdapterAwareConfig } from '../policies/adapter-aware.js';
import { createPolicy, POLICY_NAMES } from '../policies/create-policy.js';
import type { Policy, PolicyName } from '../policies/policy.js';
import type { ArrivalProcess } from './arrivals.js';
import {
  type ResolvedSimDisaggregation,
  resolveSimDisaggregation,
  type SimDisaggregation,
} from './disaggregation.js';
import { FLEET_OPTIONS, type FleetModel, type FleetModelOptions } from './fleet-model.js';
import { checkBlockSize } from './kv-event-feed.js';
import type { Workload } from './workload.js';
import { readWorkload } from './workload-check.js';

/**
 * Options of `simulate`.
 *
 * @public
 */
export interface SimulationOptions {
  /**
   * The requests to replay. Checked completely before anything is built (see `simulate`); it
   * must not change during the run.
   */
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
   * polling would deliver them, at every multiple of the interval from time 0; 0 sends none.
   * While the fleet is idle only the last report before the next arrival is delivered (the
   * skipped ones would be identical), so idle time costs nothing. @defaultValue 10,000
   */
  readonly loadPollIntervalMs?: number;
  /**
   * Mark each request's first token on its lease when its prefill ends
   * (`WorkerLease.firstToken`, as a streaming client does), so policies see
   * `Worker.prefilling`; `false` leaves every lease counted as prefilling until it completes,
   * as with a caller that never marks first tokens. @defaultValue true
   */
  readonly firstTokens?: boolean;
  /**
   * Simulated ms between timeline samples (doubled as needed to keep ≤ 1,000 samples). Samples
   * that fall while the fleet is idle are recorded as 0 without an event each. @defaultValue 250
   */
  readonly sampleIntervalMs?: number;
  /** Measure routing precision (costs one cache walk per worker per request). @defaultValue true */
  readonly precision?: boolean;
  /**
   * Model the engines' KV-cache events: each engine reports the blocks of its prefix cache that
   * become reusable (stored) or are evicted (removed), batched per engine step, and every
   * router whose policy takes KV events (`cache_aware`, which then scores from them instead of
   * its approximate tree) receives each batch after `kvEventDelayMs`, in order per engine.
   * Blocks are named as `blockHashes` names them, with the policy's `pageSize`, which
   * `fleet.blockSize` must equal or be a multiple of. Off, nothing of it runs.
   * Cost: one xxh64 per page of each request's prompt and answer, 8 bytes per page of every
   * cached block, and one delivery per engine step and router. @defaultValue false
   */
  readonly kvEvents?: boolean;
  /**
   * With `kvEvents`: simulated ms from the engine step that produced a batch to its delivery
   * to every router. @defaultValue 5
   */
  readonly kvEventDelayMs?: number;
  /**
   * With `kvEvents`: the share of batches lost in delivery (0 … 1), drawn per router and batch
   * from a stream seeded by `seed`. A router that loses a batch does what a subscriber without
   * a replay socket does: forgets every block of that worker, then applies the later batches.
   * @defaultValue 0
   */
  readonly kvEventLoss?: number;
  /**
   * Engine restarts, spread evenly over the run — restart `r` (from 0) just before request
   * `floor((r + 1) × requests / (engineRestarts + 1))` is routed, on worker `r mod workers` —
   * each emptying that engine's prefix cache at once (running requests go on, their blocks
   * private). Routers are not told in approximate mode; with `kvEvents`, every router receives
   * a `cleared` for that worker after `kvEventDelayMs`. @defaultValue 0
   */
  readonly engineRestarts?: number;
  /**
   * State the routers share (`SharedState`): `'memory'` runs them against an in-process
   * `MemorySharedStore` on the simulated clock; a `redis://host:port` (or `rediss://`) URL runs
   * them against that server through `fleetroute/redis` (its optional peer `ioredis` must be
   * installed), under a namespace of the run's own that is removed at the end; a server that
   * does not answer within 2 s fails the run (`TRANSPORT_FAILED`) before it starts. Each router
   * syncs its in-flight loads every `sharedRefreshMs` of simulated time, looks up sessions and
   * prefixes before each request and writes its placement after it (simulated time stands still
   * meanwhile, and each router waits for the store as long as it takes, so a run does not
   * depend on the machine's speed). @defaultValue none: every router's state is its own
   */
  readonly sharedState?: string;
  /** With `sharedState`: simulated ms between two load syncs of each router. @defaultValue 100 */
  readonly sharedRefreshMs?: number;
  /**
   * Share of requests sent at a low priority (−1, below the default priority 0, so admission
   * sheds them first while saturated), drawn per request from `seed`, whatever the workload
   * (generated or a trace). 0 leaves every request's own `priority`. @defaultValue 0
   */
  readonly lowPriorityShare?: number;
  /**
   * With `lowPriorityShare`: the low-priority requests are drawn, then never sent — the run serves
   * the others alone, at their own arrival times, so their figures compare exactly with a run
   * that sends the whole mix. A request skipped is neither served nor rejected; a request that
   * follows it (`after`) is released as after a completion. @defaultValue false
   */
  readonly skipLowPriority?: boolean;
  /**
   * Tenants the requests are spread over (`tenant-0` … `tenant-{n−1}`), drawn per request from
   * `seed`, whatever the workload; 1 leaves every request's own `tenant`. @defaultValue 1
   */
  readonly tenants?: number;
  /**
   * With `tenants` > 1: how many times as many requests `tenant-0` sends as each other tenant
   * (a heavy tenant). @defaultValue 1
   */
  readonly heavyTenantFactor?: number;
  /**
   * Run every router with admission control (`Router`'s `admission`: `true` for its defaults, or
   * its options but `clock`) on simulated time: a request waits at the router while every worker
   * is full, leaves the queue when a lease releases or a first token arrives, and is turned away
   * (`SATURATED`) when it is shed, the queue is full, or its wait runs out in simulated time.
   * Requests turned away count as rejected (`PolicyRun.admission`); the time to first token
   * of a served request then counts its wait. @defaultValue false
   */
  readonly admission?: boolean | Omit<AdmissionConfig, 'clock'>;
  /**
   * Wrap every router's policy in `adapterAware` (`true` for its defaults, or its options but
   * `clock`, which the run sets): requests for a LoRA adapter (`SimRequest.adapter`) go where the
   * adapter is loaded, as the engines' load reports and the router's own sends tell. The run is
   * labelled `adapterAware(<policy>)`. @defaultValue false
   */
  readonly adapterAware?: boolean | Omit<AdapterAwareConfig, 'clock'>;
  /**
   * Whether the engines' load reports list their resident adapters (`adapters.resident`, as
   * vLLM's residency gauges do); `false` reports only the adapters with requests running or
   * waiting, as an engine serving only `vllm:lora_requests_info` does. @defaultValue true
   */
  readonly adapterResidency?: boolean;
  /**
   * Run a prefill/decode-disaggregated fleet: a prefill pool and a decode pool in place of
   * `fleet.workers` regular workers (which, when given, must equal their sum), a KV transfer
   * between the legs, and in `'conditional'` mode the rule that lets a decode worker prefill a
   * mostly cached prompt itself (see {@link SimDisaggregation}). The policy under test routes the
   * prefill leg. Not with `kvEvents`, `sharedState`, `admission` or `engineRestarts`.
   * @defaultValue none: a fleet of regular workers
   */
  readonly disaggregation?: SimDisaggregation;
  /**
   * Called as requests complete (about 100 times per run). An error it throws ends the run
   * (every router is closed) and is rethrown as is.
   */
  readonly onProgress?: (completed: number, total: number) => void;
}

/** @internal {@link SimulationOptions} checked, with every default filled in. */
export interface ResolvedSimulationOptions extends Resolved<typeof SIMULATION_OPTIONS.specs> {
  readonly workload: Workload;
  readonly policy: PolicyName;
  readonly policyConfig: Readonly<Record<string, unknown>>;
  readonly fleet: FleetModel;
  readonly arrivals: ArrivalProcess;
}

/**
 * @internal The simulation's own scalar options and its progress callback (the workload, the
 * policy, the fleet and the arrivals have their own readers). `onProgress` comes first: it is
 * checked before the others.
 */
export const SIMULATION_OPTIONS = new OptionTable(
  '',
  'SimulationOptions',
  {
    onProgress: callback<(completed: number, total: number) => void>('a function', undefined, ''),
    routers: integer(1, 1, 1_024),
    seed: integer(1, 0, 0xffff_ffff),
    loadPollIntervalMs: number(10_000, 0, 1e9),
    firstTokens: boolean(true),
    sampleIntervalMs: number(250, 1, 1e9),
    precision: boolean(true),
    kvEvents: boolean(false),
    kvEventDelayMs: number(5, 0, 1e9),
    kvEventLoss: number(0, 0, 1),
    engineRestarts: integer(0, 0, 1_000_000),
    sharedState: custom<string | undefined>(
      undefined,
      (field, value) => readSharedStateTarget(field, value),
      "none: every router's state is its own",
    ),
    sharedRefreshMs: number(100, 1, 1e9),
    lowPriorityShare: number(0, 0, 1),
    skipLowPriority: boolean(false),
    tenants: integer(1, 1, 1_000_000),
    heavyTenantFactor: number(1, 1, 1e6),
    admission: custom<Readonly<Record<string, unknown>> | undefined>(
      undefined,
      (field, value) => readSimAdmission(field, value),
      'false',
    ),
    adapterResidency: boolean(true),
    adapterAware: custom<Readonly<Record<string, unknown>> | undefined>(
      undefined,
      (field, value) => readSimAdapterAware(field, value),
      'false',
    ),
    disaggregation: custom<ResolvedSimDisaggregation | undefined>(
      undefined,
      (_field, value) => resolveSimDisaggregation(value),
      'none: a fleet of regular workers',
    ),
  },
  'any',
);

/**
 * `true` or admission options but `clock` (the run sets the simulated clock), checked by the
 * router's own table; `undefined` when off. Kept as plain data, so a plan crosses threads.
 */
function readSimAdmission(
  field: string,
  value: unknown,
): Readonly<Record<string, unknown>> | undefined {
  if (typeof value === 'object' && value !== null && 'clock' in value)
    fail(`${field}.clock`, 'absent (the simulation sets its own clock)', 'a clock');
  if (readAdmission(field, value) === undefined) return undefined;
  return value === true ? {} : { ...(value as Record<string, unknown>) };
}

/**
 * `true` or `adapterAware` options but `clock` (the run sets the simulated clock), checked by
 * the wrapper's own table; `undefined` when off.
 */
function readSimAdapterAware(
  field: string,
  value: unknown,
): Readonly<Record<string, unknown>> | undefined {
  if (value === false || value === undefined) return undefined;
  if (value === true) return {};
  if (typeof value === 'object' && value !== null && 'clock' in value)
    fail(`${field}.clock`, 'absent (the simulation sets its own clock)', 'a clock');
  ADAPTER_AWARE_OPTIONS.read(value, undefined, field);
  return { ...(value as Record<string, unknown>) };
}

/** The label of `o`'s runs: the policy's name, wrapped as `adapterAware(<name>)` when it is. */
export function runLabelOf(o: ResolvedSimulationOptions): string {
  return o.adapterAware === undefined ? o.policy : `adapterAware(${o.policy})`;
}

/** `'memory'`, or a Redis URL. */
function readSharedStateTarget(field: string, value: unknown): string {
  if (
    typeof value === 'string' &&
    (value === 'memory' || /^(redis|rediss|valkey):\/\/[^\s]{1,4000}$/.test(value))
  )
    return value;
  return fail(field, "'memory' or a redis:// URL", value);
}

/**
 * @internal Checks every option of `simulate` — the workload completely (unless
 * `workloadChecked`, when the caller has just checked it), and the policy's configuration by
 * building the policy once and closing it — and fills in the defaults.
 *
 * @returns the resolved options (nothing has been built that stays open).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 * Cost: O(requests + prompt tokens) for the workload check, plus one policy construction.
 */
export function resolveSimulationOptions(
  options: SimulationOptions,
  workloadChecked = false,
): ResolvedSimulationOptions {
  const o = readObject('simulate options', options);
  const workload = workloadChecked ? (o.workload as Workload) : readWorkload(o.workload);
  if (!(POLICY_NAMES as readonly unknown[]).includes(o.policy)) {
    fail('policy', `one of ${POLICY_NAMES.join(', ')}`, o.policy);
  }
  const own = SIMULATION_OPTIONS.read(o);
  const resolved: ResolvedSimulationOptions = {
    workload,
    policy: o.policy as PolicyName,
    policyConfig: readObject('policyConfig', o.policyConfig),
    fleet: fleetOf(FLEET_OPTIONS.read(o.fleet), o.fleet, own),
    arrivals: resolveArrivals(o.arrivals),
    ...own,
  };
  (createPolicy(resolved.policy, policyConfigOf(resolved, 0) as never) as Policy).close?.();
  if (resolved.kvEvents && resolved.policy === 'cache_aware') {
    checkBlockSize(resolved.fleet.blockSize, kvPageSizeOf(resolved));
  }
  return resolved;
}

/**
 * The fleet of a run: `fleet`, whose workers are the two pools with `disaggregation`, which
 * refuses the options it does not model.
 */
function fleetOf(
  fleet: FleetModel,
  given: unknown,
  own: Resolved<typeof SIMULATION_OPTIONS.specs>,
): FleetModel {
  const d = own.disaggregation;
  if (d === undefined) return fleet;
  const workers = d.prefillWorkers + d.decodeWorkers;
  const asked = (given as FleetModelOptions | undefined)?.workers;
  if (asked !== undefined && asked !== workers)
    fail(
      'fleet.workers',
      `absent or the disaggregation's prefillWorkers + decodeWorkers (${workers})`,
      asked,
    );
  for (const key of ['kvEvents', 'sharedState', 'admission', 'engineRestarts'] as const) {
    const value = own[key];
    if (value !== undefined && value !== false && value !== 0)
      fail(key, 'off with disaggregation (not modelled for two pools)', value);
  }
  return Object.freeze({ ...fleet, workers });
}

/**
 * @internal The page size of the KV-event block hashes of a run: its policy's `pageSize`
 * (checked by building the policy), else the default page size, cache_aware's.
 */
export function kvPageSizeOf(o: ResolvedSimulationOptions): number {
  const pageSize = o.policyConfig.pageSize;
  return typeof pageSize === 'number' ? pageSize : DEFAULT_PAGE_SIZE;
}

/**
 * @internal The configuration router `k` builds its decode leg's policy with (disaggregated
 * runs): the policy's defaults, a clock and a seed of its own.
 */
export function decodePolicyConfigOf(
  o: ResolvedSimulationOptions,
  k: number,
  clock: () => number,
): Record<string, unknown> {
  return { clock, seed: (o.seed * 1_000_003 + k + 0x9e37) >>> 0 };
}

/** @internal The configuration router `k` builds its policy with: the user's, plus clock and seed. */
export function policyConfigOf(
  o: ResolvedSimulationOptions,
  k: number,
  clock: () => number = () => 0,
): Record<string, unknown> {
  return { ...o.policyConfig, clock, seed: (o.seed * 1_000_003 + k) >>> 0 };
}

/**
 * The fleet model with defaults filled in and every field checked.
 *
 * @returns a frozen {@link FleetModel}.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the field (an unknown field too).
 * Cost: O(fields).
 * @public
 */
export function resolveFleetModel(options?: FleetModelOptions): FleetModel {
  return FLEET_OPTIONS.read(options);
}

/**
 * @internal `value` as an {@link ArrivalProcess} (`{ kind: 'all_at_once' }` when undefined).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the bad field.
 */
export function resolveArrivals(value: unknown): ArrivalProcess {
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
