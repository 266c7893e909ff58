/**
 * `parsePrometheusText` against bodies built to freeze a parser: long digit runs, long label
 * values, megabyte lines, hundreds of thousands of series. Every test asserts what was kept and
 * skipped, never a duration; the inputs are sized so that a parser quadratic in a token's length
 * (as the value regex it replaced was: a 40 KB digit run took over a second) would run past the
 * 120 s test timeout, while the linear one reads each in milliseconds.
 */
import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../../../src/transport/http/index.js';
import {
  DEFAULT_MAX_LINE_LENGTH,
  DEFAULT_MAX_VALUE_LENGTH,
} from '../../../src/transport/http/prometheus-text.js';
import { throwsCode } from '../../support/fixtures.js';

/** Caps raised out of the way, so the value and label scanners themselves see the input. */
const UNCAPPED = { maxLineLength: 4_000_000, maxValueLength: 4_000_000 } as const;

describe('parsePrometheusText on hostile bodies', () => {
  it('skips five 200 KB digit runs followed by x, and keeps the lines between them', () => {
    // Arrange: ~1 MB, within a transport's maxBodyBytes; each run ends in a character that
    // makes it an invalid value only at its very end.
    const run = `${'1'.repeat(200_000)}x`;
    const lines: string[] = [];
    for (let i = 0; i < 5; i++) lines.push(`vllm:num_requests_running ${run}`, `ok_${i} ${i}`);

    // Act
    const result = parsePrometheusText(lines.join('\n'), UNCAPPED);

    // Assert
    expect(result.skippedLines).toBe(5);
    expect(result.samples.map((s) => [s.name, s.value])).toEqual([
      ['ok_0', 0],
      ['ok_1', 1],
      ['ok_2', 2],
      ['ok_3', 3],
      ['ok_4', 4],
    ]);
    expect(result.truncated).toBe(false);
  });

  it('skips long digit runs in the exponent and the fraction too', () => {
    const digits = '7'.repeat(200_000);
    const text = [
      `a 1e${digits}x`,
      `b 1.${digits}e`,
      `c .${digits}.`,
      `d 1 ${digits}x`, // a timestamp
      'e 2',
    ].join('\n');

    const result = parsePrometheusText(text, UNCAPPED);

    expect(result.skippedLines).toBe(4);
    expect(result.samples.map((s) => s.name)).toEqual(['e']);
  });

  it('skips, with the default caps, a value token longer than maxValueLength', () => {
    const long = `1${'0'.repeat(DEFAULT_MAX_VALUE_LENGTH)}`; // maxValueLength + 1 characters
    const atCap = `0.${'5'.repeat(DEFAULT_MAX_VALUE_LENGTH - 2)}`;
    const text = [`a ${long}`, `b ${atCap}`, `c 1 1${'0'.repeat(DEFAULT_MAX_VALUE_LENGTH)}`].join(
      '\n',
    );

    const result = parsePrometheusText(text);

    expect(result.samples.map((s) => s.name)).toEqual(['b']);
    expect(result.samples[0]!.value).toBeCloseTo(0.5555555);
    expect(result.skippedLines).toBe(2);
  });

  it('skips a line of a million characters whole and reads the next one', () => {
    const text = `before 1\nbig{a="${'a'.repeat(1_000_000)}"} 1\nafter 2\n`;

    const result = parsePrometheusText(text);

    expect(result.samples.map((s) => s.name)).toEqual(['before', 'after']);
    expect(result.skippedLines).toBe(1);
  });

  it('skips a million-character line without a line end (the end of the body)', () => {
    const result = parsePrometheusText(`x 1\n${'9'.repeat(1_000_000)}`);

    expect(result.samples.map((s) => s.name)).toEqual(['x']);
    expect(result.skippedLines).toBe(1);
  });

  it('never cuts an over-long line into a shorter sample', () => {
    // Cut at maxLineLength, this line would read as `m 1` (value 1); it must be skipped instead.
    const line = `m 1${'0'.repeat(DEFAULT_MAX_LINE_LENGTH)}`;

    const result = parsePrometheusText(line, { maxValueLength: 4_000_000 });

    expect(result.samples).toEqual([]);
    expect(result.skippedLines).toBe(1);
  });

  it('keeps a line of exactly maxLineLength and skips one character more', () => {
    const line = (length: number): string => `m{a="${'a'.repeat(length - 9)}"} 1`;
    const text = [line(100), line(101), line(99)].join('\r\n');

    const result = parsePrometheusText(text, { maxLineLength: 100 });

    expect(line(100)).toHaveLength(100);
    expect(result.samples.map((s) => s.labels.a!.length)).toEqual([91, 90]);
    expect(result.skippedLines).toBe(1);
  });

  it('reads label values of 60 K characters with the default caps', () => {
    const value = 'v'.repeat(60_000);
    const escaped = 'q\\"'.repeat(20_000); // 60 K characters of escapes

    const result = parsePrometheusText(`a{x="${value}"} 1\nb{y="${escaped}"} 2\n`);

    expect(result.samples.map((s) => s.name)).toEqual(['a', 'b']);
    expect(result.samples[0]!.labels.x).toHaveLength(60_000);
    expect(result.samples[1]!.labels.y).toBe('q"'.repeat(20_000));
  });

  it('reads megabyte label values when the line cap allows them', () => {
    const value = 'l'.repeat(1_000_000);

    const result = parsePrometheusText(`a{x="${value}",y="${value}"} 3\n`, UNCAPPED);

    expect(result.samples).toHaveLength(1);
    expect(result.samples[0]!.labels.y).toHaveLength(1_000_000);
  });

  it('skips an unclosed megabyte label value, and a megabyte metric name that is filtered out', () => {
    const text = `a{x="${'u'.repeat(1_000_000)} 1\n${'n'.repeat(1_000_000)} 1\nok 1\n`;

    const filter = (name: string): boolean => name.length < 100;
    const filtered = parsePrometheusText(text, { ...UNCAPPED, filter });
    const unfiltered = parsePrometheusText(text, UNCAPPED);

    // The unclosed value passes the filter and is then rejected; the long name is filtered out.
    expect(filtered.samples.map((s) => s.name)).toEqual(['ok']);
    expect(filtered.skippedLines).toBe(1);
    expect(unfiltered.samples.map((s) => s.name)).toEqual([`${'n'.repeat(1_000_000)}`, 'ok']);
    expect(unfiltered.skippedLines).toBe(1);
  });

  it('reads 300,000 series, and stops at maxLines', () => {
    const lines: string[] = [];
    for (let i = 0; i < 300_000; i++) lines.push(`s{i="${i}"} ${i}`);
    const text = lines.join('\n');

    const all = parsePrometheusText(text);
    const capped = parsePrometheusText(text, { maxLines: 1_000 });

    expect(all.samples).toHaveLength(300_000);
    expect(all.samples[299_999]!.value).toBe(299_999);
    expect(capped.samples).toHaveLength(1_000);
    expect(capped.truncated).toBe(true);
  });

  it('still reads every special value and decimal form it documents', () => {
    const cases: [string, number][] = [
      ['+inf', Number.POSITIVE_INFINITY],
      ['-Infinity', Number.NEGATIVE_INFINITY],
      ['+INFINITY', Number.POSITIVE_INFINITY],
      ['-nan', Number.NaN],
      ['1.', 1],
      ['-0.25e-2', -0.0025],
      ['+.5E+1', 5],
      ['007', 7],
    ];

    for (const [token, value] of cases) {
      expect(parsePrometheusText(`a ${token}`).samples[0]?.value).toBe(value);
    }
    for (const token of ['.', '+', 'e5', '1e', '1e+', '1..2', 'infinit', '+-1', '1_000', '١']) {
      expect(parsePrometheusText(`a ${token}`).skippedLines).toBe(1);
    }
  });

  it.each([
    ['maxLineLength', { maxLineLength: 0 }],
    ['maxValueLength', { maxValueLength: 1.5 }],
  ])('rejects a bad %s with INVALID_ARGUMENT naming it', (field, options) => {
    const error = throwsCode(() => parsePrometheusText('', options), 'INVALID_ARGUMENT');

    expect(error.message.startsWith(`parsePrometheusText.options.${field} must be`)).toBe(true);
  });
});
