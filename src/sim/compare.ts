/**
 * `comparePolicies`: every policy on the same workload, fleet and arrivals, gathered into one
 * {@link Comparison}.
 *
 * @module
 */
import { callback, custom, number, OptionTable } from '../core/option-table.js';
import { fail, readObject } from '../core/options.js';
import { POLICY_NAMES } from '../policies/create-policy.js';
import type { PolicyName } from '../policies/policy.js';
import { type ArrivalProcess, describeArrivals } from './arrivals.js';
import { fleetCapacity } from './capacity.js';
import { ceilingHitRate } from './ceiling.js';
import type { FleetModelOptions } from './fleet-model.js';
import type { Comparison, PolicyRun } from './result.js';
import { simulateResolved } from './simulation.js';
import {
  resolveArrivals,
  resolveFleetModel,
  resolveSimulationOptions,
  type SimulationOptions,
} from './simulation-options.js';
import type { Workload } from './workload.js';
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
 * Options of {@link comparePolicies}.
 *
 * @public
 */
export interface CompareOptions {
  readonly workload: Workload;
  /** @defaultValue {@link DEFAULT_POLICIES} */
  readonly policies?: readonly PolicyName[];
  /** Configuration per policy (its `clock` and `seed` are set by the simulator). */
  readonly policyConfigs?: Readonly<Partial<Record<PolicyName, Readonly<Record<string, unknown>>>>>;
  readonly fleet?: FleetModelOptions;
  /**
   * How requests arrive. @defaultValue trace timestamps when every request has one, else
   * Poisson at `load` × the fleet's capacity
   */
  readonly arrivals?: ArrivalProcess;
  /** Offered load for the default Poisson arrivals, as a share of capacity. @defaultValue 0.8 */
  readonly load?: number;
  /** As {@link SimulationOptions.routers}, for every run. */
  readonly routers?: number;
  /** As {@link SimulationOptions.seed}, for every run. */
  readonly seed?: number;
  /** As {@link SimulationOptions.loadPollIntervalMs}, for every run. */
  readonly loadPollIntervalMs?: number;
  /** Called as each policy's run progresses. */
  readonly onProgress?: (policy: PolicyName, completed: number, total: number) => void;
}

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
  },
  'any',
);

/**
 * Runs each policy through `simulate` on the same workload, fleet, arrivals and seed, and
 * computes the ceiling hit rate and the fleet's capacity.
 *
 * Every option — the workload completely (as `simulate` checks it), and each policy's
 * configuration — is checked before the first policy runs, so a mistake fails at once rather
 * than after several simulations. Every router a run builds is closed however it ends.
 *
 * @returns the {@link Comparison}, runs in the order of `policies`.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for an invalid option or a malformed
 *   workload, naming it; an error thrown by `onProgress`, as is.
 * Cost: one workload check (O(requests + prompt tokens)), the ceiling (O(prompt tokens)), then
 * one simulation per policy.
 * @public
 */
export async function comparePolicies(options: CompareOptions): Promise<Comparison> {
  const o = readObject('compare options', options);
  const workload = readWorkload(o.workload);
  const policies = (o.policies ?? DEFAULT_POLICIES) as readonly PolicyName[];
  if (!Array.isArray(policies) || policies.length === 0) {
    fail('policies', 'a non-empty array of policy names', policies);
  }
  for (const name of policies) {
    if (!(POLICY_NAMES as readonly unknown[]).includes(name)) {
      fail('policies', `names among ${POLICY_NAMES.join(', ')}`, name);
    }
  }
  const fleet = resolveFleetModel(o.fleet as FleetModelOptions | undefined);
  const { load, policyConfigs: configs, onProgress } = COMPARE_OPTIONS.read(o);
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
  const plans = policies.map((policy) => {
    const simulation: SimulationOptions = {
      workload,
      policy,
      policyConfig: (configs[policy] as Readonly<Record<string, unknown>> | undefined) ?? {},
      fleet,
      arrivals,
      ...(o.routers === undefined ? {} : { routers: o.routers as number }),
      ...(o.seed === undefined ? {} : { seed: o.seed as number }),
      ...(o.loadPollIntervalMs === undefined
        ? {}
        : { loadPollIntervalMs: o.loadPollIntervalMs as number }),
      ...(onProgress === undefined
        ? {}
        : { onProgress: (done: number, total: number) => onProgress(policy, done, total) }),
    };
    return resolveSimulationOptions(simulation, true);
  });
  const runs: PolicyRun[] = [];
  for (const plan of plans) runs.push(await simulateResolved(plan));
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
    // Every plan holds the same resolved values; `policies` is never empty.
    routers: plans[0]!.routers,
    seed: plans[0]!.seed,
    ceiling,
    capacity,
    runs,
  };
}

/** `description` of trace arrivals, saying which offset the rebasing removed (when any). */
function rebased(description: string, offsetMs: number): string {
  if (offsetMs === 0) return description;
  const shown = Number.isInteger(offsetMs)
    ? offsetMs.toLocaleString('en-US')
    : offsetMs.toLocaleString('en-US', { maximumFractionDigits: 3 });
  return `${description}, rebased: ${shown} ms subtracted (first arrival at 0)`;
}
