/**
 * `parseMooncakeTrace` and `readMooncakeTrace`: replay a public Mooncake (FAST'25) trace, whose
 * prompts are given as chains of block ids rather than tokens.
 *
 * @module
 */

import { readFile } from 'node:fs/promises';
import { FleetRouteError, invalidArgument } from '../../core/errors.js';
import { custom, integer, OptionTable, type Resolved } from '../../core/option-table.js';
import { describe, fail, readInteger, readString } from '../../core/options.js';
import { fmix32 } from '../random.js';
import type { SimRequest, Workload } from '../workload.js';
import {
  countOf,
  formatCount,
  frozenWorkload,
  MAX_PROMPT_TOKENS,
  MAX_REQUESTS,
  VOCABULARY,
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
});

/**
 * Parses a Mooncake trace: JSON Lines, one record per line, such as
 * `{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47, 2, …]}`.
 * `timestamp` is the arrival in ms from the start; `hash_ids` holds one id per block of
 * `blockTokens` prompt tokens (the last block may be partial), and equal ids mean equal blocks
 * after equal prefixes. Blank lines are skipped; other fields are ignored.
 *
 * Each record becomes a request in file order (`requests[i].id === i`) with its `timestamp`,
 * `promptLength = input_length`, `outputLength = max(1, output_length)` and no routing key.
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
 *   `ceil(input_length / blockTokens)`); or when the trace has no record, or more than
 *   1,000,000 without a `limit`.
 * @public
 */
export function parseMooncakeTrace(text: string, options: MooncakeTraceOptions = {}): Workload {
  return parseResolved(text, MOONCAKE_OPTIONS.read(options));
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
  return frozenWorkload(workload.name, workload.description, workload.requests, {
    ...workload.parameters,
    path: String(path),
  });
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
    const request = parseRecord(line, lineNumber, requests.length, options.blockTokens);
    requests.push(request);
    promptTokens += request.promptLength;
    outputTokens += request.outputLength;
    first = Math.min(first, request.timestamp!);
    last = Math.max(last, request.timestamp!);
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

/** Parses one non-blank line into request `id`. */
function parseRecord(
  line: string,
  lineNumber: number,
  id: number,
  blockTokens: number,
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
  const timestamp = readField(o, 'timestamp', where, 0, Number.MAX_SAFE_INTEGER);
  const promptLength = readField(o, 'input_length', where, 1, MAX_PROMPT_TOKENS);
  const outputLength = Math.max(1, readField(o, 'output_length', where, 0, MAX_PROMPT_TOKENS));
  const seeds = readBlockSeeds(o, where, Math.ceil(promptLength / blockTokens));
  return Object.freeze({
    id,
    promptLength,
    outputLength,
    timestamp,
    tokens: () => traceTokens(seeds, promptLength, blockTokens),
  });
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

/**
 * The prompt of a record, cut at `length`: token `k` of block `j` mixes the block's seeds with
 * `k`, except the first four tokens, which are the four 16-bit halves of the seeds (so blocks
 * with different ids differ there). O(length).
 */
function traceTokens(seeds: Uint32Array, length: number, blockTokens: number): Uint32Array {
  const out = new Uint32Array(length);
  for (let base = 0, j = 0; base < length; base += blockTokens, j++) {
    const low = seeds[2 * j]!;
    const high = seeds[2 * j + 1]!;
    const key = fmix32(low ^ Math.imul(high, 0x85ebca6b));
    const end = Math.min(length, base + blockTokens);
    for (let i = base; i < end; i++) {
      out[i] = fmix32((key + Math.imul(i - base, 0x9e3779b9)) >>> 0) % VOCABULARY;
    }
    const head = [low & 0xffff, low >>> 16, high & 0xffff, high >>> 16];
    for (let k = 0; k < head.length && base + k < end; k++) out[base + k] = head[k]!;
  }
  return out;
}
