/**
 * SVG building blocks shared by the charts: coordinates, text, axes and the root element. The
 * root carries its own font and colours, so a chart reads the same pasted anywhere; it omits
 * `xmlns`, which inline SVG in HTML5 does not need.
 *
 * @module
 * @internal
 */
import { escapeHtml } from './format.js';
import type { Scale } from './scale.js';

/** @internal Colours of text, grid and axes. */
export const INK = {
  text: '#1f2328',
  muted: '#57606a',
  axis: '#8c959f',
  grid: '#e3e6ea',
  minorGrid: '#f0f2f4',
  reference: '#24292f',
} as const;

/** @internal Font size of axis ticks and value labels, px. */
export const SMALL_FONT = 11;

/** @internal Font size of category labels and panel titles, px. */
export const LABEL_FONT = 12;

const FONT_FAMILY = "system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";

/** @internal A coordinate with at most one decimal and no `-0` (`12.34` → `12.3`). */
export function num(value: number): string {
  const rounded = Math.round(value * 10) / 10;
  return rounded === 0 ? '0' : String(rounded);
}

/**
 * @internal The opening `<svg>` tag of a chart `width × height` px, described by `label` for
 * screen readers. `attributes` is appended as given (already escaped).
 */
export function svgOpen(width: number, height: number, label: string, attributes = ''): string {
  const w = num(width);
  const h = num(height);
  return (
    `<svg class="chart" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" role="img" ` +
    `aria-label="${escapeHtml(label)}" font-family="${FONT_FAMILY}" font-size="${SMALL_FONT}" ` +
    `fill="${INK.text}"${attributes === '' ? '' : ` ${attributes}`}>`
  );
}

/** @internal A `<text>` element; `content` is escaped, `attributes` appended as given. */
export function text(x: number, y: number, content: string, attributes = ''): string {
  const extra = attributes === '' ? '' : ` ${attributes}`;
  return `<text x="${num(x)}" y="${num(y)}"${extra}>${escapeHtml(content)}</text>`;
}

/** @internal A `<line>` element with `attributes` appended as given. */
export function line(x1: number, y1: number, x2: number, y2: number, attributes: string): string {
  return `<line x1="${num(x1)}" y1="${num(y1)}" x2="${num(x2)}" y2="${num(y2)}" ${attributes}/>`;
}

/** @internal A `<rect>` element, with an optional escaped tooltip. */
export function rect(
  x: number,
  y: number,
  width: number,
  height: number,
  fill: string,
  tooltip?: string,
): string {
  const open = `<rect x="${num(x)}" y="${num(y)}" width="${num(Math.max(0, width))}" height="${num(Math.max(0, height))}" fill="${fill}"`;
  return tooltip === undefined
    ? `${open}/>`
    : `${open}><title>${escapeHtml(tooltip)}</title></rect>`;
}

/** @internal The class of every tick label (`<text class="tick">`), which tests look for. */
export const TICK_CLASS = 'tick';

/**
 * @internal Grid lines and tick labels of a horizontal value axis: vertical lines from `top` to
 * `bottom` and labels centred under `bottom`, plus the axis line itself.
 */
export function valueAxisX(scale: Scale, top: number, bottom: number): string {
  const parts: string[] = [];
  for (const tick of scale.ticks) {
    const x = scale.map(tick.value);
    const stroke = tick.label === undefined ? INK.minorGrid : INK.grid;
    parts.push(line(x, top, x, bottom, `stroke="${stroke}"`));
  }
  for (const tick of scale.ticks) {
    if (tick.label === undefined) continue;
    const x = scale.map(tick.value);
    parts.push(
      text(x, bottom + 15, tick.label, `class="tick" text-anchor="middle" fill="${INK.muted}"`),
    );
  }
  const [low, high] = scale.domain;
  parts.push(line(scale.map(low), bottom, scale.map(high), bottom, `stroke="${INK.axis}"`));
  return parts.join('');
}

/**
 * @internal Grid lines and tick labels of a vertical value axis: horizontal lines from `left` to
 * `right` and labels right-aligned before `left`, plus the baseline.
 */
export function valueAxisY(scale: Scale, left: number, right: number): string {
  const parts: string[] = [];
  for (const tick of scale.ticks) {
    const y = scale.map(tick.value);
    parts.push(line(left, y, right, y, `stroke="${INK.grid}"`));
    if (tick.label !== undefined) {
      parts.push(
        text(
          left - 5,
          y,
          tick.label,
          `class="tick" dy="0.35em" text-anchor="end" fill="${INK.muted}"`,
        ),
      );
    }
  }
  const base = scale.map(scale.domain[0]);
  parts.push(line(left, base, right, base, `stroke="${INK.axis}"`));
  return parts.join('');
}
