/**
 * The report's charts as pure functions from data to an SVG string: a bar chart, a grouped bar
 * chart, and the two panels of small multiples (columns per worker, lines over time), plus a
 * legend. Text is escaped here; callers pass plain strings.
 *
 * @module
 * @internal
 */
import type { SeriesPoints } from './downsample.js';
import {
  DASH,
  escapeHtml,
  formatInteger,
  formatTickValue,
  isFiniteNumber,
  textWidth,
  truncate,
} from './format.js';
import type { WorkerStroke } from './palette.js';
import { linearScale, logScale, niceStep, type Scale, shouldUseLog } from './scale.js';
import {
  INK,
  LABEL_FONT,
  line,
  num,
  rect,
  SMALL_FONT,
  svgOpen,
  text,
  valueAxisX,
  valueAxisY,
} from './svg.js';

/** @internal Width of a full-width chart, px. */
export const CHART_WIDTH = 1000;

/** @internal Size of one panel of small multiples, px. */
export const PANEL = { width: 340, height: 196 } as const;

/** @internal One bar: a category label and its value (non-finite values draw `—`, no bar). */
export interface Bar {
  readonly label: string;
  readonly value: number;
}

/** @internal A labelled vertical line across a bar chart (the hit-rate ceiling). */
export interface ReferenceLine {
  readonly value: number;
  readonly label: string;
}

/** @internal Input of {@link barChart}. */
export interface BarChartOptions {
  /** What the chart shows, for screen readers. */
  readonly label: string;
  readonly bars: readonly Bar[];
  /** Formats a bar's value label. */
  readonly format: (value: number) => string;
  /** Formats an axis tick. */
  readonly tickFormat: (value: number) => string;
  /** The axis ends at this value (rounded up); default the largest value. */
  readonly max?: number;
  readonly reference?: ReferenceLine;
  readonly axisTitle: string;
  readonly color: string;
  /** Width of the chart, px. @defaultValue {@link CHART_WIDTH} */
  readonly width?: number;
}

/** @internal One series of a grouped bar chart (p50, p99, …). */
export interface BarSeries {
  readonly name: string;
  readonly color: string;
}

/** @internal One group of a grouped bar chart: a label and one value per series. */
export interface BarGroup {
  readonly label: string;
  readonly values: readonly number[];
}

/** @internal Input of {@link groupedBarChart}. */
export interface GroupedBarChartOptions {
  readonly label: string;
  readonly groups: readonly BarGroup[];
  readonly series: readonly BarSeries[];
  readonly format: (value: number) => string;
  readonly tickFormat: (value: number) => string;
  /** `auto` picks a log axis when the largest positive value exceeds 50 × the smallest. */
  readonly scale: 'auto' | 'linear' | 'log';
  readonly axisTitle: string;
  /** Width of the chart, px. @defaultValue {@link CHART_WIDTH} */
  readonly width?: number;
}

/** @internal One legend entry, drawn as a filled box or a line sample. */
export interface LegendItem {
  readonly label: string;
  readonly color: string;
  readonly shape: 'box' | 'line';
  /** An SVG `stroke-dasharray` for a line sample. */
  readonly dash?: string | undefined;
}

/** @internal Input of {@link columnPanel}: one small bar chart over workers. */
export interface ColumnPanelOptions {
  readonly title: string;
  /** Short text right-aligned in the title row. */
  readonly note: string;
  readonly values: readonly number[];
  /** The y axis ends at this value (rounded up), shared by every panel. */
  readonly yMax: number;
  /** A dashed horizontal line (the mean), when finite. */
  readonly reference: number;
  readonly color: (index: number) => string;
}

/** @internal Input of {@link linePanel}: one small line chart, one line per worker. */
export interface LinePanelOptions {
  readonly title: string;
  readonly note: string;
  /** Points with `x` already in axis units. */
  readonly series: readonly { readonly points: SeriesPoints; readonly stroke: WorkerStroke }[];
  /** Axis ends (rounded up), shared by every panel. */
  readonly xMax: number;
  readonly yMax: number;
  readonly xTitle: string;
  /** Thin, translucent lines for large fleets. */
  readonly thin: boolean;
  /** Names of the series a legend beside the panel shows (its `data-series`); none when unnamed. */
  readonly names?: readonly string[];
}

const ROW = 24;
const BAR = 16;

/** @internal Room for the category labels of a chart `chartWidth` px wide, px. */
export function categoryLabelWidth(labels: readonly string[], chartWidth: number): number {
  const widest = labels.reduce((w, l) => Math.max(w, textWidth(l, LABEL_FONT)), 0);
  return Math.min(200, Math.round(chartWidth * 0.34), Math.max(48, widest + 4));
}

/** @internal The `data-series` attribute naming the series a chart plots, one per line. */
export function seriesAttribute(names: readonly string[]): string {
  return names.length === 0 ? '' : `data-series="${escapeHtml(names.join('\n'))}"`;
}

/** @internal Room for the widest of `labels` after a bar, px. */
export function valueLabelWidth(labels: readonly string[]): number {
  return labels.reduce((w, l) => Math.max(w, textWidth(l, SMALL_FONT)), 0) + 8;
}

/** @internal A right-aligned category label, cut to `width` px with the full text as its tooltip. */
export function categoryLabel(x: number, y: number, label: string, width: number): string {
  const shown = truncate(label, width, LABEL_FONT);
  const tip = shown === label ? '' : `<title>${escapeHtml(label)}</title>`;
  return (
    `<text x="${num(x)}" y="${num(y)}" dy="0.35em" text-anchor="end" font-size="${LABEL_FONT}">` +
    `${escapeHtml(shown)}${tip}</text>`
  );
}

/**
 * @internal A horizontal bar chart, one row per bar, value labels at the bar ends (inside the
 * bar when it fits, so they never collide with the reference line), and an optional dashed,
 * labelled reference line.
 */
export function barChart(o: BarChartOptions): string {
  const labels = o.bars.map((b) => (isFiniteNumber(b.value) ? o.format(b.value) : DASH));
  const chartWidth = o.width ?? CHART_WIDTH;
  const labelWidth = categoryLabelWidth(
    o.bars.map((b) => b.label),
    chartWidth,
  );
  const left = labelWidth + 12;
  const right = chartWidth - valueLabelWidth(labels) - 8;
  const top = o.reference === undefined ? 10 : 32;
  const bottom = top + o.bars.length * ROW;
  const height = bottom + 42;
  const finite = o.bars.map((b) => b.value).filter(isFiniteNumber);
  const refValue = o.reference?.value;
  const max = o.max ?? Math.max(0, ...finite, isFiniteNumber(refValue) ? refValue : 0);
  const scale = linearScale(max, left, right, o.tickFormat);

  const parts = [svgOpen(chartWidth, height, o.label), valueAxisX(scale, top, bottom)];
  o.bars.forEach((bar, i) => {
    const y = top + i * ROW + (ROW - BAR) / 2;
    const cy = y + BAR / 2;
    const label = labels[i]!;
    parts.push(categoryLabel(left - 8, cy, bar.label, labelWidth));
    if (!isFiniteNumber(bar.value)) {
      parts.push(text(left + 5, cy, label, `dy="0.35em" fill="${INK.muted}"`));
      return;
    }
    const end = scale.map(bar.value);
    parts.push(rect(left, y, end - left, BAR, o.color, `${bar.label}: ${label}`));
    const inside = end - left >= textWidth(label, SMALL_FONT) + 12;
    parts.push(
      inside
        ? text(end - 5, cy, label, `dy="0.35em" text-anchor="end" fill="#fff" font-weight="600"`)
        : text(end + 5, cy, label, `dy="0.35em"`),
    );
  });
  if (o.reference !== undefined && isFiniteNumber(o.reference.value)) {
    const x = scale.map(o.reference.value);
    parts.push(
      line(
        x,
        top - 8,
        x,
        bottom,
        `stroke="${INK.reference}" stroke-width="1.5" stroke-dasharray="6 4"`,
      ),
    );
    const half = textWidth(o.reference.label, SMALL_FONT) / 2;
    const anchor = x + half > chartWidth - 4 ? 'end' : x - half < 4 ? 'start' : 'middle';
    parts.push(text(x, top - 13, o.reference.label, `text-anchor="${anchor}" font-weight="600"`));
  }
  parts.push(
    text((left + right) / 2, bottom + 34, o.axisTitle, `text-anchor="middle" fill="${INK.muted}"`),
  );
  parts.push('</svg>');
  return parts.join('');
}

function groupedScale(o: GroupedBarChartOptions, left: number, right: number): Scale {
  const values = o.groups.flatMap((g) => g.values).filter(isFiniteNumber);
  const log = o.scale === 'log' || (o.scale === 'auto' && shouldUseLog(values));
  const positive = values.filter((v) => v > 0);
  if (log && positive.length > 0) {
    return logScale(Math.min(...positive), Math.max(...positive), left, right, o.tickFormat);
  }
  return linearScale(Math.max(0, ...values), left, right, o.tickFormat);
}

/**
 * @internal Horizontal bars grouped by category, one bar per series, with a legend above and
 * value labels after each bar. The root carries `data-scale="linear"` or `"log"`; the axis
 * title says `(log scale)` when log.
 */
export function groupedBarChart(o: GroupedBarChartOptions): string {
  const bar = 11;
  const gap = 2;
  const groupHeight = o.series.length * (bar + gap) - gap + 12;
  const labels = o.groups.map((g) => g.values.map((v) => (isFiniteNumber(v) ? o.format(v) : DASH)));
  const chartWidth = o.width ?? CHART_WIDTH;
  const labelWidth = categoryLabelWidth(
    o.groups.map((g) => g.label),
    chartWidth,
  );
  const left = labelWidth + 12;
  const right = chartWidth - valueLabelWidth(labels.flat()) - 8;
  const top = 34;
  const bottom = top + o.groups.length * groupHeight;
  const height = bottom + 42;
  const scale = groupedScale(o, left, right);
  const title = scale.kind === 'log' ? `${o.axisTitle} (log scale)` : o.axisTitle;

  const parts = [
    svgOpen(
      chartWidth,
      height,
      o.label,
      `data-scale="${scale.kind}" ${seriesAttribute(o.series.map((s) => s.name))}`,
    ),
    legendRow(
      o.series.map((s) => ({ label: s.name, color: s.color, shape: 'box' as const })),
      left,
      12,
    ),
    valueAxisX(scale, top, bottom),
  ];
  const origin = scale.map(scale.domain[0]);
  o.groups.forEach((group, g) => {
    const y0 = top + g * groupHeight + 6;
    parts.push(categoryLabel(left - 8, y0 + (groupHeight - 12) / 2, group.label, labelWidth));
    o.series.forEach((series, s) => {
      const y = y0 + s * (bar + gap);
      const value = group.values[s] ?? Number.NaN;
      const label = labels[g]![s] ?? DASH;
      if (!isFiniteNumber(value)) {
        parts.push(text(origin + 5, y + bar / 2, label, `dy="0.35em" fill="${INK.muted}"`));
        return;
      }
      const end = scale.map(value);
      parts.push(
        rect(origin, y, end - origin, bar, series.color, `${group.label} ${series.name}: ${label}`),
      );
      parts.push(text(end + 4, y + bar / 2, label, `dy="0.35em" font-size="10.5"`));
    });
  });
  parts.push(
    text((left + right) / 2, bottom + 34, title, `text-anchor="middle" fill="${INK.muted}"`),
  );
  parts.push('</svg>');
  return parts.join('');
}

function swatch(item: LegendItem, x: number, y: number): string {
  if (item.shape === 'box') return rect(x, y - 5, 12, 10, item.color);
  const dash = item.dash === undefined ? '' : ` stroke-dasharray="${item.dash}"`;
  return line(x, y, x + 18, y, `stroke="${item.color}" stroke-width="2.5"${dash}`);
}

function legendItemWidth(item: LegendItem): number {
  return 22 + textWidth(item.label, SMALL_FONT) + 14;
}

function legendRow(items: readonly LegendItem[], x0: number, y: number): string {
  let x = x0;
  return items
    .map((item) => {
      const part =
        swatch(item, x, y) + text(x + 22, y, item.label, `class="legend-label" dy="0.35em"`);
      x += legendItemWidth(item);
      return part;
    })
    .join('');
}

/**
 * @internal A legend of box or line samples as an HTML list, which wraps to the width of the
 * page: each entry a small SVG swatch and its label (`<span class="legend-label">`).
 */
export function legend(items: readonly LegendItem[]): string {
  const entries = items.map((item) => {
    const sample = item.shape === 'box' ? swatch(item, 3, 7) : swatch(item, 0, 7);
    return (
      `<li><svg class="swatch" width="18" height="14" viewBox="0 0 18 14" aria-hidden="true">` +
      `${sample}</svg><span class="legend-label">${escapeHtml(item.label)}</span></li>`
    );
  });
  return `<ul class="legend" aria-label="Legend">${entries.join('')}</ul>`;
}

function panelTitle(title: string, note: string, left: number): string {
  const noteWidth = textWidth(note, SMALL_FONT);
  const room = PANEL.width - 8 - left - noteWidth - 10;
  return (
    text(
      left,
      15,
      truncate(title, room, LABEL_FONT),
      `font-size="${LABEL_FONT}" font-weight="600"`,
    ) + text(PANEL.width - 8, 15, note, `text-anchor="end" fill="${INK.muted}"`)
  );
}

function axisLeft(scale: Scale): number {
  const widest = scale.ticks.reduce((w, t) => Math.max(w, textWidth(t.label ?? '', SMALL_FONT)), 0);
  return Math.max(26, Math.ceil(widest) + 10);
}

/**
 * @internal One panel of columns, one per worker, on a shared y axis, with a dashed line at
 * `reference`. Workers are labelled one by one up to 16, then at round intervals.
 */
export function columnPanel(o: ColumnPanelOptions): string {
  const top = 28;
  const bottom = PANEL.height - 32;
  const scale = linearScale(o.yMax, bottom, top, formatTickValue, 4);
  const left = axisLeft(scale);
  const right = PANEL.width - 10;
  const n = o.values.length;
  const slot = n > 0 ? (right - left) / n : 0;
  const width = n <= 64 ? slot * 0.78 : slot;

  const parts = [
    svgOpen(PANEL.width, PANEL.height, `${o.title}: ${o.note}`),
    panelTitle(o.title, o.note, left),
  ];
  parts.push(valueAxisY(scale, left, right));
  o.values.forEach((value, i) => {
    if (!isFiniteNumber(value)) return;
    const y = scale.map(value);
    parts.push(
      rect(
        left + i * slot + (slot - width) / 2,
        y,
        width,
        bottom - y,
        o.color(i),
        `worker ${i}: ${formatInteger(value)}`,
      ),
    );
  });
  const step = n <= 16 ? 1 : Math.max(1, Math.round(niceStep(n, 6)));
  for (let i = 0; i < n; i += step) {
    parts.push(
      text(
        left + (i + 0.5) * slot,
        bottom + 13,
        String(i),
        `class="tick" text-anchor="middle" fill="${INK.muted}"`,
      ),
    );
  }
  if (isFiniteNumber(o.reference)) {
    const y = scale.map(o.reference);
    parts.push(line(left, y, right, y, `stroke="${INK.reference}" stroke-dasharray="4 3"`));
  }
  parts.push(
    text((left + right) / 2, bottom + 27, 'worker', `text-anchor="middle" fill="${INK.muted}"`),
  );
  parts.push('</svg>');
  return parts.join('');
}

/**
 * @internal A series as SVG path data: pixel coordinates with one decimal, a new subpath after
 * each gap (`NaN`), and the inner points of flat runs dropped (they draw nothing).
 */
export function pathData(points: SeriesPoints, x: Scale, y: Scale): string {
  let d = '';
  let run: [string, string][] = [];
  const flush = (): void => {
    if (run.length === 0) return;
    d += 'M';
    run.forEach(([px, py], i) => {
      const flat = i > 0 && i < run.length - 1 && run[i - 1]![1] === py && run[i + 1]![1] === py;
      if (!flat) d += `${i === 0 ? '' : ' '}${px},${py}`;
    });
    run = [];
  };
  for (let i = 0; i < points.x.length; i++) {
    const value = points.y[i]!;
    if (Number.isNaN(value)) flush();
    else run.push([num(x.map(points.x[i]!)), num(y.map(value))]);
  }
  flush();
  return d;
}

/**
 * @internal One panel of lines over time, one per worker, on shared x and y axes. Workers keep
 * their stroke (colour and dash) in every panel.
 */
export function linePanel(o: LinePanelOptions): string {
  const top = 28;
  const bottom = PANEL.height - 32;
  const right = PANEL.width - 10;
  const y = linearScale(o.yMax, bottom, top, formatTickValue, 4);
  const left = axisLeft(y);
  const x = linearScale(o.xMax, left, right, formatTickValue, 5);

  const parts = [
    svgOpen(
      PANEL.width,
      PANEL.height,
      `${o.title}: ${o.note}`,
      `data-chart="lines" ${seriesAttribute(o.names ?? [])}`.trim(),
    ),
    panelTitle(o.title, o.note, left),
  ];
  parts.push(valueAxisY(y, left, right));
  for (const tick of x.ticks) {
    parts.push(
      text(
        x.map(tick.value),
        bottom + 13,
        tick.label ?? '',
        `class="tick" text-anchor="middle" fill="${INK.muted}"`,
      ),
    );
  }
  const width = o.thin ? 0.8 : 1.4;
  const opacity = o.thin ? ' stroke-opacity="0.75"' : '';
  parts.push(`<g fill="none" stroke-width="${width}" stroke-linejoin="round"${opacity}>`);
  for (const series of o.series) {
    const d = pathData(series.points, x, y);
    if (d === '') continue;
    const dash =
      series.stroke.dash === undefined ? '' : ` stroke-dasharray="${series.stroke.dash}"`;
    parts.push(`<path d="${d}" stroke="${series.stroke.color}"${dash}/>`);
  }
  parts.push('</g>');
  if (o.series.every((s) => s.points.x.length === 0)) {
    parts.push(
      text(
        (left + right) / 2,
        (top + bottom) / 2,
        'no samples',
        `text-anchor="middle" fill="${INK.muted}"`,
      ),
    );
  }
  parts.push(
    text((left + right) / 2, bottom + 27, o.xTitle, `text-anchor="middle" fill="${INK.muted}"`),
  );
  parts.push('</svg>');
  return parts.join('');
}
