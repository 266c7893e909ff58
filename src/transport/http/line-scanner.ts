/**
 * The per-line scanner behind `parsePrometheusText`: reads one line of the text format in place
 * (by index, without slicing the line), so a skipped or filtered-out line allocates nothing.
 * Every character of a line is looked at a bounded number of times and nothing backtracks: no
 * regular expression ever sees the text.
 *
 * @module
 * @internal
 */
import { readTimestamp, readValue } from './number-scanner.js';
import type { PrometheusMetricType, PrometheusSample } from './prometheus-sample.js';

/** @internal What one line turned out to be. */
export type LineOutcome = 'blank' | 'comment' | 'eof' | 'sample' | 'filtered' | 'invalid';

const METRIC_TYPES: ReadonlySet<string> = new Set<PrometheusMetricType>([
  'counter',
  'gauge',
  'histogram',
  'summary',
  'untyped',
  'unknown',
  'info',
  'stateset',
  'gaugehistogram',
]);

const NO_LABELS: Readonly<Record<string, string>> = Object.freeze(Object.create(null));

const SPACE = 0x20;
const TAB = 0x09;
const HASH = 0x23;
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const EQUALS = 0x3d;
const COMMA = 0x2c;
const LOWER_N = 0x6e;
const NEWLINE = 0x0a;

/** Code units turned into a string per call of `String.fromCharCode` (far below V8's limit). */
const CODES_PER_CALL = 8_192;

/** `codes[0 … n)` as one flat string. Cost: O(n). */
function fromCodes(codes: Uint16Array, n: number): string {
  const chunk = (from: number, to: number): string =>
    String.fromCharCode.apply(null, codes.subarray(from, to) as unknown as number[]);
  if (n <= CODES_PER_CALL) return chunk(0, n);
  const parts: string[] = [];
  for (let i = 0; i < n; i += CODES_PER_CALL) parts.push(chunk(i, Math.min(n, i + CODES_PER_CALL)));
  return parts.join('');
}

/** `[a-zA-Z_]`, plus `:` for metric names. */
function isNameStart(c: number, colon: boolean): boolean {
  return (
    (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || (colon && c === 0x3a)
  );
}

/** `[a-zA-Z0-9_]`, plus `:` for metric names. */
function isNameChar(c: number, colon: boolean): boolean {
  return isNameStart(c, colon) || (c >= 0x30 && c <= 0x39);
}

/**
 * @internal Reads lines of one text. `readLine` returns what the line was; after `'sample'`,
 * `takeSample()` hands out the sample. Not reentrant (one parse at a time).
 */
export class LineScanner {
  readonly #text: string;
  readonly #filter: ((name: string) => boolean) | undefined;
  readonly #maxValueLength: number;
  #pos = 0;
  #end = 0;
  #name = '';
  #labels: Record<string, string> = NO_LABELS;
  #value = 0;
  #timestamp: number | undefined = undefined;
  /** What the last `#labelSet` read. */
  #setLabels: Record<string, string> = NO_LABELS;
  #quotedName: string | undefined = undefined;
  /** Unescaped label text is assembled here; grows to the longest escaped string read. */
  #scratch = new Uint16Array(256);

  /**
   * @param maxValueLength - longest value or timestamp token read; a longer one makes its line
   *   invalid without being sliced or parsed.
   */
  constructor(
    text: string,
    filter: ((name: string) => boolean) | undefined,
    maxValueLength: number,
  ) {
    this.#text = text;
    this.#filter = filter;
    this.#maxValueLength = maxValueLength;
  }

  /** Reads `text[start … end)` (one line, without its line end); records `# TYPE` in `types`. */
  readLine(start: number, end: number, types: Map<string, PrometheusMetricType>): LineOutcome {
    this.#pos = start;
    this.#end = end;
    this.#skipBlanks();
    if (this.#pos === end) return 'blank';
    if (this.#peek() === HASH) return this.#comment(types);
    return this.#sample();
  }

  /** The sample the last `readLine` read (valid only after it returned `'sample'`). */
  takeSample(): PrometheusSample {
    return {
      name: this.#name,
      labels: this.#labels,
      value: this.#value,
      timestampMs: this.#timestamp,
    };
  }

  #comment(types: Map<string, PrometheusMetricType>): LineOutcome {
    this.#pos++;
    this.#skipBlanks();
    // The keyword is compared in place: a comment line allocates nothing.
    const start = this.#pos;
    const length = this.#tokenEnd() - start;
    if (length === 3 && this.#text.startsWith('EOF', start) && this.#pos === this.#end) {
      return 'eof';
    }
    if (length !== 4 || !this.#text.startsWith('TYPE', start)) return 'comment';
    this.#skipBlanks();
    const name = this.#metricName();
    if (name === undefined) return 'comment';
    this.#skipBlanks();
    const type = this.#token();
    this.#skipBlanks();
    if (this.#pos === this.#end && METRIC_TYPES.has(type))
      types.set(name, type as PrometheusMetricType);
    return 'comment';
  }

  #sample(): LineOutcome {
    let name: string;
    let labels = NO_LABELS;
    if (this.#peek() === OPEN_BRACE) {
      // `{"quoted.name",label="…"} value`: the name sits inside the braces.
      if (!this.#labelSet(true)) return 'invalid';
      const quotedName = this.#quotedName;
      if (quotedName === undefined || quotedName === '') return 'invalid';
      name = quotedName;
      if (this.#filter !== undefined && !this.#filter(name)) return 'filtered';
      labels = this.#setLabels;
    } else {
      const bare = this.#bareName(true);
      if (bare === undefined) return 'invalid';
      if (this.#filter !== undefined && !this.#filter(bare)) return 'filtered';
      name = bare;
      if (this.#peek() === OPEN_BRACE) {
        if (!this.#labelSet(false)) return 'invalid';
        labels = this.#setLabels;
      } else if (!this.#isBlank(this.#peek())) {
        return 'invalid';
      }
    }
    this.#skipBlanks();
    const valueStart = this.#pos;
    const valueEnd = this.#tokenEnd();
    if (valueEnd - valueStart > this.#maxValueLength) return 'invalid';
    const value = readValue(this.#text, valueStart, valueEnd);
    if (value === undefined) return 'invalid';
    this.#skipBlanks();
    let timestamp: number | undefined;
    if (this.#pos < this.#end && this.#peek() !== HASH) {
      const start = this.#pos;
      const end = this.#tokenEnd();
      if (end - start > this.#maxValueLength) return 'invalid';
      timestamp = readTimestamp(this.#text, start, end);
      if (timestamp === undefined) return 'invalid';
      this.#skipBlanks();
    }
    // Anything left must be an OpenMetrics exemplar (`# {trace_id="…"} 1.0`), which is ignored.
    if (this.#pos < this.#end && this.#peek() !== HASH) return 'invalid';
    this.#name = name;
    this.#labels = labels;
    this.#value = value;
    this.#timestamp = timestamp;
    return 'sample';
  }

  /**
   * `{…}` at the cursor, read into `#setLabels`, and into `#quotedName` the one bare quoted
   * string that may name the metric when `nameAllowed` (Prometheus 3 quoting). `false` when
   * malformed or a label name repeats. Allocates only the labels object and its strings.
   */
  #labelSet(nameAllowed: boolean): boolean {
    this.#pos++; // {
    let labels: Record<string, string> | undefined;
    let name: string | undefined;
    for (;;) {
      this.#skipBlanks();
      if (this.#pos >= this.#end) return false;
      const c = this.#peek();
      if (c === CLOSE_BRACE) break;
      let key: string | undefined;
      if (c === QUOTE) {
        key = this.#quoted();
        if (key === undefined) return false;
        this.#skipBlanks();
        if (this.#peek() !== EQUALS) {
          if (!nameAllowed || name !== undefined) return false;
          name = key;
          key = undefined;
        }
      } else {
        key = this.#bareName(false);
        if (key === undefined) return false;
        this.#skipBlanks();
        if (this.#peek() !== EQUALS) return false;
      }
      if (key !== undefined) {
        this.#pos++; // =
        this.#skipBlanks();
        if (this.#peek() !== QUOTE) return false;
        const value = this.#quoted();
        if (value === undefined) return false;
        labels ??= Object.create(null) as Record<string, string>;
        if (key in labels) return false;
        labels[key] = value;
      }
      this.#skipBlanks();
      const sep = this.#peek();
      if (sep === COMMA) this.#pos++;
      else if (sep !== CLOSE_BRACE) return false;
    }
    this.#pos++; // }
    this.#setLabels = labels ?? NO_LABELS;
    this.#quotedName = name;
    return true;
  }

  /** A metric name, bare or quoted, at the cursor. */
  #metricName(): string | undefined {
    return this.#peek() === QUOTE ? this.#quoted() : this.#bareName(true);
  }

  /** `[a-zA-Z_:][a-zA-Z0-9_:]*` (metric) or `[a-zA-Z_][a-zA-Z0-9_]*` (label) at the cursor. */
  #bareName(colon: boolean): string | undefined {
    const text = this.#text;
    const start = this.#pos;
    if (start >= this.#end || !isNameStart(text.charCodeAt(start), colon)) return undefined;
    let p = start + 1;
    while (p < this.#end && isNameChar(text.charCodeAt(p), colon)) p++;
    this.#pos = p;
    return text.slice(start, p);
  }

  /**
   * A `"…"` string at the cursor with `\\`, `\"` and `\n` unescaped; `undefined` if unclosed.
   * Without escapes it is one slice of the text; with escapes the characters are copied once into
   * a scratch buffer and turned into one flat string (never a rope of one piece per escape).
   */
  #quoted(): string | undefined {
    const text = this.#text;
    const end = this.#end;
    const start = this.#pos + 1;
    let p = start;
    for (; p < end; p++) {
      const c = text.charCodeAt(p);
      if (c === QUOTE) {
        this.#pos = p + 1;
        return text.slice(start, p);
      }
      if (c === BACKSLASH) break;
    }
    if (p >= end) return undefined;
    const buffer = this.#scratchFor(end - start);
    let n = 0;
    for (let i = start; i < p; i++) buffer[n++] = text.charCodeAt(i);
    while (p < end) {
      const c = text.charCodeAt(p);
      if (c === QUOTE) {
        this.#pos = p + 1;
        return fromCodes(buffer, n);
      }
      if (c === BACKSLASH) {
        if (p + 1 >= end) return undefined;
        const next = text.charCodeAt(p + 1);
        if (next === LOWER_N) buffer[n++] = NEWLINE;
        else if (next === BACKSLASH || next === QUOTE) buffer[n++] = next;
        else {
          // An unknown escape is kept as written.
          buffer[n++] = c;
          buffer[n++] = next;
        }
        p += 2;
        continue;
      }
      buffer[n++] = c;
      p++;
    }
    return undefined;
  }

  /** The scratch buffer, grown to hold at least `length` code units (at most a line). */
  #scratchFor(length: number): Uint16Array {
    if (this.#scratch.length < length) {
      this.#scratch = new Uint16Array(Math.max(length, this.#scratch.length * 2));
    }
    return this.#scratch;
  }

  /** The run of non-blank characters at the cursor. */
  #token(): string {
    const start = this.#pos;
    return this.#text.slice(start, this.#tokenEnd());
  }

  /** Moves the cursor past the run of non-blank characters at it; returns the new position. */
  #tokenEnd(): number {
    const text = this.#text;
    let p = this.#pos;
    while (p < this.#end && !this.#isBlank(text.charCodeAt(p))) p++;
    this.#pos = p;
    return p;
  }

  /** The character code at the cursor, or -1 at the end of the line. */
  #peek(): number {
    return this.#pos < this.#end ? this.#text.charCodeAt(this.#pos) : -1;
  }

  #skipBlanks(): void {
    const text = this.#text;
    let p = this.#pos;
    while (p < this.#end && this.#isBlank(text.charCodeAt(p))) p++;
    this.#pos = p;
  }

  #isBlank(c: number): boolean {
    return c === SPACE || c === TAB;
  }
}
