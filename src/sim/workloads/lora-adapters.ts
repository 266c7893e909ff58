/**
 * `loraAdapters`: requests for many LoRA adapters of one base model, their popularity Zipf-like.
 *
 * @module
 */
import { integer, number, OptionTable } from '../../core/option-table.js';
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
  MAX_REQUESTS,
  VOCABULARY,
} from './support.js';

/**
 * Options of {@link loraAdapters}. Lengths are in tokens.
 *
 * @public
 */
export interface LoraAdaptersOptions {
  /** Requests; at most 1,000,000. @defaultValue 4096 */
  readonly requests?: number;
  /** Adapters of the base model, named `lora-0` (the most asked for) … `lora-{n−1}`. @defaultValue 64 */
  readonly adapters?: number;
  /**
   * Zipf exponent of the adapters' popularity: adapter `k` (from 0) is asked for in proportion
   * to 1 / (k + 1)^zipf; 0 asks for every adapter alike. @defaultValue 1
   */
  readonly zipf?: number;
  /** Length of the prefix every prompt of one adapter shares (its task's instructions). @defaultValue 512 */
  readonly prefixLength?: number;
  /** Length of each prompt's own part, after the prefix. @defaultValue 256 */
  readonly suffixLength?: number;
  /** Tokens each request generates. @defaultValue 128 */
  readonly outputLength?: number;
  /** Seed of every random draw; an integer in [0, 2³² − 1]. @defaultValue 1 */
  readonly seed?: number;
}

const WHERE = 'lora';
/** @internal The generator's options, in the order errors list them. */
export const LORA_ADAPTERS_OPTIONS = new OptionTable(WHERE, 'LoraAdaptersOptions', {
  requests: integer(4096, 1, MAX_REQUESTS),
  adapters: integer(64, 1, 100_000),
  zipf: number(1, 0, 10),
  prefixLength: integer(512, 1, MAX_PROMPT_TOKENS),
  suffixLength: integer(256, 1, MAX_PROMPT_TOKENS),
  outputLength: integer(128, 1, MAX_PROMPT_TOKENS),
  seed: integer(1, 0, 0xffff_ffff),
});

/** Cumulative popularity of adapters `0 … n−1`, normalised to end at 1. O(n). */
function zipfTable(n: number, exponent: number): Float64Array {
  const cumulative = new Float64Array(n);
  let sum = 0;
  for (let k = 0; k < n; k++) {
    sum += 1 / (k + 1) ** exponent;
    cumulative[k] = sum;
  }
  for (let k = 0; k < n; k++) cumulative[k]! /= sum;
  return cumulative;
}

/** The adapter a uniform draw `u` in [0, 1) falls on. O(log n). */
function adapterAt(cumulative: Float64Array, u: number): number {
  let lo = 0;
  let hi = cumulative.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (cumulative[mid]! > u) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/**
 * Builds a LoRA workload: one base model served with `adapters` LoRA adapters, each request for
 * one of them (its `adapter` names it, and a router sees it as the request's `model`), drawn by
 * Zipf popularity. A prompt is its adapter's shared prefix followed by a random part of its own,
 * so prompts of one adapter share a cacheable prefix, and prompts of two adapters share nothing
 * (an engine's prefix cache never matches across adapters anyway). Engines give a request whose
 * adapter is not loaded the fleet's `adapterLoadMs` (see `FleetModel.maxLoras`).
 *
 * Requests are numbered in sending order (`requests[i].id === i`). Equal options give an
 * identical workload, token for token.
 *
 * Cost: O(requests × (prefixLength + suffixLength)) time and memory.
 *
 * @param options - see {@link LoraAdaptersOptions}; omitted fields take their defaults.
 * @returns a frozen workload named `lora`.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option, or the
 *   option that takes the workload past 1,000,000 tokens per prompt or 268,435,456 stored tokens.
 * @public
 */
export function loraAdapters(options: LoraAdaptersOptions = {}): Workload {
  const o = LORA_ADAPTERS_OPTIONS.read(options);
  const { prefixLength, suffixLength, outputLength, seed, adapters, zipf } = o;
  ensurePromptFits(WHERE, 'suffixLength', suffixLength, prefixLength);
  const promptLength = prefixLength + suffixLength;
  const count = o.requests;
  ensureStoredFits(WHERE, 'requests', count, promptLength);

  const root = new SeededRandom(seed);
  const prefixRandom = root.fork();
  const firsts = distinctTokens(root.fork(), adapters);
  const prefixes: Uint32Array[] = [];
  for (let a = 0; a < adapters; a++) {
    const prefix = prefixRandom.tokens(prefixLength, VOCABULARY);
    prefix[0] = firsts[a]!;
    prefixes.push(prefix);
  }
  const names = Array.from({ length: adapters }, (_, a) => `lora-${a}`);
  const cumulative = zipfTable(adapters, zipf);
  const pick = root.fork();
  const suffixRandom = root.fork();

  const requests: SimRequest[] = [];
  for (let id = 0; id < count; id++) {
    const a = adapterAt(cumulative, pick.next());
    const prompt = new Uint32Array(promptLength);
    prompt.set(prefixes[a]!);
    prompt.set(suffixRandom.tokens(suffixLength, VOCABULARY), prefixLength);
    requests.push(
      Object.freeze({
        id,
        promptLength,
        outputLength,
        adapter: names[a]!,
        tokens: () => prompt,
      }),
    );
  }
  return frozenWorkload(
    'lora',
    `${countOf(count, 'request')} over ${countOf(adapters, 'LoRA adapter')} (Zipf ${zipf}), ` +
      `${formatCount(prefixLength)}-token prefix per adapter + ${formatCount(suffixLength)}-token ` +
      `suffix, ${countOf(outputLength, 'output token')}`,
    requests,
    { requests: count, adapters, zipf, prefixLength, suffixLength, outputLength, seed },
    { generator: 'lora', options: o },
  );
}
