/**
 * Option tables: each component declares its options once — name, default, bounds — and the
 * allowed keys, the defaults, the validation and the resolved object all derive from that one
 * table. A test compares every `@defaultValue` in the TSDoc with the tables.
 *
 * @module
 * @internal
 */
import { invalidArgument } from './errors.js';
import { fail, readBoolean, readEnum, readInteger, readNumber, readObject } from './options.js';

/** @internal The longest delay a timer holds (ms): `setTimeout` fires at once beyond it. */
export const MAX_TIMER_MS = 2_147_483_647;

const kDerived = Symbol('derived default');

/**
 * @internal A default computed from the options read before it (table order) and the base the
 * table is read over, when there is one.
 */
export interface Derived<T> {
  readonly [kDerived]: (
    resolved: Readonly<Record<string, unknown>>,
    base: Readonly<Record<string, unknown>> | undefined,
  ) => T;
}

/** @internal A {@link Derived} default. */
export function derived<T>(
  derive: (
    resolved: Readonly<Record<string, unknown>>,
    base: Readonly<Record<string, unknown>> | undefined,
  ) => T,
): Derived<T> {
  return { [kDerived]: derive };
}

function isDerived(value: unknown): value is Derived<unknown> {
  return typeof value === 'object' && value !== null && kDerived in value;
}

/** @internal One option: its default, how a given value is read, and how the docs state the default. */
export interface OptionSpec<T> {
  /** The default (with a base: the base's value), or a {@link Derived} one. */
  readonly fallback: T | Derived<T>;
  /**
   * Validates a given value; `field` names it in errors; `resolved` holds the options read before
   * it (table order). Called only for a defined value.
   */
  // A method (not a function property), so a table of specs of different types reads as one type.
  read(field: string, value: unknown, fallback: T, resolved: Readonly<Record<string, unknown>>): T;
  /**
   * How the TSDoc `@defaultValue` of the option begins. Derived from `fallback` when it is a
   * number, string or boolean; required otherwise.
   */
  readonly doc?: string;
  /**
   * Set for an option without a default: what it must be. Absent, the table's `read` fails
   * (`<component>.<option> must be …, got undefined`) instead of taking `fallback`.
   */
  readonly required?: string;
}

/** @internal The resolved options of a table: every option with its value. */
export type Resolved<S extends Record<string, OptionSpec<unknown>>> = {
  readonly [K in keyof S]: S[K] extends OptionSpec<infer T> ? T : never;
};

/**
 * @internal A numeric option that keeps its bounds, so other readers of the same option (the
 * command line's flags) take them from the table rather than restating them.
 */
export interface BoundedSpec extends OptionSpec<number> {
  /** The smallest value accepted. */
  readonly min: number;
  /** The largest value accepted. */
  readonly max: number;
}

/** @internal An integer option in [min, max]. */
export function integer(fallback: number, min: number, max: number, doc?: string): BoundedSpec {
  return bounded(
    custom(fallback, (field, value, d) => readInteger(field, value, d, min, max), doc),
    min,
    max,
  );
}

/** @internal A finite number option in [min, max]. */
export function number(fallback: number, min: number, max: number, doc?: string): BoundedSpec {
  return bounded(
    custom(fallback, (field, value, d) => readNumber(field, value, d, min, max), doc),
    min,
    max,
  );
}

/**
 * @internal `spec`, also accepting `Infinity` (an unbounded size); its bounds are those of the
 * finite values.
 */
export function orInfinity(spec: BoundedSpec): BoundedSpec {
  return {
    ...spec,
    read: (field, value, fallback, resolved) =>
      value === Number.POSITIVE_INFINITY
        ? Number.POSITIVE_INFINITY
        : spec.read(field, value, fallback, resolved),
  };
}

function bounded(spec: OptionSpec<number>, min: number, max: number): BoundedSpec {
  return { ...spec, min, max };
}

/** @internal A duration in ms, an integer in [min, {@link MAX_TIMER_MS}]. */
export function duration(
  fallback: number | Derived<number>,
  min = 1,
  doc?: string,
): OptionSpec<number> {
  return custom(
    fallback,
    (field, value, d) => readInteger(field, value, d, min, MAX_TIMER_MS),
    doc,
  );
}

/** @internal A boolean option. */
export function boolean(fallback: boolean, doc?: string): OptionSpec<boolean> {
  return custom(fallback, (field, value, d) => readBoolean(field, value, d), doc);
}

/** @internal One of `allowed`. */
export function oneOf<T extends string>(
  allowed: readonly T[],
  fallback: T,
  doc?: string,
): OptionSpec<T> {
  return custom(fallback, (field, value, d) => readEnum(field, value, allowed, d), doc);
}

/** @internal A function option (absent: `fallback`). */
export function callback<F extends (...args: never[]) => unknown>(
  rule: string,
  fallback: F | undefined,
  doc: string,
): OptionSpec<F | undefined> {
  return custom<F | undefined>(
    fallback,
    (field, value) => {
      if (typeof value !== 'function') fail(field, rule, value);
      return value as F;
    },
    doc,
  );
}

/**
 * @internal An option every input must give (its docs state no default): `read` checks a given
 * value; a missing one fails, saying it must be `rule`.
 */
export function required<T>(
  rule: string,
  read: (field: string, value: unknown) => T,
): OptionSpec<T> {
  return {
    fallback: undefined as T,
    read: (field, value) => read(field, value),
    doc: '',
    required: rule,
  };
}

/** @internal An option with its own reader. */
export function custom<T>(
  fallback: OptionSpec<T>['fallback'],
  read: (
    field: string,
    value: unknown,
    fallback: T,
    resolved: Readonly<Record<string, unknown>>,
  ) => T,
  doc?: string,
): OptionSpec<T> {
  return doc === undefined ? { fallback, read } : { fallback, read, doc };
}

/**
 * @internal A component's options. `read(input, base?)` validates `input` — an object of these
 * options, every one optional — and returns every option resolved: a given value checked by its
 * reader, else the `base`'s value when a base is given, else the default. Errors name the field
 * as `<component>.<option>`; an unknown key is rejected, naming it and listing the options
 * (unless the table ignores other keys).
 *
 * Cost: O(options) per read, once per component instance.
 */
export class OptionTable<S extends Record<string, OptionSpec<unknown>>> {
  /** Where errors say the option belongs (`prefix_hash`, `health`…). */
  readonly component: string;
  /** The TSDoc interface that documents these options (for the docs test). */
  readonly documentedBy: string;
  readonly specs: S;
  /**
   * Keys accepted besides the table's (read elsewhere, for example the common policy options),
   * or `'any'`: other keys are ignored, as the health, retry and breaker settings always have.
   */
  readonly #extra: readonly string[] | 'any';

  constructor(
    component: string,
    documentedBy: string,
    specs: S,
    extraKeys: readonly string[] | 'any' = [],
  ) {
    this.component = component;
    this.documentedBy = documentedBy;
    this.specs = specs;
    this.#extra = extraKeys;
  }

  /** The option names, in table order. */
  get keys(): readonly string[] {
    return Object.keys(this.specs);
  }

  /** Whether the table declares `key`. */
  has(key: string): boolean {
    return Object.hasOwn(this.specs, key);
  }

  /**
   * How the docs must state `key`'s default: the spec's `doc`, or the literal default
   * (`30000`, `'random'`, `true`).
   */
  documentedDefault(key: keyof S & string): string | undefined {
    const s = this.specs[key]!;
    if (s.doc !== undefined) return s.doc;
    const d = s.fallback;
    if (typeof d === 'number' || typeof d === 'boolean') return String(d);
    if (typeof d === 'string') return `'${d}'`;
    return undefined;
  }

  /**
   * @returns every option resolved, frozen.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a non-object, an unknown key or a bad
   *   value (the message names the field).
   */
  read(input: unknown, base?: Resolved<S>, field = this.component): Resolved<S> {
    const o = readObject(field, input);
    const extra = this.#extra;
    for (const key of extra === 'any' ? [] : Object.keys(o)) {
      if (!this.has(key) && !(extra as readonly string[]).includes(key)) {
        throw invalidArgument(
          `${field === '' ? '' : `${field}.`}${key} is not an option of ${this.component} (options: ${[...this.keys, ...(extra as readonly string[])].join(', ')})`,
        );
      }
    }
    const resolved: Record<string, unknown> = {};
    for (const key of this.keys) {
      const s = this.specs[key]!;
      const b = base as Readonly<Record<string, unknown>> | undefined;
      const fallback = isDerived(s.fallback)
        ? s.fallback[kDerived](resolved, b)
        : b !== undefined
          ? b[key]
          : s.fallback;
      const value = o[key];
      const name = field === '' ? key : `${field}.${key}`;
      if (value === undefined && s.required !== undefined) fail(name, s.required, value);
      resolved[key] = value === undefined ? fallback : s.read(name, value, fallback, resolved);
    }
    return Object.freeze(resolved) as Resolved<S>;
  }
}
