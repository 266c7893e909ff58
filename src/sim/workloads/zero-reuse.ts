/**
 * `zeroReuse`: prompts that share nothing, the floor of every cache-aware policy.
 *
 * @module
 */
import { integer, OptionTable } from '../../core/option-table.js';
import { SeededRandom } from '../random.js';
import type { SimRequest, Workload } from '../workload.js';
import {
  countOf,
  distinctTokens,
  ensureStoredFits,
  frozenWorkload,
  MAX_PROMPT_TOKENS,
  storedRequest,
  tokensStartingWith,
  VOCABULARY,
} from './support.js';

/**
 * Options of {@link zeroReuse}. Lengths are in tokens.
 *
 * @public
 */
export interface ZeroReuseOptions {
  /** Requests; at most 128,000 (one distinct first token each). @defaultValue 512 */
  readonly requests?: number;
  /** Length of each prompt. @defaultValue 1024 */
  readonly promptLength?: number;
  /** Tokens each request generates. @defaultValue 128 */
  readonly outputLength?: number;
  /** Seed of every random draw; an integer in [0, 2³² − 1]. @defaultValue 1 */
  readonly seed?: number;
}

const WHERE = 'zeroReuse';
/** @internal The generator's options, in the order errors list them. */
export const ZERO_REUSE_OPTIONS = new OptionTable(WHERE, 'ZeroReuseOptions', {
  requests: integer(512, 1, VOCABULARY),
  promptLength: integer(1024, 1, MAX_PROMPT_TOKENS),
  outputLength: integer(128, 1, MAX_PROMPT_TOKENS),
  seed: integer(1, 0, 0xffff_ffff),
});

/**
 * Builds a zero-reuse workload: fully random prompts with no routing key. No two prompts have
 * the same first token, so no two share even their first cache block and no cache ever hits.
 *
 * Requests are numbered in sending order (`requests[i].id === i`). Equal options give an
 * identical workload, token for token.
 *
 * Cost: O(requests × promptLength) time and memory; each prompt is stored once and `tokens()`
 * returns that array (callers must not modify it).
 *
 * @param options - see {@link ZeroReuseOptions}; omitted fields take their defaults.
 * @returns a frozen workload named `zero-reuse`.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option, or
 *   `requests` when the prompts would exceed 268,435,456 stored tokens.
 * @public
 */
export function zeroReuse(options: ZeroReuseOptions = {}): Workload {
  const o = ZERO_REUSE_OPTIONS.read(options);
  const promptLength = o.promptLength;
  const count = o.requests;
  ensureStoredFits(WHERE, 'requests', count, promptLength);
  const outputLength = o.outputLength;
  const seed = o.seed;

  const root = new SeededRandom(seed);
  const firsts = distinctTokens(root.fork(), count);
  const promptRandom = root.fork();

  const requests: SimRequest[] = [];
  for (let id = 0; id < count; id++) {
    const prompt = tokensStartingWith(promptRandom, firsts[id]!, promptLength);
    requests.push(storedRequest(id, prompt, outputLength));
  }
  return frozenWorkload(
    'zero-reuse',
    `${countOf(count, 'request')}, ${countOf(promptLength, 'random token')} each ` +
      `(no shared prefix), ${countOf(outputLength, 'output token')}`,
    requests,
    { requests: count, promptLength, outputLength, seed },
    { generator: 'zero-reuse', options: o },
  );
}
