/**
 * Hand-written scanners for the numbers of the Prometheus text format: a sample value and a
 * timestamp, read in place from `text[start … end)`. Each looks at every character of its range
 * at most once and never backtracks, so a hostile token costs time linear in its length (the
 * regular expression they replace was quadratic on a long digit run followed by a bad
 * character).
 *
 * @module
 * @internal
 */

const PLUS = 0x2b;
const MINUS = 0x2d;
const DOT = 0x2e;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
const LOWER_E = 0x65;
const UPPER_E = 0x45;

/** Longest special value, `+infinity`. */
const MAX_SPECIAL_LENGTH = 9;

function isDigit(c: number): boolean {
  return c >= DIGIT_0 && c <= DIGIT_9;
}

/** The index after the run of ASCII digits starting at `p` (at most `end`). */
function skipDigits(text: string, p: number, end: number): number {
  while (p < end && isDigit(text.charCodeAt(p))) p++;
  return p;
}

/**
 * Whether `text[start … end)` is a decimal float of the text format:
 * `[+-]?(digits[.digits?] | .digits)([eE][+-]?digits)?`, nothing before or after.
 * Cost: one pass over the range.
 */
function isDecimal(text: string, start: number, end: number): boolean {
  let p = start;
  if (p < end) {
    const c = text.charCodeAt(p);
    if (c === PLUS || c === MINUS) p++;
  }
  const intEnd = skipDigits(text, p, end);
  const hasInt = intEnd > p;
  p = intEnd;
  let hasFraction = false;
  if (p < end && text.charCodeAt(p) === DOT) {
    const fractionEnd = skipDigits(text, p + 1, end);
    hasFraction = fractionEnd > p + 1;
    p = fractionEnd;
  }
  if (!hasInt && !hasFraction) return false;
  if (p < end) {
    const c = text.charCodeAt(p);
    if (c !== LOWER_E && c !== UPPER_E) return false;
    p++;
    if (p < end) {
      const sign = text.charCodeAt(p);
      if (sign === PLUS || sign === MINUS) p++;
    }
    const expEnd = skipDigits(text, p, end);
    if (expEnd === p) return false;
    p = expEnd;
  }
  return p === end;
}

/**
 * Whether `text[start … end)` is an integer timestamp: `-?digits`, nothing else.
 * Cost: one pass over the range.
 */
function isInteger(text: string, start: number, end: number): boolean {
  let p = start;
  if (p < end && text.charCodeAt(p) === MINUS) p++;
  return p < end && skipDigits(text, p, end) === end;
}

/**
 * @internal A sample value: a decimal float, or (any case, optional sign) `NaN`, `Inf`,
 * `Infinity`, as Go's `strconv.ParseFloat` reads them. `undefined` for anything else (`Number`
 * alone would read `''` as 0 and `0x10` as 16). The caller bounds `end - start`; the token is
 * sliced only once it is known to be valid, and special values only when at most 9 characters.
 *
 * Cost: O(end − start), no backtracking.
 */
export function readValue(text: string, start: number, end: number): number | undefined {
  if (isDecimal(text, start, end)) return Number(text.slice(start, end));
  if (end - start > MAX_SPECIAL_LENGTH || end === start) return undefined;
  const lower = text.slice(start, end).toLowerCase();
  const first = lower.charCodeAt(0);
  const sign = first === MINUS ? -1 : 1;
  const body = first === PLUS || first === MINUS ? lower.slice(1) : lower;
  if (body === 'nan') return Number.NaN;
  if (body === 'inf' || body === 'infinity') return sign * Number.POSITIVE_INFINITY;
  return undefined;
}

/**
 * @internal An integer timestamp (ms), or `undefined` when `text[start … end)` is not one.
 * Cost: O(end − start).
 */
export function readTimestamp(text: string, start: number, end: number): number | undefined {
  return isInteger(text, start, end) ? Number(text.slice(start, end)) : undefined;
}
