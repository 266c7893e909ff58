/**
 * `stackedBarChart`: horizontal bars cut into segments, one per series (a request's outcomes:
 * served at once, after a wait, turned away for each reason), so each bar reads as a whole and
 * its parts at once.
 *
 * @module
 * @internal
 */
import { isFiniteNumber, textWidth } from './format.js';
import { linearScale } from './scale.js';
import { INK, rect, SMALL_FONT, svgOpen, text, valueAxisX } from './svg.js';
import {
  CHART_WIDTH,
  categoryLabel,
  categoryLabelWidth,
  seriesAttribute,
  valueLabelWidth,
} from './svg-charts.js';

/** @internal One segment kind of a stacked bar. */
export interface StackSeries {
  readonly name: string;
  readonly color: string;
  /** Colour of a value label drawn inside a segment of this series, readable on `color`. */
  readonly ink: string;
}

/** @internal One bar: its label, a value per series, and the text after it. */
export interface StackRow {
  readonly label: string;
  /** A segment's length per series; a non-finite or non-positive one draws no segment. */
  readonly values: readonly number[];
  /** A segment's label per series: drawn inside it when it fits, and in its tooltip. */
  readonly labels: readonly string[];
  readonly total: string;
}

/** @internal Input of {@link stackedBarChart}. */
export interface StackedBarChartOptions {
  /** What the chart shows, for screen readers. */
  readonly label: string;
  readonly rows: readonly StackRow[];
  readonly series: readonly StackSeries[];
  readonly tickFormat: (value: number) => string;
  /** The axis ends at this value (rounded up); default the longest bar. */
  readonly max?: number;
  readonly axisTitle: string;
  /** Width of the chart, px. @defaultValue {@link CHART_WIDTH} */
  readonly width?: number;
}

const ROW = 26;
const BAR = 18;

/**
 * @internal A chart of stacked horizontal bars on one linear axis from 0 to `max` (default the
 * longest bar): each segment a `<rect>` whose tooltip names the row, the series and the
 * segment's label; that label inside it when it fits; each row's `total` text after its bar. The root names its series
 * in `data-series` for the legend the caller draws beside it. Cost: O(rows × series).
 */
export function stackedBarChart(o: StackedBarChartOptions): string {
  const chartWidth = o.width ?? CHART_WIDTH;
  const labelWidth = categoryLabelWidth(
    o.rows.map((r) => r.label),
    chartWidth,
  );
  const left = labelWidth + 12;
  const right = chartWidth - valueLabelWidth(o.rows.map((r) => r.total)) - 8;
  const top = 10;
  const bottom = top + o.rows.length * ROW;
  const sums = o.rows.map((r) => r.values.reduce((a, v) => a + segment(v), 0));
  const scale = linearScale(o.max ?? Math.max(0, ...sums), left, right, o.tickFormat);
  const parts = [
    svgOpen(chartWidth, bottom + 42, o.label, seriesAttribute(o.series.map((s) => s.name))),
    valueAxisX(scale, top, bottom),
  ];
  o.rows.forEach((row, i) => {
    const y = top + i * ROW + (ROW - BAR) / 2;
    const cy = y + BAR / 2;
    parts.push(categoryLabel(left - 8, cy, row.label, labelWidth));
    let sum = 0;
    o.series.forEach((series, s) => {
      const value = segment(row.values[s] ?? Number.NaN);
      if (value === 0) return;
      const x0 = scale.map(sum);
      const x1 = scale.map((sum += value));
      const label = row.labels[s] ?? '';
      parts.push(rect(x0, y, x1 - x0, BAR, series.color, `${row.label} ${series.name}: ${label}`));
      if (x1 - x0 >= textWidth(label, SMALL_FONT) + 8) {
        parts.push(
          text((x0 + x1) / 2, cy, label, `dy="0.35em" text-anchor="middle" fill="${series.ink}"`),
        );
      }
    });
    parts.push(text(scale.map(sum) + 5, cy, row.total, 'dy="0.35em"'));
  });
  parts.push(
    text((left + right) / 2, bottom + 34, o.axisTitle, `text-anchor="middle" fill="${INK.muted}"`),
  );
  parts.push('</svg>');
  return parts.join('');
}

/** A value as a segment's length: 0 for one that draws nothing (non-finite or not positive). */
function segment(value: number): number {
  return isFiniteNumber(value) && value > 0 ? value : 0;
}
