/**
 * `comparePolicies`: every policy on the same workload, fleet and arrivals, gathered into one
 * {@link Comparison}.
 *
 * @module
 */
import { availableParallelism } from 'node:os';
import { boolean, callback, custom, integer, number, OptionTable } from '../core/option-table.js';
import { fail, readObject } from '../core/options.js';
import type { AdapterAwareConfig } from '../policies/adapter-aware.js';
import { POLICY_NAMES } from '../policies/create-policy.js';
import type { PolicyName } from '../policies/policy.js';
import { type ArrivalProcess, describeArrivals } from './arrivals.js';
import { fleetCapacity } from './capacity.js';
import { ceilingHitRate } from './ceiling.js';
import type { CompareJob } from './compare-job.js';
import {
  type DisaggregationMode,
  resolveSimDisaggregation,
  type SimDisaggregation,
} from './disaggregation.js';
import type { FleetModelOptions } from './fleet-model.js';
import { ORACLE } from './oracle.js';
import { runJobs } from './parallel-runs.js';
import type { Comparison } from './result.js';
import { checkSimStore } from './sim-store.js';
import {
  resolveArrivals,
  resolveFleetModel,
  resolveSimulationOptions,
  SIMULATION_OPTIONS,
  type SimulationOptions,
} from './simulation-options.js';
import { readWorkload } from './workload-check.js';

/**
 * The policies compared by default: every policy but `passthrough`, which always picks the first
 * available worker in list order (it reads neither the request nor its headers), so on a fleet
 * of equal workers it sends everything to one of them.
 *
 * @public
 */
export const DEFAULT_POLICIES: readonly PolicyName[] = Object.freeze(
  POLICY_NAMES.filter((name) => name !== 'passthrough'),
);

/**
 * Options of {@link comparePolicies}. Those it shares with `simulate` — `workload`, `fleet`,
 * `routers`, `seed`, `loadPollIntervalMs`, `firstTokens`, `engineRestarts` (the greedy oracle's run
 * too), `kvEventDelayMs` and `kvEventLoss` (the runs with events), `sharedRefreshMs` (the runs
 * with shared state), `lowPriorityShare`, `skipLowPriority`, `tenants`, `heavyTenantFactor`, `admission` and `adapterResidency` — are
 * {@link SimulationOptions}' own, applied to every run.
 *
 * @public
 */
export interface CompareOptions
  extends Pick<
    SimulationOptions,
    | 'workload'
    | 'fleet'
    | 'routers'
    | 'seed'
    | 'loadPollIntervalMs'
    | 'firstTokens'
    | 'engineRestarts'
    | 'kvEventDelayMs'
    | 'kvEventLoss'
    | 'sharedRefreshMs'
    | 'lowPriorityShare'
    | 'skipLowPriority'
    | 'tenants'
    | 'heavyTenantFactor'
    | 'admission'
    | 'adapterResidency'
  > {
  /** @defaultValue {@link DEFAULT_POLICIES} */
  readonly policies?: readonly PolicyName[];
  /** Configuration per policy (its `clock` and `seed` are set by the simulator). */
  readonly policyConfigs?: Readonly<Partial<Record<PolicyName, Readonly<Record<string, unknown>>>>>;
  /**
   * How requests arrive. @defaultValue trace timestamps when every request has one, else
   * Poisson at `load` × the fleet's capacity
   */
  readonly arrivals?: ArrivalProcess;
  /** Offered load for the default Poisson arrivals, as a share of capacity. @defaultValue 0.8 */
  readonly load?: number;
  /**
   * Compare `cache_aware` with and without the engines' KV events: when `policies` includes
   * `cache_aware`, it runs twice — approximate (its own tree, as without this option) and fed
   * by events ({@link SimulationOptions.kvEvents}; row `cache_aware+events`) — and, with
   * `routers` > 1, both of them at 1 router too (rows suffixed ` (1 router)`), so the table
   * shows what K routers cost with and without events. The other policies and the greedy oracle run
   * once, as without it. @defaultValue false
   */
  readonly kvEvents?: boolean;
  /**
   * Compare each policy with and without `adapterAware` around it
   * ({@link SimulationOptions.adapterAware}: `true` for its defaults, or its options but
   * `clock`): every run gets a twin labelled `adapterAware(<policy>)`. @defaultValue false
   */
  readonly adapterAware?: boolean | Omit<AdapterAwareConfig, 'clock'>;
  /**
   * Compare K routers with and without shared state ({@link SimulationOptions.sharedState}):
   * each run at `routers` gets a twin whose routers share state (row suffixed `+shared`), and
   * with `routers` > 1 every policy also runs at 1 router (row suffixed ` (1 router)`), so the
   * table shows what K routers cost, and what sharing wins back. The greedy oracle runs once.
   * @defaultValue none
   */
  readonly sharedState?: string;
  /**
   * Called as each run progresses, from 0 to `total` completed requests, under the run's
   * {@link PolicyRun.policy} label (`cache_aware`, `cache_aware+events (1 router)`, …), and
   * the greedy oracle's under `'greedy-oracle'`. With worker threads, the runs' calls
   * interleave.
   */
  readonly onProgress?: (run: string, completed: number, total: number) => void;
  /**
   * Worker threads to run the policies in: a pool of `min(runs, threads)`, each taking the next
   * run when done; 1 runs them one after another in this thread. The results are the same
   * either way (but for `routingMicrosPerRequest`, wall-clock time). The runs also go one
   * after another here when the workload cannot be built again in a thread — only the built-in
   * generators' and the trace reader's workloads can, not a workload of your own or a copy of
   * one — when a `policyConfigs` entry holds anything but plain data (a function, a class
   * instance), or when no worker thread starts. Each thread builds the workload again (a trace
   * read from a file is read again) and holds its own copy: memory grows with the threads.
   * @defaultValue `os.availableParallelism()`
   */
  readonly threads?: number;
  /**
   * Also run the greedy oracle ({@link Comparison.oracle}): one more simulation, routed greedily
   * with perfect knowledge of every engine's cache and queue — a reference, not a bound. It
   * models a fleet of regular workers, so it does not run with `disaggregation`.
   * @defaultValue true
   */
  readonly oracle?: boolean;
  /**
   * Run every policy on a prefill/decode-disaggregated fleet
   * ({@link SimulationOptions.disaggregation}); `mode: 'both'` runs each policy twice, always
   * disaggregated (row suffixed `+always`) and conditionally (`+conditional`), so the table shows
   * what the conditional rule changes. The capacity behind `load` is then that of a regular fleet
   * of as many workers as the two pools.
   * @defaultValue none: a fleet of regular workers
   */
  readonly disaggregation?: CompareDisaggregation;
}

/**
 * {@link CompareOptions.disaggregation}: {@link SimDisaggregation}, whose `mode` may also be
 * `'both'`.
 *
 * @public
 */
export interface CompareDisaggregation extends Omit<SimDisaggregation, 'mode'> {
  readonly mode?: DisaggregationMode | 'both';
}

/**
 * The options of `simulate` a comparison hands to every run as they are given (each run checks
 * them): those {@link CompareOptions} shares with {@link SimulationOptions}, but for the ones it
 * reads itself or gives each run its own way.
 */
type RunOption = Exclude<
  keyof CompareOptions & keyof SimulationOptions,
  | 'workload'
  | 'fleet'
  | 'arrivals'
  | 'kvEvents'
  | 'sharedState'
  | 'onProgress'
  | 'disaggregation'
  | 'adapterAware'
>;

/** Every {@link RunOption}: the compiler checks that none is missing or extra. */
const RUN_OPTIONS = Object.keys({
  routers: 0,
  seed: 0,
  loadPollIntervalMs: 0,
  firstTokens: 0,
  engineRestarts: 0,
  kvEventDelayMs: 0,
  kvEventLoss: 0,
  sharedRefreshMs: 0,
  lowPriorityShare: 0,
  skipLowPriority: 0,
  tenants: 0,
  heavyTenantFactor: 0,
  admission: 0,
  adapterResidency: 0,
} satisfies Record<RunOption, 0>) as readonly RunOption[];

/**
 * @internal The options {@link comparePolicies} reads itself, in the order it checks them (the
 * workload, the policies and the fleet are checked before them; `routers`, `seed` and
 * `loadPollIntervalMs` are read with `simulate`'s options, for each run).
 */
export const COMPARE_OPTIONS = new OptionTable(
  '',
  'CompareOptions',
  {
    load: number(0.8, 1e-6, 100),
    policyConfigs: custom<Readonly<Record<string, unknown>>>(Object.freeze({}), (field, value) =>
      readObject(field, value),
    ),
    onProgress: callback<NonNullable<CompareOptions['onProgress']>>('a function', undefined, ''),
    threads: integer(availableParallelism(), 1, 1_024, '`os.availableParallelism()`'),
    oracle: boolean(true),
    kvEvents: boolean(false),
    adapterAware: custom<Readonly<Record<string, unknown>> | undefined>(
      undefined,
      (field, value) =>
        SIMULATION_OPTIONS.read({ adapterAware: value }, undefined, field).adapterAware,
      'false',
    ),
  },
  'any',
);

/** The row label of `cache_aware` fed by KV events. @internal */
export const EVENTS_SUFFIX = '+events';

/** The row label suffix of a run whose routers share state. @internal */
export const SHARED_SUFFIX = '+shared';

/** @internal One run of a comparison before it is resolved: policy, events, routers, label. */
interface Variant {
  readonly policy: PolicyName;
  readonly kvEvents: boolean;
  readonly routers: number | undefined;
  readonly label: string;
  readonly shared: boolean;
  /** With disaggregation: the mode of this run (else the one mode asked for). */
  readonly mode?: DisaggregationMode;
  /** The `adapterAware` options of a wrapped twin; absent for the policy alone. */
  readonly adapterAware?: Readonly<Record<string, unknown>>;
}

/** `variants`, each followed by its twin wrapped in `adapterAware` with `options`. */
function withAdapterAware(
  variants: readonly Variant[],
  options: Readonly<Record<string, unknown>> | undefined,
): Variant[] {
  if (options === undefined) return [...variants];
  return variants.flatMap((v) => [
    v,
    { ...v, adapterAware: options, label: v.label.replace(v.policy, `adapterAware(${v.policy})`) },
  ]);
}

/**
 * @internal The runs of `policies`: one each, but with `kvEvents`, `cache_aware` approximate and
 * with events, at `routers` and, when that is more than 1, at 1 router first. O(policies).
 */
export function variantsOf(
  policies: readonly PolicyName[],
  kvEvents: boolean,
  routers: number,
  shared = false,
): Variant[] {
  const variants: Variant[] = [];
  for (const policy of policies) {
    const events = kvEvents && policy === 'cache_aware';
    if (!events && !shared) {
      variants.push({ policy, kvEvents: false, routers: undefined, label: policy, shared: false });
      continue;
    }
    for (const k of routers > 1 ? [1, routers] : [routers]) {
      const suffix = k === routers ? '' : ` (${k} router${k === 1 ? '' : 's'})`;
      for (const withEvents of events ? [false, true] : [false]) {
        const label = `${policy}${withEvents ? EVENTS_SUFFIX : ''}`;
        variants.push({
          policy,
          kvEvents: withEvents,
          routers: k,
          label: `${label}${suffix}`,
          shared: false,
        });
        if (shared && k === routers)
          variants.push({
            policy,
            kvEvents: withEvents,
            routers: k,
            label: `${label}${SHARED_SUFFIX}`,
            shared: true,
          });
      }
    }
  }
  return variants;
}

/**
 * Runs each policy through `simulate` on the same workload, fleet, arrivals and seed — and,
 * unless `oracle: false`, the greedy-oracle run ({@link Comparison.oracle}) — and computes the ceiling
 * hit rate and the fleet's capacity. The runs go to worker threads (see
 * {@link CompareOptions.threads}); the result does not depend on how many.
 *
 * Every option — the workload completely (as `simulate` checks it), and each policy's
 * configuration — is checked before the first policy runs, so a mistake fails at once rather
 * than after several simulations. Every router a run builds is closed however it ends.
 *
 * @returns the {@link Comparison}, runs in the order of `policies` (with `kvEvents`, the
 *   variants of `cache_aware` in its place: see {@link CompareOptions.kvEvents}).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for an invalid option or a malformed
 *   workload, naming it; `TRANSPORT_FAILED` before any run when `sharedState` names a Redis
 *   that does not answer; an error a run throws in a worker thread, as the same
 *   `FleetRouteError` (code and message); an error thrown by `onProgress`, as is (the other
 *   runs are then stopped).
 * Cost: one workload check (O(requests + prompt tokens)), the ceiling (O(prompt tokens)), then
 * one simulation per policy and one for the greedy oracle (which walks every engine's cache and queue
 * for each request), spread over `threads` threads, each of which first builds the workload again.
 * @public
 */
export async function comparePolicies(options: CompareOptions): Promise<Comparison> {
  const o = readObject('compare options', options);
  const workload = readWorkload(o.workload);
  const policies = readPolicies(o.policies);
  const pd = readDisaggregation(o.disaggregation);
  const given = o.fleet as FleetModelOptions | undefined;
  const fleet = resolveFleetModel(pd === undefined ? given : pd.fleet(given));
  const own = COMPARE_OPTIONS.read(o);
  const { load, onProgress, kvEvents } = own;
  const oracle = own.oracle && pd === undefined;
  const ceiling = ceilingHitRate(workload, fleet.blockSize);
  const capacity = fleetCapacity(workload, fleet, ceiling);
  const traced =
    workload.requests.length > 0 && workload.requests.every((r) => r.timestamp !== undefined);
  const arrivals: ArrivalProcess =
    o.arrivals === undefined
      ? traced
        ? { kind: 'trace' }
        : { kind: 'poisson', ratePerSecond: Math.max(1e-6, load * capacity) }
      : resolveArrivals(o.arrivals);
  const sharedState = o.sharedState as string | undefined;
  const passed = pickGiven(o, RUN_OPTIONS);
  const base = (
    policy: PolicyName,
    events: boolean,
    share = false,
    mode: DisaggregationMode | undefined = undefined,
  ): SimulationOptions => ({
    workload,
    policy,
    policyConfig:
      (own.policyConfigs[policy] as Readonly<Record<string, unknown>> | undefined) ?? {},
    fleet,
    arrivals,
    ...passed,
    ...(events ? { kvEvents: true } : {}),
    ...(share && sharedState !== undefined ? { sharedState } : {}),
    ...(pd === undefined ? {} : { disaggregation: { ...pd.options, mode: mode ?? pd.modes[0]! } }),
  });
  // Resolved once without events for the shared settings (routers, seed) and the oracle.
  const shared = resolveSimulationOptions(base(policies[0]!, false), true);
  if (sharedState !== undefined) {
    resolveSimulationOptions(base(policies[0]!, false, true), true);
    await checkSimStore(sharedState);
  }
  const variants = withAdapterAware(
    modeVariants(
      variantsOf(policies, kvEvents, shared.routers, sharedState !== undefined),
      pd?.modes,
    ),
    own.adapterAware,
  );
  const jobs = jobsOf(variants, base, onProgress);
  if (oracle) {
    // The oracle ignores the policy and its configuration; the rest of the plan is shared.
    const progress = onProgress === undefined ? undefined : progressOf(onProgress, ORACLE);
    jobs.push({
      name: ORACLE,
      oracle: true,
      plan: { ...shared, policyConfig: {}, onProgress: progress },
    });
  }
  const { runs: results } = await runJobs(
    workload,
    jobs,
    own.threads,
    onProgress === undefined
      ? undefined
      : (job, completed, total) => onProgress(jobs[job]!.name, completed, total),
  );
  const runs = results
    .slice(0, variants.length)
    .map((run, i) =>
      run.policy === variants[i]!.label ? run : { ...run, policy: variants[i]!.label },
    );
  const timestampOffsetMs = runs[0]?.timestampOffsetMs ?? 0;
  const describe = rebased(describeArrivals(arrivals), timestampOffsetMs);
  return {
    workload: {
      name: workload.name,
      description: workload.description,
      requests: workload.requests.length,
      parameters: workload.parameters,
    },
    fleet,
    arrivals:
      o.arrivals === undefined && !traced
        ? `${describe} (${Math.round(load * 100)} % of capacity)`
        : describe,
    timestampOffsetMs,
    // Every plan holds the same resolved values (but the 1-router variants' routers).
    routers: shared.routers,
    seed: shared.seed,
    ...(kvEvents ? { kvEvents: { delayMs: shared.kvEventDelayMs, loss: shared.kvEventLoss } } : {}),
    ...(shared.engineRestarts > 0 ? { engineRestarts: shared.engineRestarts } : {}),
    ...(pd === undefined ? {} : { disaggregation: pd.setup }),
    ceiling,
    capacity,
    runs,
    ...(oracle ? { oracle: results[variants.length]! } : {}),
  };
}

/** With both disaggregation modes: each variant twice, suffixed `+always` and `+conditional`. */
function modeVariants(
  variants: readonly Variant[],
  modes: readonly DisaggregationMode[] | undefined,
): readonly Variant[] {
  if (modes === undefined || modes.length < 2) return variants;
  return variants.flatMap((v) =>
    modes.map((mode) => ({ ...v, mode, label: `${v.label}+${mode}` })),
  );
}

/**
 * `disaggregation` checked (as `simulate` checks it, `mode` aside): its options for each run,
 * the modes to run, what the comparison reports of it, and the fleet of the two pools.
 */
function readDisaggregation(value: unknown):
  | {
      readonly options: SimDisaggregation;
      readonly modes: readonly DisaggregationMode[];
      readonly setup: NonNullable<Comparison['disaggregation']>;
      fleet(given: FleetModelOptions | undefined): FleetModelOptions;
    }
  | undefined {
  if (value === undefined) return undefined;
  const { mode, ...rest } = readObject('disaggregation', value);
  const both = mode === 'both';
  const resolved = resolveSimDisaggregation(both ? rest : { ...rest, mode });
  const modes: readonly DisaggregationMode[] = both ? ['always', 'conditional'] : [resolved.mode];
  const { mode: _mode, decodePolicy: _policy, ...setup } = resolved;
  const decodePolicy = Object.fromEntries(
    modes.map((m) => [m, resolveSimDisaggregation({ ...rest, mode: m }).decodePolicy]),
  );
  const workers = resolved.prefillWorkers + resolved.decodeWorkers;
  return {
    options: rest as SimDisaggregation,
    modes,
    setup: { ...setup, modes, decodePolicy },
    // Each run checks a `workers` given against the pools.
    fleet: (given) => ({ ...given, workers: given?.workers ?? workers }),
  };
}

/** `policies` checked: a non-empty array of policy names (the default when undefined). */
function readPolicies(value: unknown): readonly PolicyName[] {
  const policies = (value ?? DEFAULT_POLICIES) as readonly PolicyName[];
  if (!Array.isArray(policies) || policies.length === 0) {
    fail('policies', 'a non-empty array of policy names', policies);
  }
  for (const name of policies) {
    if (!(POLICY_NAMES as readonly unknown[]).includes(name)) {
      fail('policies', `names among ${POLICY_NAMES.join(', ')}`, name);
    }
  }
  return policies;
}

/** The given (defined) values of `o` among `keys`, as `simulate`'s options. O(keys). */
function pickGiven(
  o: Readonly<Record<string, unknown>>,
  keys: readonly RunOption[],
): Pick<SimulationOptions, RunOption> {
  const given: Record<string, unknown> = {};
  for (const key of keys) if (o[key] !== undefined) given[key] = o[key];
  return given as Pick<SimulationOptions, RunOption>;
}

/** A run's progress callback, reporting under `name`. */
function progressOf(
  onProgress: NonNullable<CompareOptions['onProgress']>,
  name: string,
): (completed: number, total: number) => void {
  return (completed, total) => onProgress(name, completed, total);
}

/** The jobs of `variants`, each resolved (and so checked) from `base`. O(variants). */
function jobsOf(
  variants: readonly Variant[],
  base: (
    policy: PolicyName,
    events: boolean,
    share: boolean,
    mode: DisaggregationMode | undefined,
  ) => SimulationOptions,
  onProgress: CompareOptions['onProgress'],
): CompareJob[] {
  return variants.map((variant) => ({
    name: variant.label,
    oracle: false,
    plan: resolveSimulationOptions(
      {
        ...base(variant.policy, variant.kvEvents, variant.shared, variant.mode),
        ...(variant.routers === undefined ? {} : { routers: variant.routers }),
        ...(variant.adapterAware === undefined ? {} : { adapterAware: variant.adapterAware }),
        ...(onProgress === undefined ? {} : { onProgress: progressOf(onProgress, variant.label) }),
      },
      true,
    ),
  }));
}

/** `description` of trace arrivals, saying which offset the rebasing removed (when any). */
function rebased(description: string, offsetMs: number): string {
  if (offsetMs === 0) return description;
  const shown = Number.isInteger(offsetMs)
    ? offsetMs.toLocaleString('en-US')
    : offsetMs.toLocaleString('en-US', { maximumFractionDigits: 3 });
  return `${description}, rebased: ${shown} ms subtracted (first arrival at 0)`;
}
