/**
 * The options of `fleetroute simulate`, parsed and checked into what `comparePolicies` takes.
 * Each flag's reading, default and help come from its entry in `simulate-flags.ts`; this file
 * holds the rules between flags. Every mistake becomes a {@link UsageError} with a one-line
 * message.
 *
 * @module
 * @internal
 */
import type { PolicyName } from '../policies/policy.js';
import type { ArrivalProcess } from '../sim/arrivals.js';
import type { CompareDisaggregation } from '../sim/compare.js';
import type { FleetModelOptions } from '../sim/fleet-model.js';
import { formatFlagHelp, type ParsedFlags, parseFlags, UsageError } from './flags.js';
import {
  ARRIVAL_FLAGS,
  type ArrivalName,
  GENERATOR_FLAGS,
  type RoutingKeySource,
  SIMULATE_FLAGS,
  type WorkloadName,
} from './simulate-flags.js';

/** The workloads whose requests carry timestamps: `--arrival trace` is their default. */
const TIMED: readonly WorkloadName[] = ['mooncake', 'agent'];

/** @internal Which workload, and its generator's options. */
export type WorkloadChoice =
  | { readonly kind: Exclude<WorkloadName, 'mooncake'>; readonly options: Record<string, number> }
  | {
      readonly kind: 'mooncake';
      readonly path: string;
      readonly limit: number | undefined;
      readonly routingKey: RoutingKeySource;
    };

/** @internal The parsed command line, every flag resolved to its value or its default. */
export interface SimulateCommand {
  readonly help: boolean;
  readonly workload: WorkloadChoice;
  readonly fleet: FleetModelOptions;
  readonly policies: readonly PolicyName[];
  /** Explicit arrivals; `undefined` lets `comparePolicies` choose (Poisson at `load`). */
  readonly arrivals: ArrivalProcess | undefined;
  readonly load: number;
  readonly routers: number;
  /** Worker threads for `comparePolicies`. */
  readonly threads: number;
  readonly seed: number;
  readonly loadPollIntervalMs: number;
  /** Whether engines mark first tokens on the leases (`--no-first-tokens`: not). */
  readonly firstTokens: boolean;
  /** `--adapter-aware`: compare each policy with and without `adapterAware` around it. */
  readonly adapterAware: boolean;
  /** `--no-adapter-residency`: load reports without resident adapters. */
  readonly adapterResidency: boolean;
  /** `--kv-events`: compare `cache_aware` with and without the engines' KV events. */
  readonly kvEvents: boolean;
  readonly kvEventDelayMs: number;
  readonly kvEventLoss: number;
  readonly engineRestarts: number;
  /** `--shared-state`: `memory` or a Redis URL. */
  readonly sharedState: string | undefined;
  readonly sharedRefreshMs: number;
  readonly lowPriorityShare: number;
  readonly skipLowPriority: boolean;
  readonly tenants: number;
  readonly heavyTenantFactor: number;
  /** `--admission` and its limits: `undefined` when off. */
  readonly admission:
    | {
        readonly maxPrefilling?: number;
        readonly maxWaitMs?: number;
      }
    | undefined;
  /** `--disaggregation` and its flags: `undefined` when off. */
  readonly disaggregation: CompareDisaggregation | undefined;
  /** Where the HTML report goes; `undefined` with `--no-report`. */
  readonly out: string | undefined;
  readonly json: string | undefined;
  readonly quiet: boolean;
}

/** @internal The help text. */
export const SIMULATE_HELP = `Usage: fleetroute simulate [options]

Runs routing policies on a simulated fleet and compares cache hit rate, time to first token and
balance. Prints a table and writes an HTML report.

${formatFlagHelp(SIMULATE_FLAGS)}`;

type SimulateFlags = ParsedFlags<typeof SIMULATE_FLAGS>;

/**
 * @internal Parses `fleetroute simulate` arguments. Mistakes are reported in a fixed order:
 * the workload's flags, the fleet's, the policies, the arrivals', the output's, then the KV
 * events'.
 * @throws {@link UsageError} with a one-line message for any mistake.
 */
export function parseSimulateArgs(args: readonly string[]): SimulateCommand {
  const flags = parseFlags(SIMULATE_FLAGS, args);
  const help = flags.value('help');
  const { workload, seed } = readWorkload(flags);
  const fleet: FleetModelOptions = {
    workers: flags.value('workers'),
    cacheTokens: flags.value('cache-tokens'),
    blockSize: flags.value('block-size'),
    maxBatchTokens: flags.value('batch-tokens'),
    maxRunning: flags.value('max-running'),
    prefillTokensPerSecond: flags.value('prefill-tokens-per-s'),
    decodeStepMs: flags.value('decode-step-ms'),
    decodeStepPerRequestMs: flags.value('decode-step-per-request-ms'),
    maxLoras: flags.value('max-loras'),
    adapterLoadMs: flags.value('adapter-load-ms'),
  };
  const policies = flags.value('policies');
  const { arrivals, load } = readArrivals(flags, workload.kind);
  const out = readOut(flags);
  const kvEvents = flags.value('kv-events');
  for (const flag of ['kv-event-delay-ms', 'kv-event-loss'] as const) {
    if (flags.given(flag) && !kvEvents) throw new UsageError(`--${flag} needs --kv-events`);
  }
  const sharedState = flags.value('shared-state');
  if (flags.given('shared-refresh-ms') && sharedState === undefined)
    throw new UsageError('--shared-refresh-ms needs --shared-state');
  const admission = readAdmissionFlags(flags);
  if (flags.given('heavy-tenant-factor') && !flags.given('tenants'))
    throw new UsageError('--heavy-tenant-factor needs --tenants');
  if (kvEvents && !policies.includes('cache_aware')) {
    throw new UsageError('--kv-events compares cache_aware: add it to --policies');
  }
  const disaggregation = readDisaggregationFlags(flags);
  return {
    help,
    workload,
    // With disaggregation, the pools are the workers.
    fleet: disaggregation === undefined ? fleet : withoutWorkers(fleet),
    policies,
    arrivals,
    load,
    routers: flags.value('routers'),
    threads: flags.value('threads'),
    seed,
    loadPollIntervalMs: flags.value('poll-ms'),
    firstTokens: !flags.value('no-first-tokens'),
    adapterAware: flags.value('adapter-aware'),
    adapterResidency: !flags.value('no-adapter-residency'),
    kvEvents,
    kvEventDelayMs: flags.value('kv-event-delay-ms'),
    kvEventLoss: flags.value('kv-event-loss'),
    engineRestarts: flags.value('engine-restarts'),
    sharedState,
    sharedRefreshMs: flags.value('shared-refresh-ms'),
    lowPriorityShare: flags.value('low-priority-share'),
    skipLowPriority: readSkipLowPriority(flags),
    tenants: flags.value('tenants'),
    heavyTenantFactor: flags.value('heavy-tenant-factor'),
    admission,
    disaggregation,
    out,
    json: flags.value('json'),
    quiet: flags.value('quiet'),
  };
}

/** `fleet` without its `workers`: the pools set them. */
function withoutWorkers(fleet: FleetModelOptions): FleetModelOptions {
  const { workers: _workers, ...rest } = fleet;
  return rest;
}

/** The flags of a disaggregated fleet, `--disaggregation` first. */
const PD_SETTINGS = [
  'prefill-workers',
  'decode-workers',
  'transfer-ms',
  'transfer-ms-per-1k',
  'decode-policy',
] as const;
const RULE_SETTINGS = ['local-prefill-tokens', 'local-prefill-share'] as const;
/** What a disaggregated fleet does not model. */
const NOT_WITH_PD = [
  'workers',
  'kv-events',
  'shared-state',
  'admission',
  'engine-restarts',
] as const;

/** `--disaggregation` and its flags, which need it (the rule's, a conditional mode). */
function readDisaggregationFlags(flags: SimulateFlags): CompareDisaggregation | undefined {
  const mode = flags.value('disaggregation');
  if (mode === undefined) {
    for (const flag of [...PD_SETTINGS, ...RULE_SETTINGS])
      if (flags.given(flag)) throw new UsageError(`--${flag} needs --disaggregation`);
    return undefined;
  }
  for (const flag of NOT_WITH_PD) {
    if (flags.given(flag))
      throw new UsageError(
        flag === 'workers'
          ? '--workers does not apply with --disaggregation: give --prefill-workers and --decode-workers'
          : `--${flag} is not modelled with --disaggregation`,
      );
  }
  if (mode === 'always') {
    for (const flag of RULE_SETTINGS)
      if (flags.given(flag))
        throw new UsageError(`--${flag} applies to --disaggregation conditional or both`);
  }
  const decodePolicy = flags.value('decode-policy');
  return {
    mode,
    ...(decodePolicy === undefined ? {} : { decodePolicy }),
    prefillWorkers: flags.value('prefill-workers'),
    decodeWorkers: flags.value('decode-workers'),
    transferMs: flags.value('transfer-ms'),
    transferMsPerThousandTokens: flags.value('transfer-ms-per-1k'),
    rule: {
      localPrefillTokens: flags.value('local-prefill-tokens'),
      localPrefillShare: flags.value('local-prefill-share'),
    },
  };
}

/** `--skip-low-priority`, which needs a low-priority share to skip. */
function readSkipLowPriority(flags: SimulateFlags): boolean {
  const skip = flags.value('skip-low-priority');
  if (skip && !(flags.value('low-priority-share') > 0))
    throw new UsageError('--skip-low-priority needs --low-priority-share');
  return skip;
}

/** `--admission` and its limits, each of which needs it. */
function readAdmissionFlags(flags: SimulateFlags): SimulateCommand['admission'] {
  const maxPrefilling = flags.value('admission-max-prefilling');
  const maxWaitMs = flags.value('admission-max-wait-ms');
  if (!flags.value('admission')) {
    const limits = ['admission-max-prefilling', 'admission-max-wait-ms'] as const;
    for (const flag of limits)
      if (flags.given(flag)) throw new UsageError(`--${flag} needs --admission`);
    return undefined;
  }
  return {
    ...(maxPrefilling === undefined ? {} : { maxPrefilling }),
    ...(maxWaitMs === undefined ? {} : { maxWaitMs }),
  };
}

/** `--workload`, `--trace`, `--seed` and the generator flags that apply to the workload. */
function readWorkload(flags: SimulateFlags): { workload: WorkloadChoice; seed: number } {
  const trace = flags.value('trace');
  const name =
    trace !== undefined && !flags.given('workload') ? 'mooncake' : flags.value('workload');
  if (name === 'mooncake' && trace === undefined) {
    throw new UsageError('--workload mooncake needs --trace <file>');
  }
  if (trace !== undefined && name !== 'mooncake') {
    throw new UsageError(`--trace applies to --workload mooncake, not ${name}`);
  }
  if (flags.given('routing-key') && name !== 'mooncake') {
    throw new UsageError(`--routing-key applies to a trace (--trace <file>), not ${name}`);
  }
  const seed = flags.value('seed');
  const options: Record<string, number> = {};
  for (const flag of Object.keys(GENERATOR_FLAGS) as (keyof typeof GENERATOR_FLAGS)[]) {
    const target = GENERATOR_FLAGS[flag].sets[name];
    if (target === undefined) {
      if (flags.given(flag)) {
        throw new UsageError(`--${flag} does not apply to --workload ${name}`);
      }
      continue;
    }
    const value = flags.value(flag) ?? target[1];
    if (value !== undefined) options[target[0]] = value;
  }
  const workload: WorkloadChoice =
    name === 'mooncake'
      ? {
          kind: 'mooncake',
          path: trace!,
          limit: options.limit,
          routingKey: flags.value('routing-key'),
        }
      : { kind: name, options: { ...options, seed } };
  return { workload, seed };
}

/** `--arrival` and the flags of the arrival process it names. */
function readArrivals(
  flags: SimulateFlags,
  workload: WorkloadName,
): { arrivals: ArrivalProcess | undefined; load: number } {
  const kind: ArrivalName =
    TIMED.includes(workload) && !flags.given('arrival') ? 'trace' : flags.value('arrival');
  for (const flag of Object.keys(ARRIVAL_FLAGS) as (keyof typeof ARRIVAL_FLAGS)[]) {
    const applies = ARRIVAL_FLAGS[flag].arrival;
    if (flags.given(flag) && kind !== applies) {
      throw new UsageError(`--${flag} applies to --arrival ${applies}, not ${kind}`);
    }
  }
  if (flags.given('load') && flags.given('rate')) {
    throw new UsageError('give --load or --rate, not both');
  }
  if (kind === 'trace' && !TIMED.includes(workload)) {
    throw new UsageError('--arrival trace needs a trace (--trace <file>) or --workload agent');
  }
  const load = flags.value('load');
  switch (kind) {
    case 'all':
      return { arrivals: { kind: 'all_at_once' }, load };
    case 'closed':
      return { arrivals: { kind: 'closed_loop', concurrency: flags.value('concurrency') }, load };
    case 'trace':
      return { arrivals: { kind: 'trace', speedup: flags.value('speedup') }, load };
    case 'poisson': {
      const rate = flags.value('rate');
      return {
        arrivals: rate === undefined ? undefined : { kind: 'poisson', ratePerSecond: rate },
        load,
      };
    }
  }
}

/** `--out` or `--no-report`. */
function readOut(flags: SimulateFlags): string | undefined {
  const noReport = flags.value('no-report');
  if (noReport && flags.given('out')) throw new UsageError('give --out or --no-report, not both');
  return noReport ? undefined : flags.value('out');
}
