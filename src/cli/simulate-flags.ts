/**
 * The flags of `fleetroute simulate`, one entry each: how its value is read, its default and its
 * line in the help. Rules between flags (which workload a flag applies to, `--load` or `--rate`)
 * live in `simulate-options.ts`, which reads these entries.
 *
 * @module
 * @internal
 */

import { type BoundedSpec, MAX_TIMER_MS } from '../core/option-table.js';
import { POLICY_NAMES } from '../policies/create-policy.js';
import type { PolicyName } from '../policies/policy.js';
import { COMPARE_OPTIONS, DEFAULT_POLICIES } from '../sim/compare.js';
import { DEFAULT_FLEET_MODEL, FLEET_OPTIONS } from '../sim/fleet-model.js';
import { SIMULATION_OPTIONS } from '../sim/simulation-options.js';
import { AGENT_CONVERSATIONS_OPTIONS } from '../sim/workloads/agent-conversations.js';
import { HOT_PREFIX_OPTIONS } from '../sim/workloads/hot-prefix.js';
import { LORA_ADAPTERS_OPTIONS } from '../sim/workloads/lora-adapters.js';
import { MOONCAKE_OPTIONS } from '../sim/workloads/mooncake-trace.js';
import { MULTI_TURN_CHAT_OPTIONS } from '../sim/workloads/multi-turn-chat.js';
import { SHARED_PREFIX_OPTIONS } from '../sim/workloads/shared-prefix.js';
import { ZERO_REUSE_OPTIONS } from '../sim/workloads/zero-reuse.js';
import { anyText, decimal, type Flag, flag, integer, oneOf, toggle, UsageError } from './flags.js';
import { PD_FLAGS } from './simulate-pd-flags.js';

/** @internal The workloads `--workload` names. */
export const WORKLOADS = [
  'shared-prefix',
  'chat',
  'agent',
  'hot-prefix',
  'zero-reuse',
  'lora',
  'mooncake',
] as const;
/** @internal One of {@link WORKLOADS}. */
export type WorkloadName = (typeof WORKLOADS)[number];

/** @internal The arrival processes `--arrival` names. */
export const ARRIVALS = ['poisson', 'all', 'closed', 'trace'] as const;
/** @internal One of {@link ARRIVALS}. */
export type ArrivalName = (typeof ARRIVALS)[number];

/**
 * @internal A flag that sets a workload generator's option. For each workload it applies to:
 * the option and its default (`undefined`: none, the whole trace; shown as `all`). Its own
 * `fallback` is `undefined`, since its default depends on the workload.
 */
export interface GeneratorFlag extends Flag<number | undefined> {
  readonly sets: Readonly<
    Partial<Record<WorkloadName, readonly [option: string, fallback: number | undefined]>>
  >;
}

/** Each workload's generator options, whose defaults the workload flags show and pass on. */
const WORKLOAD_DEFAULTS: Readonly<Record<WorkloadName, Readonly<Record<string, unknown>>>> = {
  'shared-prefix': SHARED_PREFIX_OPTIONS.read(undefined),
  chat: MULTI_TURN_CHAT_OPTIONS.read(undefined),
  agent: AGENT_CONVERSATIONS_OPTIONS.read(undefined),
  'hot-prefix': HOT_PREFIX_OPTIONS.read(undefined),
  'zero-reuse': ZERO_REUSE_OPTIONS.read(undefined),
  lora: LORA_ADAPTERS_OPTIONS.read(undefined),
  mooncake: MOONCAKE_OPTIONS.read(undefined),
};

/** @internal Where `--routing-key` takes a trace's routing keys from. */
export const ROUTING_KEY_SOURCES = ['none', 'session'] as const;
/** @internal One of {@link ROUTING_KEY_SOURCES}. */
export type RoutingKeySource = (typeof ROUTING_KEY_SOURCES)[number];
const MOONCAKE_DEFAULTS = MOONCAKE_OPTIONS.read(undefined);

/** The defaults of `comparePolicies` and `simulate`, which the flags show and pass on. */
const COMPARE_DEFAULTS = COMPARE_OPTIONS.read(undefined);
const SIMULATION_DEFAULTS = SIMULATION_OPTIONS.read(undefined);

/** Reads an integer within the bounds of the library option `spec`. */
function integerOf(spec: BoundedSpec): (text: string, flag: string) => number {
  return integer(spec.min, spec.max);
}

/** Reads a number within the bounds of the library option `spec`. */
function decimalOf(spec: BoundedSpec): (text: string, flag: string) => number {
  return decimal(spec.min, spec.max);
}

/**
 * A workload flag: for each workload it applies to, the generator option it sets. Its value is
 * an integer unless `read` says otherwise.
 */
function generatorFlag(
  help: string,
  options: Readonly<Partial<Record<WorkloadName, string>>>,
  read: (text: string, flag: string) => number = integer(1, 1e9),
  value = '<n>',
): GeneratorFlag {
  const sets: Partial<Record<WorkloadName, readonly [string, number | undefined]>> = {};
  for (const [workload, option] of Object.entries(options) as [WorkloadName, string][]) {
    sets[workload] = [option, WORKLOAD_DEFAULTS[workload][option] as number | undefined];
  }
  return workloadFlag(help, sets, read, value);
}

function workloadFlag(
  help: string,
  sets: GeneratorFlag['sets'],
  read: (text: string, flag: string) => number,
  value: string,
): GeneratorFlag {
  const shown = Object.entries(sets)
    .map(([workload, [, fallback]]) => `${workload}: ${fallback ?? 'all'}`)
    .join(', ');
  return {
    section: 'Workload',
    value,
    help,
    fallback: undefined,
    shown,
    read,
    sets,
  };
}

/** @internal A flag that applies to one arrival process only; the help says which. */
export interface ArrivalFlag<T> extends Flag<T> {
  readonly arrival: ArrivalName;
}

function arrivalFlag<T>(arrival: ArrivalName, spec: Omit<Flag<T>, 'section'>): ArrivalFlag<T> {
  return { ...spec, section: 'Arrivals', help: `${arrival}: ${spec.help}`, arrival };
}

/** @internal The flags that set a workload generator's options. */
export const GENERATOR_FLAGS = {
  groups: generatorFlag('groups', { 'shared-prefix': 'groups' }),
  'prompts-per-group': generatorFlag('prompts per group', { 'shared-prefix': 'promptsPerGroup' }),
  'system-tokens': generatorFlag('system prompt tokens', {
    'shared-prefix': 'systemPromptLength',
    chat: 'systemPromptLength',
  }),
  'question-tokens': generatorFlag('question tokens (agent: median user message)', {
    'shared-prefix': 'questionLength',
    chat: 'questionLength',
    agent: 'medianUserMessageLength',
  }),
  'output-tokens': generatorFlag('output tokens (agent: median answer)', {
    'shared-prefix': 'outputLength',
    agent: 'medianOutputLength',
    'hot-prefix': 'outputLength',
    'zero-reuse': 'outputLength',
    lora: 'outputLength',
  }),
  users: generatorFlag('users (agent: conversations)', { chat: 'users', agent: 'conversations' }),
  rounds: generatorFlag('rounds per user (agent: median turns per conversation)', {
    chat: 'rounds',
    agent: 'medianTurns',
  }),
  'max-turns': generatorFlag('most turns per conversation', { agent: 'maxTurns' }),
  'system-prompts': generatorFlag('fleet-wide system prompts', { agent: 'systemPrompts' }),
  'conversation-rate': generatorFlag(
    'conversations started per second (Poisson)',
    { agent: 'conversationsPerSecond' },
    decimalOf(AGENT_CONVERSATIONS_OPTIONS.specs.conversationsPerSecond),
    '<per-s>',
  ),
  'think-ms': generatorFlag(
    'mean think time between turns, ms',
    { agent: 'meanThinkTimeMs' },
    decimalOf(AGENT_CONVERSATIONS_OPTIONS.specs.meanThinkTimeMs),
    '<ms>',
  ),
  'answer-tokens': generatorFlag('answer tokens', { chat: 'answerLength' }),
  requests: generatorFlag('requests; of a mooncake trace, the first n records', {
    'hot-prefix': 'requests',
    'zero-reuse': 'requests',
    lora: 'requests',
    mooncake: 'limit',
  }),
  'prefix-tokens': generatorFlag('shared prefix tokens (lora: per adapter)', {
    'hot-prefix': 'prefixLength',
    lora: 'prefixLength',
  }),
  'suffix-tokens': generatorFlag('per-request suffix tokens', {
    'hot-prefix': 'suffixLength',
    lora: 'suffixLength',
  }),
  adapters: generatorFlag('LoRA adapters of the base model', { lora: 'adapters' }),
  zipf: generatorFlag(
    "Zipf exponent of the adapters' popularity",
    { lora: 'zipf' },
    decimalOf(LORA_ADAPTERS_OPTIONS.specs.zipf),
    '<s>',
  ),
  'prompt-tokens': generatorFlag('prompt tokens', { 'zero-reuse': 'promptLength' }),
} as const;

/** @internal The flags that apply to one arrival process. */
export const ARRIVAL_FLAGS = {
  load: arrivalFlag('poisson', {
    value: '<f>',
    help: 'offered load as a share of capacity',
    fallback: COMPARE_DEFAULTS.load,
    read: decimalOf(COMPARE_OPTIONS.specs.load),
  }),
  rate: arrivalFlag<number | undefined>('poisson', {
    value: '<req/s>',
    help: 'explicit rate (instead of --load)',
    fallback: undefined,
    read: decimal(1e-6, 1e9),
  }),
  concurrency: arrivalFlag('closed', {
    value: '<n>',
    help: 'requests in flight',
    fallback: 64,
    read: integer(1, 1e9),
  }),
  speedup: arrivalFlag('trace', {
    value: '<x>',
    help: 'replay x times faster',
    fallback: 1,
    note: '; timestamps are rebased so the first arrival is at 0 (the table says by how much)',
    read: decimal(1e-6, 1e9),
  }),
} as const;

/** @internal Every flag of `fleetroute simulate`, in help order. */
export const SIMULATE_FLAGS = {
  workload: flag<WorkloadName>({
    section: 'Workload',
    value: '<name>',
    help: `one of ${WORKLOADS.join(', ')}`,
    fallback: 'shared-prefix',
    read: oneOf(WORKLOADS),
  }),
  trace: flag<string | undefined>({
    section: 'Workload',
    value: '<file>',
    help: 'a Mooncake JSONL trace; implies --workload mooncake, --arrival trace',
    fallback: undefined,
    read: anyText,
  }),
  'routing-key': flag<RoutingKeySource>({
    section: 'Workload',
    value: '<src>',
    help: `of a trace's requests: ${ROUTING_KEY_SOURCES.join(' or ')} (its session_id)`,
    fallback: MOONCAKE_DEFAULTS.routingKey,
    read: oneOf(ROUTING_KEY_SOURCES),
  }),
  ...GENERATOR_FLAGS,
  workers: flag({
    section: 'Fleet',
    value: '<n>',
    help: 'workers',
    fallback: DEFAULT_FLEET_MODEL.workers,
    read: integerOf(FLEET_OPTIONS.specs.workers),
  }),
  'cache-tokens': flag({
    section: 'Fleet',
    value: '<n|inf>',
    help: 'prefix cache per worker, tokens',
    fallback: DEFAULT_FLEET_MODEL.cacheTokens,
    read: (text, name) =>
      /^(inf|infinity|unbounded)$/i.test(text)
        ? Number.POSITIVE_INFINITY
        : integerOf(FLEET_OPTIONS.specs.cacheTokens)(text, name),
  }),
  'block-size': flag({
    section: 'Fleet',
    value: '<n>',
    help: 'tokens per cache block; only full blocks are reused',
    fallback: DEFAULT_FLEET_MODEL.blockSize,
    read: integerOf(FLEET_OPTIONS.specs.blockSize),
  }),
  'batch-tokens': flag({
    section: 'Fleet',
    value: '<n>',
    help: 'most prompt tokens prefilled per engine step (chunked prefill)',
    fallback: DEFAULT_FLEET_MODEL.maxBatchTokens,
    read: integerOf(FLEET_OPTIONS.specs.maxBatchTokens),
  }),
  'max-running': flag({
    section: 'Fleet',
    value: '<n>',
    help: 'most requests running on one worker at once',
    fallback: DEFAULT_FLEET_MODEL.maxRunning,
    read: integerOf(FLEET_OPTIONS.specs.maxRunning),
  }),
  'prefill-tokens-per-s': flag({
    section: 'Fleet',
    value: '<n>',
    help: 'prefill speed of tokens not found in the cache',
    fallback: DEFAULT_FLEET_MODEL.prefillTokensPerSecond,
    read: decimalOf(FLEET_OPTIONS.specs.prefillTokensPerSecond),
  }),
  'decode-step-ms': flag({
    section: 'Fleet',
    value: '<ms>',
    help: 'fixed cost of one decode step',
    fallback: DEFAULT_FLEET_MODEL.decodeStepMs,
    read: decimalOf(FLEET_OPTIONS.specs.decodeStepMs),
  }),
  'decode-step-per-request-ms': flag({
    section: 'Fleet',
    value: '<ms>',
    help: 'added cost of one decode step per running request',
    fallback: DEFAULT_FLEET_MODEL.decodeStepPerRequestMs,
    read: decimalOf(FLEET_OPTIONS.specs.decodeStepPerRequestMs),
  }),
  'max-loras': flag({
    section: 'Fleet',
    value: '<n>',
    help: 'LoRA adapter slots per worker (idle adapters evicted least recently used first)',
    fallback: DEFAULT_FLEET_MODEL.maxLoras,
    read: integerOf(FLEET_OPTIONS.specs.maxLoras),
  }),
  'adapter-load-ms': flag({
    section: 'Fleet',
    value: '<ms>',
    help: 'time to load a LoRA adapter into a slot (blocks the engine step)',
    fallback: DEFAULT_FLEET_MODEL.adapterLoadMs,
    read: decimalOf(FLEET_OPTIONS.specs.adapterLoadMs),
  }),
  'no-adapter-residency': toggle(
    'Fleet',
    "the engines' load reports list only adapters with requests in flight (vllm:lora_requests_info alone), not the resident ones",
  ),
  ...PD_FLAGS,
  policies: flag<readonly PolicyName[]>({
    section: 'Routing',
    value: '<a,b,...>',
    help: 'policies to compare',
    fallback: DEFAULT_POLICIES,
    shown: 'all but passthrough, which always picks the first available worker in list order',
    read: readPolicies,
  }),
  routers: flag({
    section: 'Routing',
    value: '<n>',
    help: 'independent routers sharing the fleet, round-robin',
    fallback: SIMULATION_DEFAULTS.routers,
    read: integerOf(SIMULATION_OPTIONS.specs.routers),
  }),
  threads: flag({
    section: 'Routing',
    value: '<n>',
    help: 'worker threads running the policies',
    fallback: COMPARE_DEFAULTS.threads,
    note: ': the available parallelism; 1 = one after another, in this thread',
    read: integerOf(COMPARE_OPTIONS.specs.threads),
  }),
  'poll-ms': flag({
    section: 'Routing',
    value: '<ms>',
    help: 'simulated ms between load reports to the policies',
    fallback: SIMULATION_DEFAULTS.loadPollIntervalMs,
    note: '; 0 = none',
    read: decimalOf(SIMULATION_OPTIONS.specs.loadPollIntervalMs),
  }),
  'no-first-tokens': toggle(
    'Routing',
    'leases never mark first tokens (a caller that does not stream): policies see every request in flight as prefilling',
  ),
  'kv-events': toggle(
    'Routing',
    "also run cache_aware fed by the engines' KV events (cache_aware+events), and with --routers > 1 both at 1 router too",
  ),
  'adapter-aware': toggle(
    'Routing',
    'also run each policy wrapped in adapterAware (rows adapterAware(<policy>)): LoRA requests go where their adapter is loaded',
  ),
  'kv-event-delay-ms': flag({
    section: 'Routing',
    value: '<ms>',
    help: 'with --kv-events: delay from an engine step to its events reaching every router',
    fallback: SIMULATION_DEFAULTS.kvEventDelayMs,
    read: decimalOf(SIMULATION_OPTIONS.specs.kvEventDelayMs),
  }),
  'kv-event-loss': flag({
    section: 'Routing',
    value: '<p>',
    help: "with --kv-events: share of event batches lost (the router then forgets that worker's blocks)",
    fallback: SIMULATION_DEFAULTS.kvEventLoss,
    read: decimalOf(SIMULATION_OPTIONS.specs.kvEventLoss),
  }),
  'engine-restarts': flag({
    section: 'Routing',
    value: '<n>',
    help: 'engine restarts spread over each run, worker by worker, each emptying its cache',
    fallback: SIMULATION_DEFAULTS.engineRestarts,
    read: integerOf(SIMULATION_OPTIONS.specs.engineRestarts),
  }),
  'shared-state': flag<string | undefined>({
    section: 'Routing',
    value: '<memory|redis://host:port>',
    help: 'also run each policy with its routers sharing state (rows +shared): in memory, or on that Redis; with --routers > 1, at 1 router too',
    fallback: undefined,
    read: (text, name) => {
      try {
        return SIMULATION_OPTIONS.specs.sharedState.read(name, text, undefined, {});
      } catch {
        throw new UsageError(
          `--${name} must be memory or a redis:// URL, got ${JSON.stringify(text)}`,
        );
      }
    },
  }),
  'shared-refresh-ms': flag({
    section: 'Routing',
    value: '<ms>',
    help: 'with --shared-state: simulated ms between two load syncs of each router',
    fallback: SIMULATION_DEFAULTS.sharedRefreshMs,
    read: decimalOf(SIMULATION_OPTIONS.specs.sharedRefreshMs),
  }),
  admission: toggle(
    'Routing',
    'run every router with admission control on simulated time: requests wait while every worker is full, low priorities are shed, the rest turned away after --admission-max-wait-ms (served / rejected columns)',
  ),
  'admission-max-prefilling': flag<number | undefined>({
    section: 'Routing',
    value: '<n>',
    help: "with --admission: a worker with this many requests awaiting their first token is full (the router's default: 16)",
    fallback: undefined,
    read: integer(1, 1_000_000),
  }),
  'admission-max-wait-ms': flag<number | undefined>({
    section: 'Routing',
    value: '<ms>',
    help: "with --admission: longest simulated wait in a router's queue before a request is turned away, whole ms (the router's default: 30000)",
    fallback: undefined,
    read: integer(1, MAX_TIMER_MS),
  }),
  'low-priority-share': flag({
    section: 'Routing',
    value: '<p>',
    help: 'share of requests sent at priority -1 (shed first under --admission), drawn per request from the seed',
    fallback: SIMULATION_DEFAULTS.lowPriorityShare,
    read: decimalOf(SIMULATION_OPTIONS.specs.lowPriorityShare),
  }),
  'skip-low-priority': toggle(
    'Routing',
    'with --low-priority-share: draw the low-priority requests, then never send them (the others alone, at their own arrival times)',
  ),
  tenants: flag({
    section: 'Routing',
    value: '<n>',
    help: 'tenants the requests are spread over (tenant-0 … tenant-<n-1>), drawn per request from the seed',
    fallback: SIMULATION_DEFAULTS.tenants,
    read: integerOf(SIMULATION_OPTIONS.specs.tenants),
  }),
  'heavy-tenant-factor': flag({
    section: 'Routing',
    value: '<x>',
    help: 'with --tenants: tenant-0 sends this many times as many requests as each other tenant',
    fallback: SIMULATION_DEFAULTS.heavyTenantFactor,
    read: decimalOf(SIMULATION_OPTIONS.specs.heavyTenantFactor),
  }),
  arrival: flag<ArrivalName>({
    section: 'Arrivals',
    value: '<kind>',
    help: `one of ${ARRIVALS.join(', ')}`,
    fallback: 'poisson',
    note: '; trace for --trace and --workload agent',
    read: oneOf(ARRIVALS),
  }),
  ...ARRIVAL_FLAGS,
  seed: flag({
    section: 'Output',
    value: '<n>',
    help: 'seed of the workload, arrivals and policies',
    fallback: SIMULATION_DEFAULTS.seed,
    read: integerOf(SIMULATION_OPTIONS.specs.seed),
  }),
  out: flag({
    section: 'Output',
    value: '<file>',
    help: 'HTML report path',
    fallback: 'fleetroute-report.html',
    read: anyText,
  }),
  'no-report': toggle('Output', 'no HTML report'),
  json: flag<string | undefined>({
    section: 'Output',
    value: '<file>',
    help: 'also write the results as JSON',
    fallback: undefined,
    read: anyText,
  }),
  quiet: toggle('Output', 'no progress output'),
  help: toggle('Output', 'this help', 'h'),
} as const;

/** A comma-separated list of known policies, at least one. */
function readPolicies(text: string, name: string): readonly PolicyName[] {
  const policies = text
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '');
  if (policies.length === 0) throw new UsageError(`--${name} is empty`);
  for (const p of policies) {
    if (!(POLICY_NAMES as readonly string[]).includes(p)) {
      throw new UsageError(`--${name}: unknown policy '${p}' (known: ${POLICY_NAMES.join(', ')})`);
    }
  }
  return policies as PolicyName[];
}
