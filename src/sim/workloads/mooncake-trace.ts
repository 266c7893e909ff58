/**
 * `parseMooncakeTrace` and `readMooncakeTrace`: replay a public Mooncake (FAST'25) trace, whose
 * prompts are given as chains of block ids rather than tokens.
 *
 * @module
 */

import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { FleetRouteError, invalidArgument } from '../../core/errors.js';
import { fmix32 } from '../../core/fmix32.js';
import { custom, integer, OptionTable, oneOf, type Resolved } from '../../core/option-table.js';
import { describe, fail, readInteger, readNumber, readString } from '../../core/options.js';
import type { SimRequest, Workload } from '../workload.js';
import {
  countOf,
  formatCount,
  frozenWorkload,
  MAX_PROMPT_TOKENS,
  MAX_REQUESTS,
  VOCABULARY,
  withRecipe,
} from './support.js';

/**
 * Options of {@link parseMooncakeTrace} and {@link readMooncakeTrace}.
 *
 * @public
 */
export interface MooncakeTraceOptions {
  /**
   * Tokens per `hash_ids` entry. It must match the trace: the public traces use 512.
   * @defaultValue 512
   */
  readonly blockTokens?: number;
  /** Most records to read, from the top of the file; the rest is not parsed. @defaultValue all */
  readonly limit?: number;
  /** The workload's name, for reports (at most 100 characters). @defaultValue `'mooncake'` */
  readonly name?: string;
  /**
   * Where each request's routing key comes from: `'none'` (no key, as a client that sends none)
   * or `'session'` (the record's `session_id`, as a string; records without one get none).
   * @defaultValue `'none'`
   */
  readonly routingKey?: 'none' | 'session';
}

const WHERE = 'mooncake';
/** @internal The trace reader's options. */
export const MOONCAKE_OPTIONS = new OptionTable(WHERE, 'MooncakeTraceOptions', {
  blockTokens: integer(512, 1, MAX_PROMPT_TOKENS),
  limit: custom<number | undefined>(
    undefined,
    (field, value) => readInteger(field, value, MAX_REQUESTS, 1, MAX_REQUESTS),
    'all',
  ),
  name: custom(WHERE, (field, value) => readString(field, value, 100), "`'mooncake'`"),
  routingKey: oneOf<'none' | 'session'>(['none', 'session'], 'none', "`'none'`"),
});

/** @internal The longest `session_id` a record may have, in characters. */
export const MAX_SESSION_ID_LENGTH = 256;

/**
 * Parses a Mooncake trace: JSON Lines, one record per line, such as
 * `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 2, …]}`.
 * `timestamp` is the arrival in ms from the start; `hash_ids` holds one id per block of
 * `blockTokens` prompt tokens (the last block may be partial), and equal ids mean equal blocks
 * after equal prefixes. Blank lines are skipped; other fields are ignored. `timestamp` may be
 * fractional; `input_tokens` and `output_tokens` are accepted for `input_length` and
 * `output_length` (giving both with different values is an error).
 *
 * Multi-turn records, as AIPerf's `mooncake_trace` reader and Dynamo's replay traces write
 * them: `session_id` (a string of at most 256 characters, or an integer) groups records into
 * one conversation, in file order, and `delay` is the think time in ms between the completion
 * of the previous record of the same session and this one being sent. Every record of a session
 * after its first becomes a request with `after` = the previous record of the session and
 * `delayMs = delay` (0 when absent), so a turn is never sent before the previous turn of its
 * conversation completed; such a record needs no `timestamp` (given, it is a lower bound on the
 * arrival). The first record of a session, and any record without `session_id`, needs a
 * `timestamp` and has no `delay`. Prompt reuse between turns still comes from `hash_ids` only.
 *
 * Each record becomes a request in file order (`requests[i].id === i`) with its `timestamp`,
 * `promptLength = input_length`, `outputLength = max(1, output_length)` and, with
 * `routingKey: 'session'`, its `session_id` as routing key (none otherwise).
 * Its `tokens()` builds the prompt on each call, so the trace never holds every prompt at once:
 * block `j` with id `h` contributes `blockTokens` tokens that depend only on `h` and their
 * position in the block, truncated to `input_length`. Two records whose `hash_ids` start alike
 * thus share that prefix of tokens, and two blocks with different ids differ in their first
 * four tokens (when `blockTokens ≥ 4`).
 *
 * Cost: O(text length) to parse and 8 bytes per block to keep; each `tokens()` call is
 * O(input_length) and allocates the prompt.
 *
 * @param text - the whole trace.
 * @param options - see {@link MooncakeTraceOptions}.
 * @returns a frozen workload named `mooncake` (or `options.name`).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad or unknown option; naming the
 *   line number and the field of a malformed record (not JSON, not an object, a field missing,
 *   negative or not an integer, `hash_ids` not an array of non-negative integers or shorter than
 *   `ceil(input_length / blockTokens)`, a length and its alias that disagree, a `session_id`
 *   that is empty, too long or neither a string nor an integer, a `delay` that is negative or
 *   not finite, or one on a record without an earlier record of its session); or when the trace
 *   has no record, or more than
 *   1,000,000 without a `limit`.
 * @public
 */
export function parseMooncakeTrace(text: string, options: MooncakeTraceOptions = {}): Workload {
  const resolved = MOONCAKE_OPTIONS.read(options);
  return withRecipe(parseResolved(text, resolved), {
    generator: 'mooncake',
    source: { text },
    options: resolved,
  });
}

/**
 * Reads the file at `path` (UTF-8) and parses it as {@link parseMooncakeTrace} does. The options
 * are checked before the file is read. The workload's parameters also hold the `path`.
 *
 * Cost: reads the whole file into memory, then as {@link parseMooncakeTrace}.
 *
 * @param path - the trace file.
 * @param options - see {@link MooncakeTraceOptions}.
 * @returns a promise of the workload.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` (as a rejection) for a bad option, a file
 *   that cannot be read (the error of `readFile` is its `cause`) or a malformed record.
 * @public
 */
export async function readMooncakeTrace(
  path: string | URL,
  options: MooncakeTraceOptions = {},
): Promise<Workload> {
  const resolved = MOONCAKE_OPTIONS.read(options);
  if (typeof path !== 'string' && !(path instanceof URL))
    fail(`${WHERE} path`, 'a string or URL', path);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      `${WHERE}: cannot read ${describe(String(path))}`,
      { cause: error },
    );
  }
  const workload = parseResolved(text, resolved);
  return frozenWorkload(
    workload.name,
    workload.description,
    workload.requests,
    { ...workload.parameters, path: String(path) },
    {
      generator: 'mooncake',
      source: { path: typeof path === 'string' ? path : fileURLToPath(path) },
      options: resolved,
    },
  );
}

/** {@link MooncakeTraceOptions} once validated. */
type ResolvedOptions = Resolved<typeof MOONCAKE_OPTIONS.specs>;

function parseResolved(text: unknown, options: ResolvedOptions): Workload {
  if (typeof text !== 'string') fail(`${WHERE} text`, 'a string', text);
  const limit = options.limit ?? MAX_REQUESTS;
  const requests: SimRequest[] = [];
  let start = text.charCodeAt(0) === 0xfeff ? 1 : 0;
  let lineNumber = 0;
  let promptTokens = 0;
  let outputTokens = 0;
  let first = Number.POSITIVE_INFINITY;
  let last = 0;
  /** The last request of each session so far. */
  const sessions = new Map<string, number>();
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end === -1) end = text.length;
    const line = text.slice(start, end);
    start = end + 1;
    lineNumber++;
    if (/^\s*$/.test(line)) continue;
    if (requests.length === limit) {
      if (options.limit !== undefined) break;
      throw invalidArgument(
        `${WHERE} trace must have at most ${formatCount(MAX_REQUESTS)} records without ` +
          `${WHERE}.limit, got more`,
      );
    }
    const request = parseRecord(line, lineNumber, requests.length, options, sessions);
    requests.push(request);
    promptTokens += request.promptLength;
    outputTokens += request.outputLength;
    if (request.timestamp !== undefined) {
      first = Math.min(first, request.timestamp);
      last = Math.max(last, request.timestamp);
    }
  }
  const count = requests.length;
  if (count === 0) throw invalidArgument(`${WHERE} trace must have at least one record, got none`);
  const parameters: Record<string, number | string> = {
    requests: count,
    blockTokens: options.blockTokens,
  };
  if (options.limit !== undefined) parameters.limit = options.limit;
  return frozenWorkload(
    options.name,
    `Mooncake trace: ${countOf(count, 'request')} over ${((last - first) / 1000).toFixed(1)} s, ` +
      `mean prompt ${formatCount(Math.round(promptTokens / count))} tokens ` +
      `(${formatCount(options.blockTokens)}-token blocks), ` +
      `mean output ${countOf(Math.round(outputTokens / count), 'token')}`,
    requests,
    parameters,
  );
}

/**
 * Parses one non-blank line into request `id`. `sessions` maps each session id seen so far to
 * its last request, and is updated.
 */
function parseRecord(
  line: string,
  lineNumber: number,
  id: number,
  options: ResolvedOptions,
  sessions: Map<string, number>,
): SimRequest {
  const where = `${WHERE} line ${lineNumber}`;
  let record: unknown;
  try {
    record = JSON.parse(line);
  } catch {
    fail(where, 'valid JSON', line);
  }
  if (typeof record !== 'object' || record === null || Array.isArray(record)) {
    fail(where, 'a JSON object', record);
  }
  const o = record as Record<string, unknown>;
  const session = readSessionId(o, where);
  const previous = session === undefined ? undefined : sessions.get(session);
  const delay = readDelay(o, where, session, previous);
  const timestamp =
    o.timestamp === undefined && previous !== undefined
      ? undefined
      : readNumber(
          `${where}: timestamp`,
          required(o, 'timestamp', where),
          0,
          0,
          Number.MAX_SAFE_INTEGER,
        );
  const promptLength = readAliased(o, 'input_length', 'input_tokens', where, 1);
  const outputLength = Math.max(1, readAliased(o, 'output_length', 'output_tokens', where, 0));
  const { blockTokens } = options;
  const seeds = readBlockSeeds(o, where, Math.ceil(promptLength / blockTokens));
  if (session !== undefined) sessions.set(session, id);
  return Object.freeze({
    id,
    promptLength,
    outputLength,
    ...(timestamp === undefined ? {} : { timestamp }),
    ...(options.routingKey === 'session' && session !== undefined ? { routingKey: session } : {}),
    ...(previous === undefined
      ? {}
      : delay === undefined
        ? { after: previous }
        : { after: previous, delayMs: delay }),
    tokens: () => traceTokens(seeds, promptLength, blockTokens),
  });
}

/** `o[key]`, which must be present. */
function required(o: Record<string, unknown>, key: string, where: string): unknown {
  if (o[key] === undefined) throw invalidArgument(`${where}: ${key} is missing`);
  return o[key];
}

/**
 * The length field `key` or its alias (`input_tokens` for `input_length`, `output_tokens` for
 * `output_length`): an integer in [min, 1,000,000]. Both may be given only with equal values.
 */
function readAliased(
  o: Record<string, unknown>,
  key: string,
  alias: string,
  where: string,
  min: number,
): number {
  if (o[key] === undefined && o[alias] !== undefined) {
    return readInteger(`${where}: ${alias}`, o[alias], 0, min, MAX_PROMPT_TOKENS);
  }
  const value = readField(o, key, where, min, MAX_PROMPT_TOKENS);
  if (o[alias] !== undefined && o[alias] !== value) {
    throw invalidArgument(
      `${where}: ${key} (${value}) and ${alias} (${describe(o[alias])}) disagree; give one`,
    );
  }
  return value;
}

/**
 * `session_id` as a string: a non-empty string of at most {@link MAX_SESSION_ID_LENGTH}
 * characters, or a safe integer (written in decimal); `undefined` when absent.
 */
function readSessionId(o: Record<string, unknown>, where: string): string | undefined {
  const value = o.session_id;
  if (value === undefined) return undefined;
  if (Number.isSafeInteger(value)) return String(value);
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_SESSION_ID_LENGTH) {
    fail(
      `${where}: session_id`,
      `a string of 1 to ${MAX_SESSION_ID_LENGTH} characters or an integer`,
      value,
    );
  }
  return value;
}

/**
 * `delay` (ms, finite, ≥ 0), which needs an earlier record of the same session: it is counted
 * from that record's completion. `undefined` when absent.
 */
function readDelay(
  o: Record<string, unknown>,
  where: string,
  session: string | undefined,
  previous: number | undefined,
): number | undefined {
  if (o.delay === undefined) return undefined;
  const delay = readNumber(`${where}: delay`, o.delay, 0, 0, Number.MAX_SAFE_INTEGER);
  if (previous === undefined) {
    throw invalidArgument(
      session === undefined
        ? `${where}: delay needs a session_id (it counts from the previous record of the session)`
        : `${where}: delay needs an earlier record of session ${describe(session)}; ` +
            'the first record of a session needs a timestamp instead',
    );
  }
  return delay;
}

/** The required integer field `key` of a record, within [min, max]. */
function readField(
  o: Record<string, unknown>,
  key: string,
  where: string,
  min: number,
  max: number,
): number {
  if (o[key] === undefined) throw invalidArgument(`${where}: ${key} is missing`);
  return readInteger(`${where}: ${key}`, o[key], 0, min, max);
}

/**
 * Validates `hash_ids` and returns the seeds of its first `blocks` ids: two words per block,
 * a bijection of the id, so different ids never get the same seeds.
 */
function readBlockSeeds(o: Record<string, unknown>, where: string, blocks: number): Uint32Array {
  const field = `${where}: hash_ids`;
  const ids = o.hash_ids;
  if (ids === undefined) throw invalidArgument(`${field} is missing`);
  if (!Array.isArray(ids)) fail(field, 'an array of non-negative integers', ids);
  for (let j = 0; j < ids.length; j++) {
    readInteger(`${field}[${j}]`, ids[j], 0, 0, Number.MAX_SAFE_INTEGER);
  }
  if (ids.length < blocks) {
    throw invalidArgument(
      `${field} must have at least ${blocks} ids (one per block of the prompt), got ${ids.length}`,
    );
  }
  const seeds = new Uint32Array(2 * blocks);
  for (let j = 0; j < blocks; j++) {
    const id = ids[j] as number;
    const low = fmix32(id >>> 0);
    seeds[2 * j] = low;
    seeds[2 * j + 1] = fmix32((Math.floor(id / 4_294_967_296) + fmix32(low ^ 0x9e3779b9)) >>> 0);
  }
  return seeds;
}

/** Maps a 32-bit word onto [0, VOCABULARY) by its high bits (the largest word maps below it). */
const TOKEN_SCALE = VOCABULARY / 4_294_967_296;

/**
 * The prompt of a record, cut at `length`. The first four tokens of block `j` are the four
 * 16-bit halves of its seeds (a bijection of its id, so blocks with different ids differ there);
 * token `k ≥ 4` is the high bits of one multiply of the block's key (mixed once from its seeds)
 * with `k`, so tokens depend only on the block's id and their position, all below
 * {@link VOCABULARY}. O(length), one xor and one multiply per token.
 */
function traceTokens(seeds: Uint32Array, length: number, blockTokens: number): Uint32Array {
  const out = new Uint32Array(length);
  for (let base = 0, j = 0; base < length; base += blockTokens, j++) {
    const low = seeds[2 * j]!;
    const high = seeds[2 * j + 1]!;
    const key = fmix32(low ^ Math.imul(high, 0x85ebca6b));
    const size = Math.min(length - base, blockTokens);
    for (let k = 4; k < size; k++) {
      out[base + k] = ((Math.imul(key ^ k, 0x9e3779b1) >>> 0) * TOKEN_SCALE) | 0;
    }
    if (size > 0) out[base] = low & 0xffff;
    if (size > 1) out[base + 1] = low >>> 16;
    if (size > 2) out[base + 2] = high & 0xffff;
    if (size > 3) out[base + 3] = high >>> 16;
  }
  return out;
}
