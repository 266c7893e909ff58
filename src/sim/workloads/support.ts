/**
 * What the workload generators share: their bounds, an options reader that rejects unknown
 * fields, distinct first tokens, and frozen request and workload builders.
 *
 * @module
 * @internal
 */
import { fail } from '../../core/options.js';
import type { SeededRandom } from '../random.js';
import {
  type SimRequest,
  WORKLOAD_RECIPE,
  type Workload,
  type WorkloadRecipe,
} from '../workload.js';

/** @internal Token ids are drawn below this (a Llama-3-sized vocabulary). */
export const VOCABULARY = 128_000;

/** @internal Most requests in one workload. */
export const MAX_REQUESTS = 1_000_000;

/** @internal Most tokens in one prompt. */
export const MAX_PROMPT_TOKENS = 1_000_000;

/** @internal Most prompt tokens a generated workload stores in all (1 GiB of `Uint32Array`). */
export const MAX_STORED_TOKENS = 268_435_456;

/**
 * @internal Throws `INVALID_ARGUMENT` naming `where.key` when `value` exceeds `max`, which a
 * combination of options imposes (`why` says which).
 */
export function ensureAtMost(
  where: string,
  key: string,
  value: number,
  max: number,
  why: string,
): void {
  if (value > max) fail(`${where}.${key}`, `at most ${max} (${why})`, value);
}

/** @internal Fails unless a prompt of `before` tokens plus `value` more stays within the prompt limit. */
export function ensurePromptFits(where: string, key: string, value: number, before: number): void {
  ensureAtMost(
    where,
    key,
    value,
    MAX_PROMPT_TOKENS - before,
    `prompts are at most ${formatCount(MAX_PROMPT_TOKENS)} tokens`,
  );
}

/** @internal Fails unless `count` prompts of `promptLength` tokens stay within the stored total. */
export function ensureStoredFits(
  where: string,
  key: string,
  count: number,
  promptLength: number,
): void {
  ensureAtMost(
    where,
    key,
    count,
    Math.floor(MAX_STORED_TOKENS / promptLength),
    `${formatCount(promptLength)}-token prompts; at most ${formatCount(MAX_STORED_TOKENS)} tokens in all`,
  );
}

/**
 * @internal `count` distinct token ids below {@link VOCABULARY}, uniformly drawn without
 * replacement (a sparse Fisher–Yates). The first `k` values do not depend on `count`.
 * Cost: O(count) time and memory.
 */
export function distinctTokens(random: SeededRandom, count: number): Uint32Array {
  const moved = new Map<number, number>();
  const out = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    const j = i + random.int(VOCABULARY - i);
    out[i] = moved.get(j) ?? j;
    moved.set(j, moved.get(i) ?? i);
  }
  return out;
}

/** @internal `length` random tokens whose first one is `first`. O(length). */
export function tokensStartingWith(
  random: SeededRandom,
  first: number,
  length: number,
): Uint32Array {
  const out = random.tokens(length, VOCABULARY);
  out[0] = first;
  return out;
}

/** The optional fields a generator may set on a request. */
type RequestExtras = Pick<
  SimRequest,
  'routingKey' | 'outputTokens' | 'after' | 'delayMs' | 'timestamp'
>;

/**
 * @internal A frozen request whose `tokens()` returns `prompt` itself (never a copy). Only the
 * extras given become properties.
 */
export function storedRequest(
  id: number,
  prompt: Uint32Array,
  outputLength: number,
  extras: RequestExtras = {},
): SimRequest {
  return Object.freeze({
    id,
    promptLength: prompt.length,
    outputLength,
    tokens: () => prompt,
    ...extras,
  });
}

/**
 * @internal A frozen workload; freezes `requests` in place and copies `parameters`. A `recipe`
 * becomes its non-enumerable {@link WORKLOAD_RECIPE} property.
 */
export function frozenWorkload(
  name: string,
  description: string,
  requests: readonly SimRequest[],
  parameters: Readonly<Record<string, number | string>>,
  recipe?: WorkloadRecipe,
): Workload {
  const workload = {
    name,
    description,
    requests: Object.freeze(requests),
    parameters: Object.freeze({ ...parameters }),
  };
  if (recipe !== undefined) Object.defineProperty(workload, WORKLOAD_RECIPE, { value: recipe });
  return Object.freeze(workload);
}

/** @internal `workload` again, frozen, with `recipe` (the requests are shared, not copied). */
export function withRecipe(workload: Workload, recipe: WorkloadRecipe): Workload {
  const w = workload;
  return frozenWorkload(w.name, w.description, w.requests, w.parameters, recipe);
}

/** @internal `n` and `noun`, plural unless `n` is 1: `1,024 requests`, `1 group`. */
export function countOf(n: number, noun: string): string {
  return `${formatCount(n)} ${noun}${n === 1 ? '' : 's'}`;
}

/** @internal `n` with thousands separators (`2,048`), the same on every host. */
export function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
