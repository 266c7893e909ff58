/**
 * `generatedSharedPrefix`: groups of prompts that share a long system prompt, the "generated
 * shared prefix" benchmark of prefix-aware routers.
 *
 * @module
 */
import { boolean, integer, OptionTable } from '../../core/option-table.js';
import { SeededRandom } from '../random.js';
import type { SimRequest, Workload } from '../workload.js';
import {
  countOf,
  distinctTokens,
  ensureAtMost,
  ensurePromptFits,
  ensureStoredFits,
  formatCount,
  frozenWorkload,
  MAX_PROMPT_TOKENS,
  MAX_REQUESTS,
  MAX_STORED_TOKENS,
  storedRequest,
  tokensStartingWith,
  VOCABULARY,
} from './support.js';

/**
 * Options of {@link generatedSharedPrefix}. Lengths are in tokens.
 *
 * @public
 */
export interface SharedPrefixOptions {
  /** Groups, each with its own system prompt; at most 128,000. @defaultValue 64 */
  readonly groups?: number;
  /** Prompts per group. @defaultValue 16 */
  readonly promptsPerGroup?: number;
  /** Length of each group's system prompt. @defaultValue 2048 */
  readonly systemPromptLength?: number;
  /** Length of each prompt's own question, after the system prompt. @defaultValue 128 */
  readonly questionLength?: number;
  /** Tokens each request generates. @defaultValue 256 */
  readonly outputLength?: number;
  /** Seed of every random draw; an integer in [0, 2³² − 1]. @defaultValue 1 */
  readonly seed?: number;
  /** Send the requests in a seeded random order rather than group by group. @defaultValue true */
  readonly shuffle?: boolean;
}

const WHERE = 'sharedPrefix';
/** @internal The generator's options, in the order errors list them. */
export const SHARED_PREFIX_OPTIONS = new OptionTable(WHERE, 'SharedPrefixOptions', {
  groups: integer(64, 1, VOCABULARY),
  promptsPerGroup: integer(16, 1, MAX_REQUESTS),
  systemPromptLength: integer(2048, 1, MAX_PROMPT_TOKENS),
  questionLength: integer(128, 1, MAX_PROMPT_TOKENS),
  outputLength: integer(256, 1, MAX_PROMPT_TOKENS),
  seed: integer(1, 0, 0xffff_ffff),
  shuffle: boolean(true),
});

/** A prompt before it gets its place in the order. */
interface Draft {
  readonly group: number;
  readonly prompt: Uint32Array;
}

/**
 * Builds the "generated shared prefix" workload: `groups × promptsPerGroup` requests whose
 * prompt is their group's system prompt followed by a question of their own, with routing key
 * `group-<g>` and no known output tokens.
 *
 * The system prompts of two groups differ from their first token on, and the questions are
 * random, so with the defaults one unbounded cache of 16-token blocks serves at most
 * 64·15·2048 / (1024·2176) ≈ 88.235 % of the prompt tokens: everything but the first prompt of
 * each group and the questions.
 *
 * Requests are numbered in sending order (`requests[i].id === i`). Equal options give an
 * identical workload, token for token. The workload's `parameters` are the resolved options,
 * with `shuffle` as `'true'` or `'false'`.
 *
 * Cost: O(requests × prompt length) time and memory; each prompt is stored once and `tokens()`
 * returns that array (callers must not modify it).
 *
 * @param options - see {@link SharedPrefixOptions}; omitted fields take their defaults.
 * @returns a frozen workload named `shared-prefix`.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option, or the
 *   option that takes the workload past 1,000,000 requests, 1,000,000 tokens per prompt or
 *   268,435,456 stored tokens.
 * @example
 * ```ts
 * const workload = generatedSharedPrefix({ groups: 8, shuffle: false });
 * workload.requests[0].routingKey; // 'group-0'
 * ```
 * @public
 */
export function generatedSharedPrefix(options: SharedPrefixOptions = {}): Workload {
  const o = SHARED_PREFIX_OPTIONS.read(options);
  const systemPromptLength = o.systemPromptLength;
  const questionLength = o.questionLength;
  const promptLength = systemPromptLength + questionLength;
  ensurePromptFits(WHERE, 'questionLength', questionLength, systemPromptLength);
  const groups = o.groups;
  ensureStoredFits(WHERE, 'groups', groups, promptLength);
  const promptsPerGroup = o.promptsPerGroup;
  ensureAtMost(
    WHERE,
    'promptsPerGroup',
    promptsPerGroup,
    Math.min(
      Math.floor(MAX_REQUESTS / groups),
      Math.floor(MAX_STORED_TOKENS / (groups * promptLength)),
    ),
    `${countOf(groups, 'group')} of ${formatCount(promptLength)}-token prompts; at most ` +
      `${formatCount(MAX_REQUESTS)} requests and ${formatCount(MAX_STORED_TOKENS)} tokens in all`,
  );
  const outputLength = o.outputLength;
  const seed = o.seed;
  const shuffle = o.shuffle;

  const root = new SeededRandom(seed);
  const firstRandom = root.fork();
  const systemRandom = root.fork();
  const questionRandom = root.fork();
  const orderRandom = root.fork();
  const firsts = distinctTokens(firstRandom, groups);

  const drafts: Draft[] = [];
  for (let group = 0; group < groups; group++) {
    const system = tokensStartingWith(systemRandom, firsts[group]!, systemPromptLength);
    for (let p = 0; p < promptsPerGroup; p++) {
      const prompt = new Uint32Array(promptLength);
      prompt.set(system);
      prompt.set(questionRandom.tokens(questionLength, VOCABULARY), systemPromptLength);
      drafts.push({ group, prompt });
    }
  }
  if (shuffle) orderRandom.shuffle(drafts);

  const requests: SimRequest[] = drafts.map((draft, id) =>
    storedRequest(id, draft.prompt, outputLength, { routingKey: `group-${draft.group}` }),
  );
  return frozenWorkload(
    'shared-prefix',
    `${countOf(groups, 'group')} × ${countOf(promptsPerGroup, 'prompt')}, ` +
      `${formatCount(systemPromptLength)}-token system prompt + ` +
      `${formatCount(questionLength)}-token question, ${countOf(outputLength, 'output token')}` +
      (shuffle ? '' : ', in group order'),
    requests,
    {
      groups,
      promptsPerGroup,
      systemPromptLength,
      questionLength,
      outputLength,
      seed,
      shuffle: String(shuffle),
    },
    { generator: 'shared-prefix', options: o },
  );
}
