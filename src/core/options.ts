/**
 * Readers that validate one option field each and name it in the error. Every component resolves
 * its options through these, so messages read the same everywhere:
 * `"<where>.<field> must be <rule>, got <value>"`.
 *
 * @module
 * @internal
 */
import { invalidArgument } from './errors.js';

/** @internal Renders a rejected value for an error message, bounded in length. */
export function describe(value: unknown): string {
  if (typeof value === 'string') {
    const shown = value.length > 64 ? `${value.slice(0, 64)}… (${value.length} chars)` : value;
    return JSON.stringify(shown);
  }
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'object' && value !== null)
    return Array.isArray(value) ? 'an array' : 'an object';
  return String(value);
}

/** @internal Throws `INVALID_ARGUMENT` naming `field` and the broken rule. */
export function fail(field: string, rule: string, value: unknown): never {
  throw invalidArgument(`${field} must be ${rule}, got ${describe(value)}`);
}

/** @internal `value` as a plain options object (or `{}` when undefined). */
export function readObject(field: string, value: unknown): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    fail(field, 'an object', value);
  return value as Record<string, unknown>;
}

/** @internal A finite number within [min, max], or the fallback when undefined. */
export function readNumber(
  field: string,
  value: unknown,
  fallback: number,
  min = 0,
  max = Number.MAX_VALUE,
): number {
  return readBounded(field, value, fallback, min, max, Number.isFinite, 'a finite number');
}

/** @internal An integer within [min, max], or the fallback when undefined. */
export function readInteger(
  field: string,
  value: unknown,
  fallback: number,
  min = 0,
  max = Number.MAX_SAFE_INTEGER,
): number {
  return readBounded(field, value, fallback, min, max, Number.isInteger, 'an integer');
}

function readBounded(
  field: string,
  value: unknown,
  fallback: number,
  min: number,
  max: number,
  kind: (n: number) => boolean,
  noun: string,
): number {
  if (value === undefined) return fallback;
  if (typeof value !== 'number' || !kind(value) || value < min || value > max) {
    fail(field, `${noun} between ${min} and ${max}`, value);
  }
  return value;
}

/** @internal A boolean, or the fallback when undefined. */
export function readBoolean(field: string, value: unknown, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') fail(field, 'a boolean', value);
  return value;
}

/** @internal One of `allowed`, or the fallback when undefined. */
export function readEnum<T extends string>(
  field: string,
  value: unknown,
  allowed: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    fail(field, `one of ${allowed.map((a) => `'${a}'`).join(', ')}`, value);
  }
  return value as T;
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** @internal Whether `value` is valid UTF-16 (no unpaired surrogate). */
export function isWellFormed(value: string): boolean {
  return !LONE_SURROGATE.test(value);
}

/** @internal A non-empty, well-formed string of at most `maxLength` code units. */
export function readString(field: string, value: unknown, maxLength: number): string {
  if (
    typeof value !== 'string' ||
    value.length === 0 ||
    value.length > maxLength ||
    !isWellFormed(value)
  ) {
    fail(field, `a non-empty, well-formed string of at most ${maxLength} characters`, value);
  }
  return value;
}

/**
 * @internal The fields of a validated partial config that were given (not `undefined`), as a
 * frozen copy (arrays copied and frozen too), so a later change to the caller's object has no
 * effect.
 */
export function givenFields<T extends object>(config: T): T {
  const given: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(config)) {
    if (value !== undefined) given[key] = Array.isArray(value) ? Object.freeze([...value]) : value;
  }
  return Object.freeze(given) as T;
}
