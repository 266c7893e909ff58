/**
 * Text for the HTML report: escaping and number formatting. Every function is pure and ignores
 * the host locale, so a report renders byte for byte the same on every machine.
 *
 * @module
 * @internal
 */

/** @internal What the report shows for a missing or non-finite value. */
export const DASH = '—';

const HTML_ESCAPES: Readonly<Record<string, string>> = {
  '&': '&amp;',
  '<': '&lt;',
  '>': '&gt;',
  '"': '&quot;',
  "'": '&#39;',
};

/** @internal `text` safe for HTML and SVG text content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** @internal Whether `value` is a finite number (`NaN` and ±`Infinity` are not). */
export function isFiniteNumber(value: number | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** @internal Inserts `,` between groups of three digits of a plain decimal string. */
function groupThousands(decimal: string): string {
  const negative = decimal.startsWith('-');
  const unsigned = negative ? decimal.slice(1) : decimal;
  const dot = unsigned.indexOf('.');
  const whole = dot === -1 ? unsigned : unsigned.slice(0, dot);
  const fraction = dot === -1 ? '' : unsigned.slice(dot);
  const grouped = whole.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const text = grouped + fraction;
  return negative && /[1-9]/.test(text) ? `-${text}` : text;
}

/** @internal `value` with `digits` decimals and thousands separators; `—` when not finite. */
export function formatFixed(value: number, digits: number): string {
  if (!Number.isFinite(value)) return DASH;
  return groupThousands(value.toFixed(digits));
}

/** @internal A count: rounded, with thousands separators (`12,345`); `—` when not finite. */
export function formatInteger(value: number): string {
  return formatFixed(Math.round(value), 0);
}

/**
 * @internal A measurement with about three significant figures: two decimals below 10, one
 * below 100, none from 100 on (`1.24`, `57.3`, `12,345`); exactly zero is `0`; `—` when not
 * finite.
 */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return DASH;
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  return formatFixed(value, magnitude >= 100 ? 0 : magnitude >= 10 ? 1 : 2);
}

/** @internal A fraction as a percentage with one decimal (`0.862` → `86.2%`); `—` when not finite. */
export function formatPercent(fraction: number): string {
  if (!Number.isFinite(fraction)) return DASH;
  return `${formatFixed(fraction * 100, 1)}%`;
}

/** @internal A duration in ms, in ms below one second and in s from there (`31.4 ms`, `9.01 s`). */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return DASH;
  return Math.abs(ms) < 1000 ? `${formatNumber(ms)} ms` : `${formatNumber(ms / 1000)} s`;
}

/**
 * @internal A round axis value without float noise or padding zeros (`0.30000000000000004` →
 * `0.3`, `2500` → `2,500`).
 */
export function formatTickValue(value: number): string {
  if (!Number.isFinite(value)) return DASH;
  const clean = Number(value.toPrecision(10));
  const text = Math.abs(clean) < 1e-6 ? '0' : String(clean);
  return text.includes('e') ? text : groupThousands(text);
}

/** @internal An axis tick for a duration in ms (`250 ms`, `1.5 s`). */
export function formatDurationTick(ms: number): string {
  return Math.abs(ms) < 1000 ? `${formatTickValue(ms)} ms` : `${formatTickValue(ms / 1000)} s`;
}

/** @internal An axis tick for a fraction (`0.2` → `20%`). */
export function formatPercentTick(fraction: number): string {
  return `${formatTickValue(fraction * 100)}%`;
}

/** @internal A cache size in tokens; `Infinity` reads `unbounded`. */
export function formatCacheTokens(tokens: number): string {
  if (tokens === Number.POSITIVE_INFINITY) return 'unbounded';
  return Number.isFinite(tokens) ? `${formatInteger(tokens)} tokens` : DASH;
}

/**
 * @internal The estimated width of `text` in px at `fontSize`, for layout without a renderer.
 * Generous (0.6 em per character) so labels rather get too much room than overlap.
 */
export function textWidth(text: string, fontSize: number): number {
  return [...text].length * fontSize * 0.6;
}

/**
 * @internal `text` cut with `…` so that its estimated width stays within `maxWidth` px at
 * `fontSize`; unchanged when it already fits.
 */
export function truncate(text: string, maxWidth: number, fontSize: number): string {
  const chars = [...text];
  const fit = Math.max(1, Math.floor(maxWidth / (fontSize * 0.6)));
  return chars.length <= fit ? text : `${chars.slice(0, Math.max(1, fit - 1)).join('')}…`;
}
