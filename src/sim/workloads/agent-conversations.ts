/**
 * `agentConversations`: production-shaped agent and chat traffic — a few fleet-wide system
 * prompts, sessions that start over time and grow turn by turn, heavy-tailed lengths.
 *
 * @module
 */
import { integer, number, OptionTable, type Resolved } from '../../core/option-table.js';
import { fail } from '../../core/options.js';
import { SeededRandom } from '../random.js';
import type { SimRequest, Workload } from '../workload.js';
import {
  countOf,
  distinctTokens,
  ensureAtMost,
  formatCount,
  frozenWorkload,
  MAX_PROMPT_TOKENS,
  MAX_REQUESTS,
  MAX_STORED_TOKENS,
  storedRequest,
  VOCABULARY,
} from './support.js';

/**
 * Options of {@link agentConversations}. Lengths are in tokens, times in ms.
 *
 * @public
 */
export interface AgentConversationsOptions {
  /** Conversations (sessions); at most 128,000. @defaultValue 600 */
  readonly conversations?: number;
  /**
   * Mean rate at which conversations start (a Poisson process), per second of simulated time.
   * With the other defaults, 1.5 sends about 6 requests per second.
   * @defaultValue 1.5
   */
  readonly conversationsPerSecond?: number;
  /** Fleet-wide system prompts; each conversation starts with one of them. @defaultValue 4 */
  readonly systemPrompts?: number;
  /** Shortest system prompt; their lengths are spread log-uniformly over [min, max]. @defaultValue 1024 */
  readonly systemPromptMinLength?: number;
  /** Longest system prompt. @defaultValue 8192 */
  readonly systemPromptMaxLength?: number;
  /**
   * Zipf exponent of the system prompts' popularity: prompt `k` (from 0) is picked with weight
   * `1 / (k + 1)^skew`; 0 picks them uniformly.
   * @defaultValue 1
   */
  readonly systemPromptSkew?: number;
  /** Median turns per conversation (lognormal, rounded, at least 1). @defaultValue 4 */
  readonly medianTurns?: number;
  /** Lognormal σ of the turns per conversation; 0 gives every conversation `medianTurns`. @defaultValue 1 */
  readonly turnsSigma?: number;
  /** Most turns in one conversation. @defaultValue 48 */
  readonly maxTurns?: number;
  /** Median length of a user message (lognormal). @defaultValue 128 */
  readonly medianUserMessageLength?: number;
  /** Longest user message (longer draws are cut). @defaultValue 4096 */
  readonly maxUserMessageLength?: number;
  /** Median length of an answer, the output of a turn (lognormal). @defaultValue 256 */
  readonly medianOutputLength?: number;
  /** Longest answer (longer draws are cut). @defaultValue 2048 */
  readonly maxOutputLength?: number;
  /** Lognormal σ of user message and answer lengths (about 1 in production chat logs). @defaultValue 1 */
  readonly lengthSigma?: number;
  /**
   * Context window: a conversation ends before a turn whose prompt plus answer would exceed it.
   * At least `systemPromptMaxLength + maxUserMessageLength + maxOutputLength`.
   * @defaultValue 131,072
   */
  readonly contextWindow?: number;
  /**
   * Mean think time between a turn's completion and the next turn (exponential); 0 sends the
   * next turn as soon as the previous one completes.
   * @defaultValue 5000
   */
  readonly meanThinkTimeMs?: number;
  /** Seed of every random draw; an integer in [0, 2³² − 1]. @defaultValue 1 */
  readonly seed?: number;
}

const WHERE = 'agent';
/** @internal The generator's options, in the order errors list them. */
export const AGENT_CONVERSATIONS_OPTIONS = new OptionTable(WHERE, 'AgentConversationsOptions', {
  conversations: integer(600, 1, VOCABULARY),
  conversationsPerSecond: number(1.5, 1e-6, 1e6),
  systemPrompts: integer(4, 1, 1_024),
  systemPromptMinLength: integer(1024, 1, MAX_PROMPT_TOKENS),
  systemPromptMaxLength: integer(8192, 1, MAX_PROMPT_TOKENS),
  systemPromptSkew: number(1, 0, 10),
  medianTurns: number(4, 1, MAX_REQUESTS),
  turnsSigma: number(1, 0, 4),
  maxTurns: integer(48, 1, MAX_REQUESTS),
  medianUserMessageLength: number(128, 1, MAX_PROMPT_TOKENS),
  maxUserMessageLength: integer(4096, 1, MAX_PROMPT_TOKENS),
  medianOutputLength: number(256, 1, MAX_PROMPT_TOKENS),
  maxOutputLength: integer(2048, 1, MAX_PROMPT_TOKENS),
  lengthSigma: number(1, 0, 4),
  contextWindow: integer(131_072, 2, MAX_PROMPT_TOKENS),
  meanThinkTimeMs: number(5000, 0, 1e9),
  seed: integer(1, 0, 0xffff_ffff),
});

/** One conversation as drawn: its system prompt, its turns' lengths, start and think times. */
interface Conversation {
  readonly systemPrompt: number;
  readonly userLengths: number[];
  readonly outputLengths: number[];
  /** When each turn is nominally sent: the start plus the think times before it. */
  readonly times: number[];
  /** Think time before each turn (0 for the first). */
  readonly thinks: number[];
  readonly tokens: Uint32Array;
}

/**
 * Builds a workload shaped like production agent and chat traffic. `systemPrompts` fleet-wide
 * system prompts, of lengths spread log-uniformly over `[systemPromptMinLength,
 * systemPromptMaxLength]` (in a seeded order, so the most popular is not always the shortest),
 * are shared by `conversations` sessions; each session picks one with
 * Zipf popularity (`systemPromptSkew`). A session has a lognormal number of turns (median
 * `medianTurns`, σ `turnsSigma`, at most `maxTurns`), and turn `n`'s prompt is turn `n − 1`'s
 * prompt, then its answer (the request's `outputTokens`), then a new user message — so every
 * prompt extends the previous one of its session. User message and answer lengths are lognormal
 * (medians `medianUserMessageLength` and `medianOutputLength`, σ `lengthSigma`), cut at their
 * maxima; a session ends early rather than let a prompt plus its answer exceed `contextWindow`.
 *
 * Sessions start as a Poisson process (`conversationsPerSecond`): the first turn of each carries
 * that start as its `timestamp`. Every later turn has `after` = the previous turn of its session
 * and `delayMs` = an exponential think time (mean `meanThinkTimeMs`), so with the `trace`
 * arrival process a turn is sent that long after the previous turn completes, and many sessions
 * interleave. Requests are numbered by their nominal send time (start plus think times, service
 * ignored); ties keep session then turn order. Every request's routing key is `session-<c>`,
 * so `consistent_hashing` and `manual` route by session. Two sessions differ from their first
 * user-message token on. Equal options give an identical workload.
 *
 * With the defaults: 3,808 requests; the median prompt is about 5,000 tokens on first turns
 * and 8,000 and more on later ones (mean 9,900).
 *
 * Cost: O(conversations × their final length) time and memory: each session's conversation is
 * one array, and prompts and answers are views into it (callers must not modify them).
 *
 * @param options - see {@link AgentConversationsOptions}; omitted fields take their defaults.
 * @returns a frozen workload named `agent`; replay it with `arrivals: { kind: 'trace' }`.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option,
 *   `systemPromptMaxLength` below `systemPromptMinLength`, a `contextWindow` that cannot hold
 *   the longest first turn, or `conversations` when the workload would pass 1,000,000 requests
 *   or 268,435,456 stored tokens.
 * @public
 */
export function agentConversations(options: AgentConversationsOptions = {}): Workload {
  const o = AGENT_CONVERSATIONS_OPTIONS.read(options);
  checkLengths(o);
  const root = new SeededRandom(o.seed);
  const systemRandom = root.fork();
  const systemFirsts = distinctTokens(root.fork(), o.systemPrompts);
  const firsts = distinctTokens(root.fork(), o.conversations);
  const startRandom = root.fork();
  const sessionRandom = root.fork();
  const systems = systemPromptsOf(o, systemRandom, systemFirsts);
  const popularity = cumulativeZipf(o.systemPrompts, o.systemPromptSkew);

  const conversations: Conversation[] = [];
  let requestCount = 0;
  let stored = 0;
  let start = 0;
  const meanGap = 1000 / o.conversationsPerSecond;
  for (let c = 0; c < o.conversations; c++) {
    if (c > 0) start += startRandom.exponential(meanGap);
    const random = sessionRandom.fork();
    const systemPrompt = pick(popularity, random.next());
    const system = systems[systemPrompt]!;
    const { length, ...turns } = drawTurns(o, random, system.length, start);
    requestCount += turns.userLengths.length;
    stored += length;
    // Checked before the session's tokens exist: no allocation past the bounds.
    if (requestCount > MAX_REQUESTS || stored > MAX_STORED_TOKENS) {
      ensureAtMost(
        WHERE,
        'conversations',
        o.conversations,
        c,
        `at most ${formatCount(MAX_REQUESTS)} requests and ` +
          `${formatCount(MAX_STORED_TOKENS)} tokens stored in all`,
      );
    }
    const tokens = new Uint32Array(length);
    tokens.set(system);
    tokens.set(random.fork().tokens(length - system.length, VOCABULARY), system.length);
    tokens[system.length] = firsts[c]!;
    conversations.push({ systemPrompt, ...turns, tokens });
  }

  const { requests, promptTokens } = requestsOf(conversations, systems, requestCount);
  return frozenWorkload(
    WHERE,
    `${countOf(o.conversations, 'conversation')} (${countOf(requestCount, 'turn')}) starting at ` +
      `${o.conversationsPerSecond}/s, ${countOf(o.systemPrompts, 'system prompt')} of ` +
      `${formatCount(o.systemPromptMinLength)}–${formatCount(o.systemPromptMaxLength)} tokens, ` +
      `mean prompt ${formatCount(Math.round(promptTokens / Math.max(1, requestCount)))} tokens, ` +
      `${formatCount(Math.round(o.meanThinkTimeMs))} ms mean think time`,
    requests,
    { ...o, requests: requestCount },
    { generator: 'agent', options: o },
  );
}

/** The generator's options, resolved. */
type Options = Resolved<typeof AGENT_CONVERSATIONS_OPTIONS.specs>;

/** The rules between options: system prompt lengths in order, a context window that fits. */
function checkLengths(o: Options): void {
  if (o.systemPromptMaxLength < o.systemPromptMinLength) {
    fail(
      `${WHERE}.systemPromptMaxLength`,
      `at least systemPromptMinLength (${o.systemPromptMinLength})`,
      o.systemPromptMaxLength,
    );
  }
  const longestFirst = o.systemPromptMaxLength + o.maxUserMessageLength + o.maxOutputLength;
  if (o.contextWindow < longestFirst) {
    fail(
      `${WHERE}.contextWindow`,
      `at least systemPromptMaxLength + maxUserMessageLength + maxOutputLength (${longestFirst})`,
      o.contextWindow,
    );
  }
}

/**
 * The fleet-wide system prompts: lengths log-uniform over [min, max] in a seeded order, each
 * starting with its own token of `firsts`. O(their total length).
 */
function systemPromptsOf(
  o: Options,
  random: SeededRandom,
  firsts: ArrayLike<number>,
): Uint32Array[] {
  const lengths = random.shuffle(
    Array.from({ length: o.systemPrompts }, (_, k) => {
      const share = o.systemPrompts === 1 ? 0 : k / (o.systemPrompts - 1);
      return Math.round(
        o.systemPromptMinLength * (o.systemPromptMaxLength / o.systemPromptMinLength) ** share,
      );
    }),
  );
  const systems: Uint32Array[] = [];
  for (let k = 0; k < o.systemPrompts; k++) {
    const prompt = random.fork().tokens(lengths[k]!, VOCABULARY);
    prompt[0] = firsts[k]!;
    systems.push(prompt);
  }
  return systems;
}

/** One session's turns as drawn, and the length of its whole conversation. */
type Turns = Omit<Conversation, 'systemPrompt' | 'tokens'> & { readonly length: number };

/**
 * Draws a session's turns from `random`, after a system prompt of `systemLength` tokens, the
 * first sent at `start`: each turn's lengths and think time, until the drawn count or until a
 * turn would not fit the context window. O(turns).
 */
function drawTurns(o: Options, random: SeededRandom, systemLength: number, start: number): Turns {
  const turns = clampRound(lognormal(random, o.medianTurns, o.turnsSigma), o.maxTurns);
  const userLengths: number[] = [];
  const outputLengths: number[] = [];
  const times: number[] = [];
  const thinks: number[] = [];
  let length = systemLength;
  let time = start;
  for (let t = 0; t < turns; t++) {
    const user = clampRound(
      lognormal(random, o.medianUserMessageLength, o.lengthSigma),
      o.maxUserMessageLength,
    );
    const output = clampRound(
      lognormal(random, o.medianOutputLength, o.lengthSigma),
      o.maxOutputLength,
    );
    const think = t === 0 ? 0 : random.exponential(o.meanThinkTimeMs);
    if (length + user + output > o.contextWindow) break;
    time += think;
    userLengths.push(user);
    outputLengths.push(output);
    times.push(time);
    thinks.push(think);
    length += user + output;
  }
  return { userLengths, outputLengths, times, thinks, length };
}

/**
 * The requests of `conversations` in send order: a first turn carries its session's start as
 * its timestamp, a later one follows the session's previous turn after its think time.
 * @returns the requests and their prompt tokens in all. O(requests).
 */
function requestsOf(
  conversations: readonly Conversation[],
  systems: readonly Uint32Array[],
  requestCount: number,
): { requests: SimRequest[]; promptTokens: number } {
  const order = sendOrder(conversations, requestCount);
  const requests: SimRequest[] = [];
  const previous = new Int32Array(conversations.length).fill(-1);
  const promptEnd = new Float64Array(conversations.length);
  let promptTokens = 0;
  for (let i = 0; i < requestCount; i++) {
    const c = order.sessions[i]!;
    const t = order.turns[i]!;
    const session = conversations[c]!;
    const end =
      t === 0
        ? systems[session.systemPrompt]!.length + session.userLengths[0]!
        : promptEnd[c]! + session.outputLengths[t - 1]! + session.userLengths[t]!;
    promptEnd[c] = end;
    const output = session.outputLengths[t]!;
    const prompt = session.tokens.subarray(0, end);
    const outputTokens = session.tokens.subarray(end, end + output);
    const routingKey = `session-${c}`;
    requests.push(
      t === 0
        ? storedRequest(i, prompt, output, {
            routingKey,
            outputTokens,
            timestamp: session.times[0]!,
          })
        : storedRequest(i, prompt, output, {
            routingKey,
            outputTokens,
            after: previous[c]!,
            delayMs: session.thinks[t]!,
          }),
    );
    previous[c] = i;
    promptTokens += end;
  }
  return { requests, promptTokens };
}

/** Turns by nominal send time (ties: session, then turn), as parallel arrays. O(n log n). */
function sendOrder(
  conversations: readonly Conversation[],
  count: number,
): { sessions: Int32Array; turns: Int32Array } {
  const sessions = new Int32Array(count);
  const turns = new Int32Array(count);
  const times = new Float64Array(count);
  let n = 0;
  for (let c = 0; c < conversations.length; c++) {
    const session = conversations[c]!;
    for (let t = 0; t < session.times.length; t++, n++) {
      sessions[n] = c;
      turns[n] = t;
      times[n] = session.times[t]!;
    }
  }
  const index = Array.from({ length: count }, (_, i) => i);
  index.sort(
    (a, b) => times[a]! - times[b]! || sessions[a]! - sessions[b]! || turns[a]! - turns[b]!,
  );
  return {
    sessions: Int32Array.from(index, (i) => sessions[i]!),
    turns: Int32Array.from(index, (i) => turns[i]!),
  };
}

/** A lognormal draw with the given median and σ (Box–Muller). O(1). */
function lognormal(random: SeededRandom, median: number, sigma: number): number {
  const u = 1 - random.next();
  const v = random.next();
  const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  return median * Math.exp(sigma * z);
}

/** `x` rounded into [1, max]. */
function clampRound(x: number, max: number): number {
  return Math.min(max, Math.max(1, Math.round(x)));
}

/** Cumulative Zipf weights of `n` items with exponent `skew`, normalised to end at 1. */
function cumulativeZipf(n: number, skew: number): Float64Array {
  const out = new Float64Array(n);
  let total = 0;
  for (let k = 0; k < n; k++) {
    total += 1 / (k + 1) ** skew;
    out[k] = total;
  }
  for (let k = 0; k < n; k++) out[k] = out[k]! / total;
  return out;
}

/** The first index whose cumulative weight exceeds `u` ∈ [0, 1). O(n). */
function pick(cumulative: Float64Array, u: number): number {
  for (let k = 0; k < cumulative.length - 1; k++) if (u < cumulative[k]!) return k;
  return cumulative.length - 1;
}
