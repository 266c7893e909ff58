/**
 * What the workload generators share: their bounds, an options reader that rejects unknown
 * fields, distinct first tokens, and frozen request and workload builders.
 *
 * @module
 * @internal
 */
import { invalidArgument } from '../../core/errors.js';
import { fail, readInteger, readObject } from '../../core/options.js';
import type { SeededRandom } from '../random.js';
import type { SimRequest, Workload } from '../workload.js';

/** @internal Token ids are drawn below this (a Llama-3-sized vocabulary). */
export const VOCABULARY = 128_000;

/** @internal Most requests in one workload. */
export const MAX_REQUESTS = 1_000_000;

/** @internal Most tokens in one prompt. */
export const MAX_PROMPT_TOKENS = 1_000_000;

/** @internal Most prompt tokens a generated workload stores in all (1 GiB of `Uint32Array`). */
export const MAX_STORED_TOKENS = 268_435_456;

/**
 * @internal Reads `input` as an options object of `where` and rejects fields outside `allowed`.
 * @throws FleetRouteError `INVALID_ARGUMENT` when `input` is not an object or has an unknown field.
 */
export function readOptions(
  where: string,
  input: unknown,
  allowed: readonly string[],
): Record<string, unknown> {
  const o = readObject(where, input);
  for (const key of Object.keys(o)) {
    if (!allowed.includes(key)) {
      throw invalidArgument(
        `${where}.${key} is not an option of ${where} (options: ${allowed.join(', ')})`,
      );
    }
  }
  return o;
}

/** @internal A positive integer of at most `max`, or the fallback when undefined. */
export function readCount(
  where: string,
  o: Record<string, unknown>,
  key: string,
  fallback: number,
  max: number,
): number {
  return readInteger(`${where}.${key}`, o[key], fallback, 1, max);
}

/** @internal The `seed` option: an integer in [0, 2³² − 1], 1 when undefined. */
export function readSeed(where: string, o: Record<string, unknown>): number {
  return readInteger(`${where}.seed`, o.seed, 1, 0, 0xffff_ffff);
}

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
type RequestExtras = Pick<SimRequest, 'routingKey' | 'outputTokens' | 'after' | 'timestamp'>;

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

/** @internal A frozen workload; freezes `requests` in place and copies `parameters`. */
export function frozenWorkload(
  name: string,
  description: string,
  requests: readonly SimRequest[],
  parameters: Readonly<Record<string, number | string>>,
): Workload {
  return Object.freeze({
    name,
    description,
    requests: Object.freeze(requests),
    parameters: Object.freeze({ ...parameters }),
  });
}

/** @internal `n` and `noun`, plural unless `n` is 1: `1,024 requests`, `1 group`. */
export function countOf(n: number, noun: string): string {
  return `${formatCount(n)} ${noun}${n === 1 ? '' : 's'}`;
}

/** @internal `n` with thousands separators (`2,048`), the same on every host. */
export function formatCount(n: number): string {
  return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}
