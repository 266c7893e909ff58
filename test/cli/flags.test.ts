/**
 * The flag table machinery: `util.parseArgs` driven by the table, values read only when asked
 * for, and the help laid out from the same entries.
 */
import { describe, expect, it } from 'vitest';
import {
  anyText,
  decimal,
  defaultText,
  flag,
  formatFlagHelp,
  integer,
  oneOf,
  parseFlags,
  toggle,
  UsageError,
} from '../../src/cli/flags.js';

const TABLE = {
  count: flag({
    section: 'Main',
    value: '<n>',
    help: 'how many',
    fallback: 3,
    read: integer(1, 9),
  }),
  ratio: flag({
    section: 'Main',
    value: '<f>',
    help: 'a share',
    fallback: 0.5,
    read: decimal(0, 1),
  }),
  mode: flag({
    section: 'Main',
    value: '<kind>',
    help: 'fast or slow',
    fallback: 'fast' as 'fast' | 'slow',
    read: oneOf(['fast', 'slow'] as const),
  }),
  name: flag<string | undefined>({
    section: 'Other',
    value: '<text>',
    help: 'any text',
    fallback: undefined,
    read: anyText,
  }),
  verbose: toggle('Other', 'say more', 'v'),
};

/** A help line: the flag from column 0, its description from column 28. */
const row = (head: string, text: string) => head.padEnd(28) + text;

function usageError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('expected a UsageError');
}

describe('parseFlags', () => {
  it('reads --flag value, --flag=value and short switches; absent flags take their fallback', () => {
    const flags = parseFlags(TABLE, ['--count', '7', '--ratio=0.25', '-v']);
    expect(flags.value('count')).toBe(7);
    expect(flags.value('ratio')).toBe(0.25);
    expect(flags.value('verbose')).toBe(true);
    expect(flags.value('mode')).toBe('fast');
    expect(flags.value('name')).toBeUndefined();
    expect(flags.given('count')).toBe(true);
    expect(flags.given('mode')).toBe(false);
  });

  it('reads a value only when asked for, so the caller orders the mistakes', () => {
    const flags = parseFlags(TABLE, ['--count', 'x', '--mode', 'odd']);
    expect(usageError(() => flags.value('mode'))).toBe(
      "--mode must be one of fast, slow, got 'odd'",
    );
    expect(usageError(() => flags.value('count'))).toBe(
      "--count must be an integer from 1 to 9, got 'x'",
    );
  });

  it.each([
    [['--counts', '2'], /'--counts'/],
    [['-x'], /'-x'/],
    [['stray'], /'stray'/],
    [['--count'], /'--count <value>' argument missing/],
    [['--verbose=yes'], /--verbose' does not take an argument/],
  ])('%j → a one-line UsageError naming what is wrong', (args, message) => {
    const text = usageError(() => parseFlags(TABLE, args));
    expect(text).toMatch(message);
    expect(text).not.toContain('\n');
  });
});

describe('readers', () => {
  it('name the flag, its range and the text (clipped at 40 characters)', () => {
    expect(usageError(() => integer(0, 5)('1.5', 'n'))).toBe(
      "--n must be an integer from 0 to 5, got '1.5'",
    );
    expect(usageError(() => decimal(0, 1)('', 'f'))).toBe(
      "--f must be a number from 0 to 1, got ''",
    );
    expect(usageError(() => decimal(0, 1)('9'.repeat(50), 'f'))).toBe(
      `--f must be a number from 0 to 1, got '${'9'.repeat(40)}…'`,
    );
    expect(integer(0, 5)(' 4 ', 'n')).toBe(4);
  });
});

describe('formatFlagHelp', () => {
  it('lists each section in table order, each flag with its default, wrapped at 96 columns', () => {
    const help = formatFlagHelp({
      ...TABLE,
      long: flag({
        section: 'Main',
        value: '<n>',
        help: 'word '.repeat(30).trim(),
        fallback: 2,
        note: '; then more',
        read: integer(0, 9),
      }),
      'a-flag-name-too-long-to-pad': toggle('Other', 'short'),
    });
    const lines = help.split('\n');
    expect(lines.slice(0, 4)).toEqual([
      'Main',
      row('  --count <n>', 'how many (3)'),
      row('  --ratio <f>', 'a share (0.5)'),
      row('  --mode <kind>', 'fast or slow (fast)'),
    ]);
    expect(lines).toContain(row('  --name <text>', 'any text'));
    expect(lines).toContain(row('  -v, --verbose', 'say more'));
    expect(lines).toContain('  --a-flag-name-too-long-to-pad');
    expect(lines).toContain(`${' '.repeat(28)}short`);
    expect(help.indexOf('Other')).toBeGreaterThan(help.indexOf('--long'));
    for (const line of lines) expect(line.length).toBeLessThanOrEqual(96);
    const long = lines.slice(lines.findIndex((l) => l.startsWith('  --long')));
    const words = (n: number) => 'word '.repeat(n).trim();
    expect(long.slice(0, 3)).toEqual([
      row('  --long <n>', words(13)),
      row('', words(13)),
      row('', `${words(4)} (2); then more`),
    ]);
  });

  it('shows a number or string fallback as it is, a shown text instead of it, and no default otherwise', () => {
    expect(defaultText(TABLE.count)).toBe('3');
    expect(defaultText(TABLE.mode)).toBe('fast');
    expect(defaultText(TABLE.name)).toBeUndefined();
    expect(defaultText(TABLE.verbose)).toBeUndefined();
    expect(defaultText({ ...TABLE.count, shown: 'three' })).toBe('three');
  });
});
