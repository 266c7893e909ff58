/**
 * Command-line flags as a table. Each entry says how its value is read, what it is when the flag
 * is absent, and how the help lists it, so the parser and the `--help` text both derive from one
 * entry per flag. `util.parseArgs` splits the command line (`--flag value`, `--flag=value`,
 * short aliases, unknown flags and stray positionals); the table adds reading, defaults and help.
 *
 * @module
 * @internal
 */
import { parseArgs } from 'node:util';

/** @internal A mistake in the command line: printed on one line, exit code 2. */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * @internal One flag of a command. A switch (no `value` placeholder) is `false` when absent and
 * `true` when given; any other flag is its `fallback` when absent and `read(text)` when given.
 */
export interface Flag<T> {
  /** The help section that lists it. */
  readonly section: string;
  /** The placeholder of its value in the help (`<n>`); `undefined` for a switch. */
  readonly value: string | undefined;
  /** A one-letter alias (`h` for `-h`). */
  readonly short?: string;
  /** What it does; the help follows it with the default in parentheses. */
  readonly help: string;
  /** Its value when absent; `undefined` when it has none. */
  readonly fallback: T;
  /** How the help shows the default, for a fallback that is not a number or a string. */
  readonly shown?: string;
  /** Help text after the default. */
  readonly note?: string;
  /**
   * Turns the flag's text into its value (a switch's text is `''`).
   * @throws {@link UsageError} naming `--<flag>`, for text it does not accept.
   */
  readonly read: (text: string, flag: string) => T;
}

/** @internal Flags by name (without the leading `--`), in help order. */
export type FlagTable = Readonly<Record<string, Flag<unknown>>>;

/** @internal The value a flag resolves to: its reader's result or its fallback. */
export type FlagValue<F> = F extends {
  readonly fallback: infer D;
  readonly read: (text: string, flag: string) => infer R;
}
  ? D | R
  : never;

/** @internal Returns `spec` as it is; it only lets the flag's value type be inferred. */
export function flag<T>(spec: Flag<T>): Flag<T> {
  return spec;
}

/** @internal A switch: `false` unless given. */
export function toggle(section: string, help: string, short?: string): Flag<boolean> {
  return {
    section,
    value: undefined,
    help,
    fallback: false,
    read: () => true,
    ...(short === undefined ? {} : { short }),
  };
}

/**
 * @internal A command line split by `util.parseArgs` and read through its table. Values are
 * read when asked for, so the caller decides which mistake is reported first.
 */
export class ParsedFlags<Table extends FlagTable> {
  readonly #table: Table;
  readonly #given: Readonly<Record<string, string | boolean | undefined>>;

  constructor(table: Table, given: Readonly<Record<string, string | boolean | undefined>>) {
    this.#table = table;
    this.#given = given;
  }

  /** @returns whether the command line gives `name`. Cost: O(1). */
  given(name: keyof Table & string): boolean {
    return this.#given[name] !== undefined;
  }

  /**
   * @returns the value of `name`: its reader applied to the given text, or its fallback.
   * @throws {@link UsageError} naming the flag, for a value its reader refuses.
   */
  value<Name extends keyof Table & string>(name: Name): FlagValue<Table[Name]> {
    const spec = this.#table[name]!;
    const given = this.#given[name];
    if (given === undefined) return spec.fallback as FlagValue<Table[Name]>;
    return spec.read(typeof given === 'string' ? given : '', name) as FlagValue<Table[Name]>;
  }
}

/**
 * @internal Splits `args` with `util.parseArgs` (strict, no positionals) as `table` declares.
 * @throws {@link UsageError} with `util.parseArgs`'s first line, for an unknown flag, a missing
 *   value, a value given to a switch or a positional argument.
 */
export function parseFlags<Table extends FlagTable>(
  table: Table,
  args: readonly string[],
): ParsedFlags<Table> {
  const options: Record<string, { type: 'string' | 'boolean'; short?: string }> = {};
  for (const [name, spec] of Object.entries(table)) {
    options[name] = {
      type: spec.value === undefined ? 'boolean' : 'string',
      ...(spec.short === undefined ? {} : { short: spec.short }),
    };
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({ args: [...args], options, strict: true, allowPositionals: false });
    values = parsed.values as Record<string, string | boolean | undefined>;
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new UsageError(message.split('\n')[0]!);
  }
  return new ParsedFlags(table, values);
}

/** Column where a flag's description starts, and the widest help line. */
const COLUMN = 28;
const WIDTH = 96;

/** @internal The default as the help shows it, or `undefined` when the help shows none. */
export function defaultText(spec: Flag<unknown>): string | undefined {
  if (spec.shown !== undefined) return spec.shown;
  const d = spec.fallback;
  return typeof d === 'number' || typeof d === 'string' ? String(d) : undefined;
}

/**
 * @internal The help's list of flags: one block per section, in table order, each flag with its
 * description and default, wrapped at 96 columns.
 */
export function formatFlagHelp(table: FlagTable): string {
  const sections = new Map<string, string[]>();
  for (const [name, spec] of Object.entries(table)) {
    const lines = sections.get(spec.section) ?? [];
    sections.set(spec.section, lines);
    const short = spec.short === undefined ? '' : `-${spec.short}, `;
    const head = `  ${short}--${name}${spec.value === undefined ? '' : ` ${spec.value}`}`;
    const shown = defaultText(spec);
    const text = `${spec.help}${shown === undefined ? '' : ` (${shown})`}${spec.note ?? ''}`;
    lines.push(...wrap(head, text));
  }
  return [...sections].map(([title, lines]) => `${title}\n${lines.join('\n')}\n`).join('\n');
}

/** `head`, then `text` from column {@link COLUMN}, broken between words at {@link WIDTH}. */
function wrap(head: string, text: string): string[] {
  const indent = ' '.repeat(COLUMN);
  const lines: string[] = [];
  let line = head.padEnd(COLUMN);
  if (head.length > COLUMN - 2) {
    lines.push(head);
    line = indent;
  }
  for (const word of text.split(' ')) {
    if (line.length === COLUMN) line += word;
    else if (line.length + 1 + word.length <= WIDTH) line += ` ${word}`;
    else {
      lines.push(line);
      line = indent + word;
    }
  }
  lines.push(line);
  return lines;
}

/** @internal Reads an integer from `min` to `max` (decimal digits only). */
export function integer(min: number, max: number): (text: string, flag: string) => number {
  return (text, flag) => {
    const n = /^\d+$/.test(text.trim()) ? Number(text) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new UsageError(
        `--${flag} must be an integer from ${min} to ${max}, got '${clip(text)}'`,
      );
    }
    return n;
  };
}

/** @internal Reads a finite number from `min` to `max`. */
export function decimal(min: number, max: number): (text: string, flag: string) => number {
  return (text, flag) => {
    const n = text.trim() === '' ? Number.NaN : Number(text);
    if (!Number.isFinite(n) || n < min || n > max) {
      throw new UsageError(`--${flag} must be a number from ${min} to ${max}, got '${clip(text)}'`);
    }
    return n;
  };
}

/** @internal Reads one of `choices`. */
export function oneOf<const C extends readonly string[]>(
  choices: C,
): (text: string, flag: string) => C[number] {
  return (text, flag) => {
    if (!choices.includes(text)) {
      throw new UsageError(`--${flag} must be one of ${choices.join(', ')}, got '${text}'`);
    }
    return text;
  };
}

/** @internal Reads any text (a path, say) as it is. */
export function anyText(text: string): string {
  return text;
}

function clip(value: string): string {
  return value.length > 40 ? `${value.slice(0, 40)}…` : value;
}
