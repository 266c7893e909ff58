/**
 * `multiTurnChat`: conversations whose history grows by one question and one answer per round.
 *
 * @module
 */
import { integer, OptionTable } from '../../core/option-table.js';
import { SeededRandom } from '../random.js';
import type { SimRequest, Workload } from '../workload.js';
import {
  countOf,
  distinctTokens,
  ensureAtMost,
  ensurePromptFits,
  formatCount,
  frozenWorkload,
  MAX_PROMPT_TOKENS,
  MAX_REQUESTS,
  MAX_STORED_TOKENS,
  storedRequest,
  VOCABULARY,
} from './support.js';

/**
 * Options of {@link multiTurnChat}. Lengths are in tokens.
 *
 * @public
 */
export interface MultiTurnChatOptions {
  /** Conversations, one per user; at most 128,000. @defaultValue 32 */
  readonly users?: number;
  /** Requests per user; each one repeats the whole conversation so far. @defaultValue 8 */
  readonly rounds?: number;
  /** Length of the one system prompt every conversation starts with. @defaultValue 1024 */
  readonly systemPromptLength?: number;
  /** Length of each question. @defaultValue 96 */
  readonly questionLength?: number;
  /** Length of each answer: the output of a request, repeated by the next round. @defaultValue 192 */
  readonly answerLength?: number;
  /** Seed of every random draw; an integer in [0, 2³² − 1]. @defaultValue 1 */
  readonly seed?: number;
}

const WHERE = 'chat';
/** @internal The generator's options, in the order errors list them. */
export const MULTI_TURN_CHAT_OPTIONS = new OptionTable(WHERE, 'MultiTurnChatOptions', {
  users: integer(32, 1, VOCABULARY),
  rounds: integer(8, 1, MAX_REQUESTS),
  systemPromptLength: integer(1024, 1, MAX_PROMPT_TOKENS),
  questionLength: integer(96, 1, MAX_PROMPT_TOKENS),
  answerLength: integer(192, 1, MAX_PROMPT_TOKENS),
  seed: integer(1, 0, 0xffff_ffff),
});

/**
 * Builds a multi-turn chat workload: `users × rounds` requests. The prompt of user `u` at
 * round `r` is the shared system prompt, then `q[u,0] a[u,0] … q[u,r−1] a[u,r−1]`, then the new
 * question `q[u,r]`. The request generates `a[u,r]` (its `outputTokens`, `outputLength` =
 * `answerLength`), so prompt `r + 1` starts with prompt `r` followed by its answer.
 *
 * Each request has routing key `user-<u>` and, from round 1 on, `after` = the id of the same
 * user's previous request. Requests are sent round by round, the users of each round in a
 * seeded random order, and numbered in that order (`requests[i].id === i`). The first questions
 * of two users differ from their first token on. Equal options give an identical workload.
 *
 * Cost: O(users × (systemPromptLength + rounds × (questionLength + answerLength))) time and
 * memory: each user's conversation is one array, and the prompts and answers are views into it
 * (callers must not modify them).
 *
 * @param options - see {@link MultiTurnChatOptions}; omitted fields take their defaults.
 * @returns a frozen workload named `chat`.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option, or the
 *   option that takes the workload past 1,000,000 requests, 1,000,000 tokens per prompt or
 *   268,435,456 stored tokens.
 * @public
 */
export function multiTurnChat(options: MultiTurnChatOptions = {}): Workload {
  const o = MULTI_TURN_CHAT_OPTIONS.read(options);
  const systemPromptLength = o.systemPromptLength;
  const questionLength = o.questionLength;
  ensurePromptFits(WHERE, 'questionLength', questionLength, systemPromptLength);
  const answerLength = o.answerLength;
  const turn = questionLength + answerLength;
  const users = o.users;
  ensureAtMost(
    WHERE,
    'users',
    users,
    Math.floor(MAX_STORED_TOKENS / (systemPromptLength + turn)),
    `at most ${formatCount(MAX_STORED_TOKENS)} tokens stored in all`,
  );
  const rounds = o.rounds;
  ensureAtMost(
    WHERE,
    'rounds',
    rounds,
    Math.min(
      Math.floor(MAX_REQUESTS / users),
      Math.floor((MAX_PROMPT_TOKENS - systemPromptLength - questionLength) / turn) + 1,
      Math.floor((Math.floor(MAX_STORED_TOKENS / users) - systemPromptLength) / turn),
    ),
    `${countOf(users, 'user')}; at most ${formatCount(MAX_REQUESTS)} requests, ` +
      `${formatCount(MAX_PROMPT_TOKENS)} tokens per prompt and ` +
      `${formatCount(MAX_STORED_TOKENS)} tokens stored in all`,
  );
  const seed = o.seed;

  const root = new SeededRandom(seed);
  const system = root.fork().tokens(systemPromptLength, VOCABULARY);
  const firsts = distinctTokens(root.fork(), users);
  const orderRandom = root.fork();
  const userRandom = root.fork();

  const length = systemPromptLength + rounds * turn;
  const conversations: Uint32Array[] = [];
  for (let u = 0; u < users; u++) {
    const conversation = new Uint32Array(length);
    conversation.set(system);
    conversation.set(userRandom.fork().tokens(rounds * turn, VOCABULARY), systemPromptLength);
    conversation[systemPromptLength] = firsts[u]!;
    conversations.push(conversation);
  }

  const requests: SimRequest[] = [];
  const previous = new Array<number>(users);
  for (let round = 0; round < rounds; round++) {
    const order = orderRandom.shuffle(Array.from({ length: users }, (_, u) => u));
    const promptEnd = systemPromptLength + round * turn + questionLength;
    for (const u of order) {
      const conversation = conversations[u]!;
      const id = requests.length;
      const outputTokens = conversation.subarray(promptEnd, promptEnd + answerLength);
      const routingKey = `user-${u}`;
      const prompt = conversation.subarray(0, promptEnd);
      requests.push(
        round === 0
          ? storedRequest(id, prompt, answerLength, { routingKey, outputTokens })
          : storedRequest(id, prompt, answerLength, {
              routingKey,
              outputTokens,
              after: previous[u]!,
            }),
      );
      previous[u] = id;
    }
  }
  return frozenWorkload(
    'chat',
    `${countOf(users, 'user')} × ${countOf(rounds, 'round')}, ` +
      `${formatCount(systemPromptLength)}-token shared system prompt, ` +
      `${formatCount(questionLength)}-token questions, ${formatCount(answerLength)}-token answers`,
    requests,
    { users, rounds, systemPromptLength, questionLength, answerLength, seed },
    { generator: 'chat', options: o },
  );
}
