/**
 * The workload check that `simulate` and `comparePolicies` run before they build anything: every
 * field of every request, its prompt, and the dependencies between requests. A malformed
 * workload — generated or built by hand — fails with one `INVALID_ARGUMENT` naming the field
 * (`workload.requests[3].promptLength`), never with a `TypeError` halfway through a run.
 *
 * @module
 * @internal
 */
import { FleetRouteError, invalidArgument } from '../core/errors.js';
import { describe, fail, readInteger } from '../core/options.js';
import { isModelId } from '../workers/worker-spec.js';
import type { SimRequest, Workload } from './workload.js';
import { MAX_PROMPT_TOKENS } from './workloads/support.js';

/** How a rejected workload is named in messages. */
const WHERE = 'workload';

/**
 * @internal `value` as a {@link Workload} once every field has been checked: `name` and
 * `description` strings, `parameters` an object of numbers and strings, and each request
 * `requests[i]` an object with `id === i`, integer `promptLength` and `outputLength` in
 * [1, 1,000,000], a `tokens()` that returns a `Uint32Array` of `promptLength` tokens, and optional
 * `outputTokens` (a `Uint32Array`), `routingKey` (a string), `priority` (an integer in
 * ±1,000,000), `tenant` (a string of at most 256 characters), `timestamp` (a finite number ≥ 0)
 * `after` (the id of an earlier request) and `delayMs` (a finite number ≥ 0, only with `after`).
 *
 * Reads each field once (a getter that throws is reported as that field) and calls each
 * `tokens()` once. Cost: O(requests + prompt tokens); a trace builds every prompt once.
 *
 * @returns `value`, typed.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad field.
 */
export function readWorkload(value: unknown): Workload {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(WHERE, 'a Workload object ({ name, description, requests, parameters })', value);
  }
  const o = value as Record<string, unknown>;
  readText(field(o, 'name', WHERE), `${WHERE}.name`);
  readText(field(o, 'description', WHERE), `${WHERE}.description`);
  readParameters(field(o, 'parameters', WHERE));
  const requests = field(o, 'requests', WHERE);
  if (!Array.isArray(requests)) fail(`${WHERE}.requests`, 'an array of requests', requests);
  for (let i = 0; i < requests.length; i++) readRequest(requests[i], i);
  return value as Workload;
}

/**
 * @internal The prompt of `request` (request `id` of the workload), checked again: a `tokens()`
 * that throws, or returns anything but `promptLength` tokens, fails as at validation. O(1)
 * beyond the call itself.
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `workload.requests[id].tokens()`.
 */
export function promptOf(request: SimRequest, id: number): Uint32Array {
  let tokens: unknown;
  try {
    tokens = request.tokens();
  } catch (cause) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      `${requestName(id)}.tokens() threw: ${reason(cause)}`,
      {
        cause,
      },
    );
  }
  if (!(tokens instanceof Uint32Array)) {
    throw invalidArgument(
      `${requestName(id)}.tokens() must return a Uint32Array, got ${describe(tokens)}`,
    );
  }
  if (tokens.length !== request.promptLength) {
    throw invalidArgument(
      `${requestName(id)}.tokens() must return promptLength (${request.promptLength}) tokens, ` +
        `got ${tokens.length}`,
    );
  }
  return tokens;
}

/** Checks request `i`; see {@link readWorkload}. */
function readRequest(value: unknown, i: number): void {
  const where = requestName(i);
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(where, 'a request object', value);
  }
  const o = value as Record<string, unknown>;
  const id = field(o, 'id', where);
  if (id !== i) fail(`${where}.id`, `${i} (its position in requests)`, id);
  readLength(o, 'promptLength', where);
  readLength(o, 'outputLength', where);
  const tokens = field(o, 'tokens', where);
  if (typeof tokens !== 'function') {
    fail(`${where}.tokens`, 'a function returning a Uint32Array', tokens);
  }
  promptOf(o as unknown as SimRequest, i);
  const output = field(o, 'outputTokens', where);
  if (output !== undefined && !(output instanceof Uint32Array)) {
    fail(`${where}.outputTokens`, 'a Uint32Array', output);
  }
  const key = field(o, 'routingKey', where);
  if (key !== undefined && typeof key !== 'string') fail(`${where}.routingKey`, 'a string', key);
  const priority = field(o, 'priority', where);
  if (priority !== undefined) readInteger(`${where}.priority`, priority, 0, -1_000_000, 1_000_000);
  const adapter = field(o, 'adapter', where);
  if (adapter !== undefined && (typeof adapter !== 'string' || !isModelId(adapter)))
    fail(`${where}.adapter`, 'a model id (a non-empty string of at most 256 characters)', adapter);
  const tenant = field(o, 'tenant', where);
  if (tenant !== undefined && (typeof tenant !== 'string' || tenant.length > 256))
    fail(`${where}.tenant`, 'a string of at most 256 characters', tenant);
  const timestamp = field(o, 'timestamp', where);
  if (
    timestamp !== undefined &&
    (typeof timestamp !== 'number' || !Number.isFinite(timestamp) || timestamp < 0)
  ) {
    fail(`${where}.timestamp`, 'a finite number ≥ 0 (ms)', timestamp);
  }
  const after = field(o, 'after', where);
  if (
    after !== undefined &&
    !(Number.isInteger(after) && (after as number) >= 0 && (after as number) < i)
  ) {
    fail(
      `${where}.after`,
      i === 0
        ? 'absent (no request precedes request 0)'
        : `the id of an earlier request (0 … ${i - 1})`,
      after,
    );
  }
  const delay = field(o, 'delayMs', where);
  if (delay !== undefined) {
    if (typeof delay !== 'number' || !Number.isFinite(delay) || delay < 0) {
      fail(`${where}.delayMs`, 'a finite number ≥ 0 (ms)', delay);
    }
    if (after === undefined) fail(`${where}.delayMs`, 'absent without after', delay);
  }
}

/** The required length `where.key`: an integer in [1, 1,000,000]. */
function readLength(o: Record<string, unknown>, key: string, where: string): void {
  const value = field(o, key, where);
  if (value === undefined) throw invalidArgument(`${where}.${key} is missing`);
  readInteger(`${where}.${key}`, value, 0, 1, MAX_PROMPT_TOKENS);
}

/** `o[key]`, with a getter that throws reported as that field. */
function field(o: Record<string, unknown>, key: string, where: string): unknown {
  try {
    return o[key];
  } catch (cause) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      `${where}.${key} could not be read: ${reason(cause)}`,
      {
        cause,
      },
    );
  }
}

function readText(value: unknown, name: string): void {
  if (typeof value !== 'string') fail(name, 'a string', value);
}

function readParameters(value: unknown): void {
  const name = `${WHERE}.parameters`;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    fail(name, 'an object of numbers and strings', value);
  }
  for (const [key, v] of Object.entries(value)) {
    if (typeof v !== 'string' && typeof v !== 'number') {
      throw invalidArgument(`${name}.${key} must be a number or a string, got ${describe(v)}`);
    }
  }
}

/** A thrown value in a message: an error's message, anything else as `describe` shows it. */
function reason(cause: unknown): string {
  return cause instanceof Error ? cause.message : describe(cause);
}

function requestName(i: number): string {
  return `${WHERE}.requests[${i}]`;
}
