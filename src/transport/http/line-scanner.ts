/**
 * The per-line scanner behind `parsePrometheusText`: reads one line of the text format in place
 * (by index, without slicing the line), so a skipped or filtered-out line allocates nothing.
 *
 * @module
 * @internal
 */
import type { PrometheusMetricType, PrometheusSample } from './prometheus-text.js';

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

const DECIMAL = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;
const INTEGER = /^-?\d+$/;

/**
 * A sample value: a decimal float, or (any case, optional sign) `NaN`, `Inf`, `Infinity`, as Go's
 * `strconv.ParseFloat` reads them. `undefined` for anything else (`Number` alone would read `''`
 * as 0 and `0x10` as 16).
 */
function parseValue(token: string): number | undefined {
  if (DECIMAL.test(token)) return Number(token);
  const lower = token.toLowerCase();
  const sign = lower.charCodeAt(0) === 0x2d ? -1 : 1;
  const body = lower.charCodeAt(0) === 0x2b || sign < 0 ? lower.slice(1) : lower;
  if (body === 'nan') return Number.NaN;
  if (body === 'inf' || body === 'infinity') return sign * Number.POSITIVE_INFINITY;
  return undefined;
}

/**
 * @internal Reads lines of one text. `readLine` returns what the line was; after `'sample'`,
 * `takeSample()` hands out the sample. Not reentrant (one parse at a time).
 */
export class LineScanner {
  readonly #text: string;
  readonly #filter: ((name: string) => boolean) | undefined;
  #pos = 0;
  #end = 0;
  #name = '';
  #labels: Record<string, string> = NO_LABELS;
  #value = 0;
  #timestamp: number | undefined = undefined;

  constructor(text: string, filter: ((name: string) => boolean) | undefined) {
    this.#text = text;
    this.#filter = filter;
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
    const keyword = this.#token();
    if (keyword === 'EOF' && this.#pos === this.#end) return 'eof';
    if (keyword !== 'TYPE') return 'comment';
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
      const read = this.#labelSet(true);
      if (read === undefined || read.name === undefined || read.name === '') return 'invalid';
      name = read.name;
      if (this.#filter !== undefined && !this.#filter(name)) return 'filtered';
      labels = read.labels;
    } else {
      const bare = this.#bareName(true);
      if (bare === undefined) return 'invalid';
      if (this.#filter !== undefined && !this.#filter(bare)) return 'filtered';
      name = bare;
      if (this.#peek() === OPEN_BRACE) {
        const read = this.#labelSet(false);
        if (read === undefined) return 'invalid';
        labels = read.labels;
      } else if (!this.#isBlank(this.#peek())) {
        return 'invalid';
      }
    }
    this.#skipBlanks();
    const value = parseValue(this.#token());
    if (value === undefined) return 'invalid';
    this.#skipBlanks();
    let timestamp: number | undefined;
    if (this.#pos < this.#end && this.#peek() !== HASH) {
      const token = this.#token();
      if (!INTEGER.test(token)) return 'invalid';
      timestamp = Number(token);
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
   * `{…}` at the cursor. When `nameAllowed`, one bare quoted string may name the metric
   * (Prometheus 3 quoting). `undefined` when malformed or a label name repeats.
   */
  #labelSet(
    nameAllowed: boolean,
  ): { labels: Record<string, string>; name: string | undefined } | undefined {
    this.#pos++; // {
    let labels: Record<string, string> | undefined;
    let name: string | undefined;
    for (;;) {
      this.#skipBlanks();
      if (this.#pos >= this.#end) return undefined;
      const c = this.#peek();
      if (c === CLOSE_BRACE) break;
      let key: string | undefined;
      if (c === QUOTE) {
        key = this.#quoted();
        if (key === undefined) return undefined;
        this.#skipBlanks();
        if (this.#peek() !== EQUALS) {
          if (!nameAllowed || name !== undefined) return undefined;
          name = key;
          key = undefined;
        }
      } else {
        key = this.#bareName(false);
        if (key === undefined) return undefined;
        this.#skipBlanks();
        if (this.#peek() !== EQUALS) return undefined;
      }
      if (key !== undefined) {
        this.#pos++; // =
        this.#skipBlanks();
        if (this.#peek() !== QUOTE) return undefined;
        const value = this.#quoted();
        if (value === undefined) return undefined;
        labels ??= Object.create(null) as Record<string, string>;
        if (key in labels) return undefined;
        labels[key] = value;
      }
      this.#skipBlanks();
      const sep = this.#peek();
      if (sep === COMMA) this.#pos++;
      else if (sep !== CLOSE_BRACE) return undefined;
    }
    this.#pos++; // }
    return { labels: labels ?? NO_LABELS, name };
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

  /** A `"…"` string at the cursor with `\\`, `\"` and `\n` unescaped; `undefined` if unclosed. */
  #quoted(): string | undefined {
    const text = this.#text;
    const end = this.#end;
    let p = this.#pos + 1;
    let out = '';
    let runStart = p;
    while (p < end) {
      const c = text.charCodeAt(p);
      if (c === QUOTE) {
        this.#pos = p + 1;
        return out + text.slice(runStart, p);
      }
      if (c === BACKSLASH) {
        if (p + 1 >= end) return undefined;
        const next = text.charCodeAt(p + 1);
        out += text.slice(runStart, p);
        if (next === 0x6e) out += '\n';
        else if (next === BACKSLASH || next === QUOTE) out += text[p + 1];
        else out += text.slice(p, p + 2); // unknown escape: kept as written
        p += 2;
        runStart = p;
        continue;
      }
      p++;
    }
    return undefined;
  }

  /** The run of non-blank characters at the cursor. */
  #token(): string {
    const text = this.#text;
    const start = this.#pos;
    let p = start;
    while (p < this.#end && !this.#isBlank(text.charCodeAt(p))) p++;
    this.#pos = p;
    return text.slice(start, p);
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
