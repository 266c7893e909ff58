/**
 * `parsePrometheusText`: a small, forgiving reader of the Prometheus text exposition format
 * (version 0.0.4, what vLLM and SGLang serve on `/metrics`).
 *
 * @module
 */
import { callback, integer, OptionTable } from '../../core/option-table.js';
import { fail } from '../../core/options.js';
import { LineScanner } from './line-scanner.js';
import type { PrometheusMetricType, PrometheusSample } from './prometheus-sample.js';

/**
 * Bounds and filtering for {@link parsePrometheusText}.
 *
 * @public
 */
export interface PrometheusParseOptions {
  /**
   * Longest text read, in UTF-16 code units. Text beyond it is ignored, and so is the line it
   * cuts through; the result says `truncated`.
   * @defaultValue 16777216 (16 Mi characters)
   */
  readonly maxLength?: number;
  /**
   * Most lines read (blank lines and comments count). Lines beyond it are ignored; the result
   * says `truncated`. With the default, the samples take at most a few hundred megabytes even for
   * adversarial input; a real vLLM or SGLang scrape has a few hundred to a few thousand lines.
   * @defaultValue 500000
   */
  readonly maxLines?: number;
  /**
   * Longest line read, in UTF-16 code units, without its line end. A longer line is skipped
   * whole and counted in `skippedLines` (it is never cut down to a shorter line, which could
   * read as a different sample); nothing of it is scanned beyond finding its end. Real lines are
   * short: the longest in a vLLM or SGLang scrape is an info metric of a few hundred characters.
   * @defaultValue 65536
   */
  readonly maxLineLength?: number;
  /**
   * Longest value or timestamp token read, in UTF-16 code units. A line whose value or
   * timestamp is longer is skipped and counted in `skippedLines`. The shortest text of any
   * float64 has at most 24 characters and a millisecond timestamp at most 20.
   * @defaultValue 128
   */
  readonly maxValueLength?: number;
  /**
   * Keeps only samples whose metric name passes. A rejected line costs a scan of its name: its
   * labels and value are neither parsed nor checked, and it is not counted in `skippedLines`.
   * @defaultValue every sample is kept
   */
  readonly filter?: (name: string) => boolean;
}

/**
 * What {@link parsePrometheusText} read.
 *
 * @public
 */
export interface PrometheusParseResult {
  /** The samples, in text order. */
  readonly samples: PrometheusSample[];
  /** Declared types by family name, from `# TYPE` lines (the last declaration wins). */
  readonly types: ReadonlyMap<string, PrometheusMetricType>;
  /** Lines that were neither blank, a comment nor a valid sample (skipped, never thrown). */
  readonly skippedLines: number;
  /** `true` when `maxLength` or `maxLines` stopped the parse before the end of the text. */
  readonly truncated: boolean;
}

const MAX = Number.MAX_SAFE_INTEGER;

/**
 * @internal The options of {@link parsePrometheusText}, in the order they are checked. Other
 * keys are ignored.
 */
export const PROMETHEUS_PARSE_OPTIONS = new OptionTable(
  'parsePrometheusText.options',
  'PrometheusParseOptions',
  {
    maxLength: integer(16_777_216, 0, MAX),
    maxLines: integer(500_000, 0, MAX),
    maxLineLength: integer(65_536, 1, MAX),
    maxValueLength: integer(128, 1, MAX),
    filter: callback<(name: string) => boolean>('a function', undefined, 'every sample is kept'),
  },
  'any',
);

const DEFAULTS = PROMETHEUS_PARSE_OPTIONS.read(undefined);
/** @internal Default of {@link PrometheusParseOptions.maxLineLength}. */
export const DEFAULT_MAX_LINE_LENGTH = DEFAULTS.maxLineLength;
/** @internal Default of {@link PrometheusParseOptions.maxValueLength}. */
export const DEFAULT_MAX_VALUE_LENGTH = DEFAULTS.maxValueLength;

const NEWLINE = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Parses Prometheus text-format exposition into samples. Never throws for the text's content:
 * a line that is not a valid sample (HTML, JSON, a bad escape, a value like `12abc`, duplicate
 * label names) is skipped and counted. Accepted, beyond the strict grammar: `\r\n` line ends,
 * spaces or tabs around tokens and label pairs, a trailing comma in a label set, Go-style special
 * values in any case (`NaN`, `+Inf`, `-inf`, `Infinity`), the quoted metric and label names of
 * Prometheus 3 (`{"my.metric","a.b"="1"}`), an OpenMetrics exemplar after the value (ignored),
 * and `# EOF` (parsing stops). A label value keeps an unknown escape (`\t`) as written.
 * Timestamps must be integers (milliseconds); a line with any other timestamp is skipped. A
 * line longer than `maxLineLength`, or whose value or timestamp is longer than
 * `maxValueLength`, is skipped and counted.
 *
 * Cost: one pass over at most `maxLength` characters, whatever they are: each character is
 * looked at a bounded number of times (finding line ends, then scanning the line once), no
 * regular expression runs on the text and nothing backtracks, so the worst case is
 * O(min(text.length, maxLength)) time — about the same per character for a hostile body (a
 * 200 KB digit run, megabyte-long label values or lines) as for a real scrape. The parse is
 * synchronous: with the defaults a 4 MiB body (the HTTP transport's `maxBodyBytes`) takes tens
 * of milliseconds on one core. Memory: one object per kept sample plus one per labelled sample,
 * bounded by `maxLength` and `maxLines`.
 *
 * @param text - the exposition text, as served on `/metrics`.
 * @param options - bounds and a name filter; see {@link PrometheusParseOptions}.
 * @returns the samples, declared types, the count of skipped lines and whether a bound cut the
 *   parse short.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `text` is not a string or an option is
 *   invalid (the message names it).
 *
 * @example
 * ```ts
 * const { samples } = parsePrometheusText(await response.text(), {
 *   filter: (name) => name.startsWith('vllm:'),
 * });
 * ```
 * @public
 */
export function parsePrometheusText(
  text: string,
  options: PrometheusParseOptions = {},
): PrometheusParseResult {
  if (typeof text !== 'string') fail('parsePrometheusText.text', 'a string', text);
  const { maxLength, maxLines, maxLineLength, maxValueLength, filter } =
    PROMETHEUS_PARSE_OPTIONS.read(options);

  let end = text.length;
  let truncated = false;
  if (end > maxLength) {
    truncated = true;
    // Drop the line the bound cuts through: half a line could read as a different value.
    end =
      text.charCodeAt(maxLength) === NEWLINE
        ? maxLength
        : Math.max(text.lastIndexOf('\n', maxLength - 1), 0);
  }

  const scanner = new LineScanner(text, filter, maxValueLength);
  const samples: PrometheusSample[] = [];
  const types = new Map<string, PrometheusMetricType>();
  let skippedLines = 0;
  let lines = 0;
  let lineStart = 0;
  while (lineStart < end) {
    if (lines === maxLines) {
      truncated = true;
      break;
    }
    lines++;
    let next = text.indexOf('\n', lineStart);
    if (next < 0 || next > end) next = end;
    const lineEnd =
      next > lineStart && text.charCodeAt(next - 1) === CARRIAGE_RETURN ? next - 1 : next;
    const outcome =
      lineEnd - lineStart > maxLineLength ? 'invalid' : scanner.readLine(lineStart, lineEnd, types);
    lineStart = next + 1;
    if (outcome === 'sample') samples.push(scanner.takeSample());
    else if (outcome === 'invalid') skippedLines++;
    else if (outcome === 'eof') break;
  }
  return { samples, types, skippedLines, truncated };
}
