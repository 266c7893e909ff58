/**
 * The options of `fleetroute simulate`, parsed and checked into what `comparePolicies` takes.
 * Every mistake becomes a {@link UsageError} with a one-line message.
 *
 * @module
 * @internal
 */
import { parseArgs } from 'node:util';
import { POLICY_NAMES, type PolicyName } from '../policies/policy.js';
import type { ArrivalProcess } from '../sim/arrivals.js';
import type { FleetModelOptions } from '../sim/fleet-model.js';

/** @internal A mistake in the command line: printed on one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/** @internal Which workload, and its generator's options. */
export type WorkloadChoice =
  | { readonly kind: 'shared-prefix'; readonly options: Record<string, number> }
  | { readonly kind: 'chat'; readonly options: Record<string, number> }
  | { readonly kind: 'hot-prefix'; readonly options: Record<string, number> }
  | { readonly kind: 'zero-reuse'; readonly options: Record<string, number> }
  | { readonly kind: 'mooncake'; readonly path: string; readonly limit: number | undefined };

/** @internal The parsed command line. */
export interface SimulateCommand {
  readonly help: boolean;
  readonly workload: WorkloadChoice;
  readonly fleet: FleetModelOptions;
  readonly policies: readonly PolicyName[] | undefined;
  /** Explicit arrivals; `undefined` lets `comparePolicies` choose (Poisson at `load`, or trace). */
  readonly arrivals: ArrivalProcess | undefined;
  readonly load: number;
  readonly routers: number;
  readonly seed: number;
  readonly loadPollIntervalMs: number | undefined;
  /** Where the HTML report goes; `undefined` with `--no-report`. */
  readonly out: string | undefined;
  readonly json: string | undefined;
  readonly quiet: boolean;
}

const WORKLOADS = ['shared-prefix', 'chat', 'hot-prefix', 'zero-reuse', 'mooncake'] as const;

/** Workload flags: the generator option each sets, and the workloads it applies to. */
const WORKLOAD_FLAGS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  groups: { 'shared-prefix': 'groups' },
  'prompts-per-group': { 'shared-prefix': 'promptsPerGroup' },
  'system-tokens': { 'shared-prefix': 'systemPromptLength', chat: 'systemPromptLength' },
  'question-tokens': { 'shared-prefix': 'questionLength', chat: 'questionLength' },
  'output-tokens': {
    'shared-prefix': 'outputLength',
    'hot-prefix': 'outputLength',
    'zero-reuse': 'outputLength',
  },
  users: { chat: 'users' },
  rounds: { chat: 'rounds' },
  'answer-tokens': { chat: 'answerLength' },
  requests: { 'hot-prefix': 'requests', 'zero-reuse': 'requests', mooncake: 'limit' },
  'prefix-tokens': { 'hot-prefix': 'prefixLength' },
  'suffix-tokens': { 'hot-prefix': 'suffixLength' },
  'prompt-tokens': { 'zero-reuse': 'promptLength' },
};

const ARRIVALS = ['poisson', 'all', 'closed', 'trace'] as const;

/** @internal The help text. */
export const SIMULATE_HELP = `Usage: fleetroute simulate [options]

Runs routing policies on a simulated fleet and compares cache hit rate, time to first token and
balance. Prints a table and writes an HTML report.

Workload
  --workload <name>         shared-prefix (default), chat, hot-prefix, zero-reuse, mooncake
  --trace <file>            a Mooncake JSONL trace (implies --workload mooncake)
  --groups <n>              shared-prefix: groups (64)
  --prompts-per-group <n>   shared-prefix: prompts per group (16)
  --system-tokens <n>       shared-prefix, chat: system prompt tokens (2048, 1024)
  --question-tokens <n>     shared-prefix, chat: question tokens (128, 96)
  --output-tokens <n>       shared-prefix, hot-prefix, zero-reuse: output tokens (256, 128, 128)
  --users <n>               chat: users (32)
  --rounds <n>              chat: rounds per user (8)
  --answer-tokens <n>       chat: answer tokens (192)
  --requests <n>            hot-prefix, zero-reuse: requests (512); mooncake: first n records
  --prefix-tokens <n>       hot-prefix: shared prefix tokens (2048)
  --suffix-tokens <n>       hot-prefix: per-request suffix tokens (64)
  --prompt-tokens <n>       zero-reuse: prompt tokens (1024)

Fleet
  --workers <n>             workers (8)
  --cache-tokens <n|inf>    prefix cache per worker, tokens (262144)

Routing
  --policies <a,b,...>      policies to compare (all but passthrough, which always picks the
                            first available worker in list order)
  --routers <n>             independent routers sharing the fleet, round-robin (1)
  --poll-ms <ms>            simulated ms between load reports to the policies (10000; 0 = none)

Arrivals
  --arrival <kind>          poisson (default; trace for --trace), all, closed, trace
  --load <f>                poisson: offered load as a share of capacity (0.8)
  --rate <req/s>            poisson: explicit rate (instead of --load)
  --concurrency <n>         closed: requests in flight (64)
  --speedup <x>             trace: replay x times faster (1); timestamps are rebased so the
                            first arrival is at 0 (the table says by how much)

Output
  --seed <n>                seed of the workload, arrivals and policies (1)
  --out <file>              HTML report path (fleetroute-report.html)
  --no-report               no HTML report
  --json <file>             also write the results as JSON
  --quiet                   no progress output
  -h, --help                this help
`;

/**
 * @internal Parses `fleetroute simulate` arguments.
 * @throws {@link UsageError} with a one-line message for any mistake.
 */
export function parseSimulateArgs(args: readonly string[]): SimulateCommand {
  let values: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({
      args: [...args],
      strict: true,
      allowPositionals: false,
      options: {
        workload: { type: 'string' },
        trace: { type: 'string' },
        ...Object.fromEntries(Object.keys(WORKLOAD_FLAGS).map((k) => [k, { type: 'string' }])),
        workers: { type: 'string' },
        'cache-tokens': { type: 'string' },
        policies: { type: 'string' },
        routers: { type: 'string' },
        'poll-ms': { type: 'string' },
        arrival: { type: 'string' },
        load: { type: 'string' },
        rate: { type: 'string' },
        concurrency: { type: 'string' },
        speedup: { type: 'string' },
        seed: { type: 'string' },
        out: { type: 'string' },
        'no-report': { type: 'boolean' },
        json: { type: 'string' },
        quiet: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
    values = parsed.values as Record<string, string | boolean | undefined>;
  } catch (error) {
    throw new UsageError(firstLine(error));
  }
  const text = (name: string): string | undefined => values[name] as string | undefined;
  const help = values.help === true;

  const trace = text('trace');
  const workloadName = text('workload') ?? (trace === undefined ? 'shared-prefix' : 'mooncake');
  if (!(WORKLOADS as readonly string[]).includes(workloadName)) {
    throw new UsageError(
      `--workload must be one of ${WORKLOADS.join(', ')}, got '${workloadName}'`,
    );
  }
  if (workloadName === 'mooncake' && trace === undefined) {
    throw new UsageError('--workload mooncake needs --trace <file>');
  }
  if (trace !== undefined && workloadName !== 'mooncake') {
    throw new UsageError(`--trace applies to --workload mooncake, not ${workloadName}`);
  }
  const seed = integer('seed', text('seed'), 1, 0, 0xffff_ffff);
  const generator: Record<string, number> = {};
  for (const [flag, targets] of Object.entries(WORKLOAD_FLAGS)) {
    const value = text(flag);
    if (value === undefined) continue;
    const option = targets[workloadName];
    if (option === undefined) {
      throw new UsageError(`--${flag} does not apply to --workload ${workloadName}`);
    }
    generator[option] = integer(flag, value, 0, 1, 1e9);
  }
  let workload: WorkloadChoice;
  if (workloadName === 'mooncake') {
    workload = { kind: 'mooncake', path: trace!, limit: generator.limit };
  } else {
    workload = {
      kind: workloadName as Exclude<WorkloadChoice['kind'], 'mooncake'>,
      options: { ...generator, seed },
    };
  }

  const fleet: { workers?: number; cacheTokens?: number } = {};
  if (text('workers') !== undefined)
    fleet.workers = integer('workers', text('workers'), 8, 1, 4096);
  const cache = text('cache-tokens');
  if (cache !== undefined) {
    fleet.cacheTokens = /^(inf|infinity|unbounded)$/i.test(cache)
      ? Number.POSITIVE_INFINITY
      : integer('cache-tokens', cache, 0, 1, 1e12);
  }

  let policies: PolicyName[] | undefined;
  const list = text('policies');
  if (list !== undefined) {
    policies = list
      .split(',')
      .map((p) => p.trim())
      .filter((p) => p !== '') as PolicyName[];
    if (policies.length === 0) throw new UsageError('--policies is empty');
    for (const p of policies) {
      if (!(POLICY_NAMES as readonly string[]).includes(p)) {
        throw new UsageError(
          `--policies: unknown policy '${p}' (known: ${POLICY_NAMES.join(', ')})`,
        );
      }
    }
  }

  const arrival = text('arrival');
  if (arrival !== undefined && !(ARRIVALS as readonly string[]).includes(arrival)) {
    throw new UsageError(`--arrival must be one of ${ARRIVALS.join(', ')}, got '${arrival}'`);
  }
  const kind = arrival ?? (workloadName === 'mooncake' ? 'trace' : 'poisson');
  const only = (flag: string, allowed: string): void => {
    if (text(flag) !== undefined && kind !== allowed) {
      throw new UsageError(`--${flag} applies to --arrival ${allowed}, not ${kind}`);
    }
  };
  only('load', 'poisson');
  only('rate', 'poisson');
  only('concurrency', 'closed');
  only('speedup', 'trace');
  if (text('load') !== undefined && text('rate') !== undefined) {
    throw new UsageError('give --load or --rate, not both');
  }
  if (kind === 'trace' && workloadName !== 'mooncake') {
    throw new UsageError('--arrival trace needs a trace (--trace <file>)');
  }
  const load = number('load', text('load'), 0.8, 1e-6, 100);
  let arrivals: ArrivalProcess | undefined;
  if (kind === 'all') arrivals = { kind: 'all_at_once' };
  else if (kind === 'closed') {
    arrivals = {
      kind: 'closed_loop',
      concurrency: integer('concurrency', text('concurrency'), 64, 1, 1e9),
    };
  } else if (kind === 'trace') {
    arrivals = { kind: 'trace', speedup: number('speedup', text('speedup'), 1, 1e-6, 1e9) };
  } else if (text('rate') !== undefined) {
    arrivals = { kind: 'poisson', ratePerSecond: number('rate', text('rate'), 1, 1e-6, 1e9) };
  }

  const pollMs = text('poll-ms');
  const noReport = values['no-report'] === true;
  if (noReport && text('out') !== undefined)
    throw new UsageError('give --out or --no-report, not both');
  return {
    help,
    workload,
    fleet,
    policies,
    arrivals,
    load,
    routers: integer('routers', text('routers'), 1, 1, 1024),
    seed,
    loadPollIntervalMs: pollMs === undefined ? undefined : number('poll-ms', pollMs, 0, 0, 1e9),
    out: noReport ? undefined : (text('out') ?? 'fleetroute-report.html'),
    json: text('json'),
    quiet: values.quiet === true,
  };
}

function integer(
  flag: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const n = /^\d+$/.test(value.trim()) ? Number(value) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new UsageError(
      `--${flag} must be an integer from ${min} to ${max}, got '${clip(value)}'`,
    );
  }
  return n;
}

function number(
  flag: string,
  value: string | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (value === undefined) return fallback;
  const n = value.trim() === '' ? Number.NaN : Number(value);
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new UsageError(`--${flag} must be a number from ${min} to ${max}, got '${clip(value)}'`);
  }
  return n;
}

function clip(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}…` : value;
}

function firstLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0]!;
}
