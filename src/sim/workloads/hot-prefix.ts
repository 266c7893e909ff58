/**
 * `singleHotPrefix`: every prompt starts with the same long prefix.
 *
 * @module
 */
import { integer, OptionTable } from '../../core/option-table.js';
import { SeededRandom } from '../random.js';
import type { SimRequest, Workload } from '../workload.js';
import {
  countOf,
  distinctTokens,
  ensurePromptFits,
  ensureStoredFits,
  formatCount,
  frozenWorkload,
  MAX_PROMPT_TOKENS,
  storedRequest,
  tokensStartingWith,
  VOCABULARY,
} from './support.js';

/**
 * Options of {@link singleHotPrefix}. Lengths are in tokens.
 *
 * @public
 */
export interface HotPrefixOptions {
  /** Requests; at most 128,000. @defaultValue 512 */
  readonly requests?: number;
  /** Length of the prefix every prompt shares. @defaultValue 2048 */
  readonly prefixLength?: number;
  /** Length of each prompt's own suffix, after the prefix. @defaultValue 64 */
  readonly suffixLength?: number;
  /** Tokens each request generates. @defaultValue 128 */
  readonly outputLength?: number;
  /** Seed of every random draw; an integer in [0, 2³² − 1]. @defaultValue 1 */
  readonly seed?: number;
}

const WHERE = 'hotPrefix';
/** @internal The generator's options, in the order errors list them. */
export const HOT_PREFIX_OPTIONS = new OptionTable(WHERE, 'HotPrefixOptions', {
  requests: integer(512, 1, VOCABULARY),
  prefixLength: integer(2048, 1, MAX_PROMPT_TOKENS),
  suffixLength: integer(64, 1, MAX_PROMPT_TOKENS),
  outputLength: integer(128, 1, MAX_PROMPT_TOKENS),
  seed: integer(1, 0, 0xffff_ffff),
});

/**
 * Builds a single-hot-prefix workload: every prompt is one shared prefix followed by a random
 * suffix of its own, with no routing key. It shows whether a policy piles a hot prefix onto one
 * worker or spreads it. The suffixes of two prompts differ from their first token on.
 *
 * Requests are numbered in sending order (`requests[i].id === i`). Equal options give an
 * identical workload, token for token.
 *
 * Cost: O(requests × (prefixLength + suffixLength)) time and memory; each prompt is stored once
 * and `tokens()` returns that array (callers must not modify it).
 *
 * @param options - see {@link HotPrefixOptions}; omitted fields take their defaults.
 * @returns a frozen workload named `hot-prefix`.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option, or the
 *   option that takes the workload past 1,000,000 tokens per prompt or 268,435,456 stored tokens.
 * @public
 */
export function singleHotPrefix(options: HotPrefixOptions = {}): Workload {
  const o = HOT_PREFIX_OPTIONS.read(options);
  const prefixLength = o.prefixLength;
  const suffixLength = o.suffixLength;
  ensurePromptFits(WHERE, 'suffixLength', suffixLength, prefixLength);
  const promptLength = prefixLength + suffixLength;
  const count = o.requests;
  ensureStoredFits(WHERE, 'requests', count, promptLength);
  const outputLength = o.outputLength;
  const seed = o.seed;

  const root = new SeededRandom(seed);
  const prefix = root.fork().tokens(prefixLength, VOCABULARY);
  const firsts = distinctTokens(root.fork(), count);
  const suffixRandom = root.fork();

  const requests: SimRequest[] = [];
  for (let id = 0; id < count; id++) {
    const prompt = new Uint32Array(promptLength);
    prompt.set(prefix);
    prompt.set(tokensStartingWith(suffixRandom, firsts[id]!, suffixLength), prefixLength);
    requests.push(storedRequest(id, prompt, outputLength));
  }
  return frozenWorkload(
    'hot-prefix',
    `${countOf(count, 'request')}, one ${formatCount(prefixLength)}-token shared prefix + ` +
      `${formatCount(suffixLength)}-token suffix, ${countOf(outputLength, 'output token')}`,
    requests,
    { requests: count, prefixLength, suffixLength, outputLength, seed },
    { generator: 'hot-prefix', options: o },
  );
}
