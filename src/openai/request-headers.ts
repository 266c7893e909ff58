/**
 * What of a request's headers (and its body's routing-key field) reaches the policies: the
 * routing key, and the allow-listed headers.
 *
 * @module
 * @internal
 */

import { MAX_PRIORITY } from '../admission/admission-options.js';
import { keyWithin } from '../core/content-digest.js';
import { type RequestHeaders, readHeader } from '../core/headers.js';
import { fail } from '../core/options.js';

/** @internal Longest header value passed to the policies; a longer one is left out. */
export const MAX_POLICY_HEADER_VALUE = 8_192;
/** @internal Most names in `policyHeaders`. */
export const MAX_POLICY_HEADERS = 64;
/** Longest header name or body field name accepted in the options. */
const MAX_NAME_LENGTH = 256;
/** An HTTP field name: RFC 9110's `token`. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/**
 * @internal An option naming a header: a non-empty RFC 9110 token of at most 256 characters,
 * returned in lower case.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `field`.
 */
export function readHeaderName(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length > MAX_NAME_LENGTH || !TOKEN.test(value)) {
    fail(field, `an HTTP header name of at most ${MAX_NAME_LENGTH} characters`, value);
  }
  return value.toLowerCase();
}

/**
 * @internal An option naming a top-level body field: a non-empty string of at most 256
 * characters.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `field`.
 */
export function readFieldName(field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > MAX_NAME_LENGTH) {
    fail(field, `a non-empty string of at most ${MAX_NAME_LENGTH} characters`, value);
  }
  return value;
}

/**
 * @internal A list of header names: at most {@link MAX_POLICY_HEADERS}, each read by
 * {@link readHeaderName}; lower-cased, duplicates dropped, frozen.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `field` or the bad element.
 */
export function readHeaderNames(field: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length > MAX_POLICY_HEADERS) {
    fail(field, `an array of at most ${MAX_POLICY_HEADERS} header names`, value);
  }
  const names: string[] = [];
  for (let i = 0; i < value.length; i++) {
    const name = readHeaderName(`${field}[${i}]`, value[i]);
    if (!names.includes(name)) names.push(name);
  }
  return Object.freeze(names);
}

/**
 * @internal The request's routing key: the first non-empty value of header `header`, else the
 * body's own field `field` when it is a non-empty string; `undefined` when neither is configured
 * or given. A key longer than `maxLength` is replaced by `#` and the 16 hex digits of its digest
 * (17 characters): still one key per value, in bounded memory.
 *
 * Cost: O(1) for `Headers` and lower-case records (one scan of the record's keys otherwise);
 * a long key is hashed once, linear in its length.
 */
export function routingKeyOf(
  body: Readonly<Record<string, unknown>>,
  headers: RequestHeaders | undefined,
  header: string | undefined,
  field: string | undefined,
  maxLength: number,
): string | undefined {
  let key = header === undefined ? undefined : readHeader(headers, header);
  if (key === undefined && field !== undefined && Object.hasOwn(body, field)) {
    const value = body[field];
    if (typeof value === 'string' && value !== '') key = value;
  }
  return key === undefined ? undefined : keyWithin(key, maxLength);
}

/**
 * @internal The allow-listed headers present in `headers`, as a record of lower-case names to
 * their first non-empty value (a `Headers` object gives its combined value); `undefined` when none
 * is present. A value longer than {@link MAX_POLICY_HEADER_VALUE} characters is left out. The
 * record has no prototype, so no header name can reach one.
 *
 * Cost: one header read per allowed name; one record allocated when one is present.
 */
export function policyHeadersOf(
  headers: RequestHeaders | undefined,
  allowed: readonly string[],
): Readonly<Record<string, string>> | undefined {
  if (headers === undefined || allowed.length === 0) return undefined;
  let out: Record<string, string> | undefined;
  for (let i = 0; i < allowed.length; i++) {
    const name = allowed[i]!;
    const value = readHeader(headers, name);
    if (value === undefined || value.length > MAX_POLICY_HEADER_VALUE) continue;
    out ??= Object.create(null) as Record<string, string>;
    out[name] = value;
  }
  return out;
}

/** A priority as a header gives it: an optional sign and at most 7 digits (no backtracking). */
const PRIORITY = /^[+-]?[0-9]{1,7}$/;

/**
 * @internal The request's priority: header `header` (an integer in decimal), else the body's own
 * field `field` (a JSON integer); `undefined` when neither is configured or given. Either must lie
 * in ±{@link MAX_PRIORITY}.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the header or field.
 */
export function priorityOf(
  body: Readonly<Record<string, unknown>>,
  headers: RequestHeaders | undefined,
  header: string | undefined,
  field: string | undefined,
): number | undefined {
  const rule = `an integer in [-${MAX_PRIORITY}, ${MAX_PRIORITY}]`;
  const text = header === undefined ? undefined : readHeader(headers, header);
  if (text !== undefined) {
    const value = PRIORITY.test(text.trim()) ? Number(text.trim()) : Number.NaN;
    if (!(Math.abs(value) <= MAX_PRIORITY)) fail(`header ${header}`, rule, text.slice(0, 64));
    return value;
  }
  if (field === undefined || !Object.hasOwn(body, field)) return undefined;
  const value = body[field];
  if (value === undefined || value === null) return undefined;
  if (!Number.isInteger(value) || Math.abs(value as number) > MAX_PRIORITY)
    fail(field, rule, value);
  return value as number;
}
