/**
 * A cumulative distribution chart: one line per series through its quantiles, share of
 * requests on the y axis, the measured value on a linear or log x axis.
 *
 * @module
 * @internal
 */
import { escapeHtml, formatPercentTick } from './format.js';
import { linearScale, logScale, type Scale, shouldUseLog } from './scale.js';
import { INK, svgOpen, text, valueAxisX, valueAxisY } from './svg.js';
import { pathData, seriesAttribute } from './svg-charts.js';

/** @internal One line of a {@link cdfChart}. */
export interface CdfSeries {
  readonly name: string;
  readonly color: string;
  /** Quantiles at even steps, smallest first (entry `i` of `n + 1` is the `i / n` quantile). */
  readonly quantiles: readonly number[];
}

/** @internal Input of {@link cdfChart}. */
export interface CdfChartOptions {
  /** What the chart shows, for screen readers. */
  readonly label: string;
  readonly series: readonly CdfSeries[];
  readonly tickFormat: (value: number) => string;
  readonly axisTitle: string;
  /** `auto`: log when the positive values span more than 50 ×. */
  readonly scale: 'auto' | 'linear' | 'log';
  readonly width: number;
  readonly height: number;
}

function xScale(o: CdfChartOptions, left: number, right: number): Scale {
  const values = o.series.flatMap((s) => s.quantiles).filter(Number.isFinite);
  const positive = values.filter((v) => v > 0);
  const log = o.scale === 'log' || (o.scale === 'auto' && shouldUseLog(values));
  if (log && positive.length > 0) {
    return logScale(Math.min(...positive), Math.max(...positive), left, right, o.tickFormat);
  }
  return linearScale(Math.max(0, ...values), left, right, o.tickFormat, 5);
}

/**
 * @internal The chart as one `<svg>` (its legend is the caller's, named by `data-series`):
 * each series drawn as a line through `(quantile i, i / n)`, a series without quantiles drawn
 * not at all. The root carries `data-scale` (`linear` or `log`); the axis title says
 * `(log scale)` when log. Cost: O(series × quantiles).
 */
export function cdfChart(o: CdfChartOptions): string {
  const top = 12;
  const bottom = o.height - 40;
  const left = 44;
  const right = o.width - 28;
  const x = xScale(o, left, right);
  const y = linearScale(1, bottom, top, formatPercentTick, 4);
  const title = x.kind === 'log' ? `${o.axisTitle} (log scale)` : o.axisTitle;
  const parts = [
    svgOpen(
      o.width,
      o.height,
      o.label,
      `data-chart="lines" data-scale="${x.kind}" ${seriesAttribute(o.series.map((s) => s.name))}`,
    ),
    valueAxisY(y, left, right),
    valueAxisX(x, top, bottom),
    `<g fill="none" stroke-width="1.6" stroke-linejoin="round">`,
  ];
  for (const s of o.series) {
    const n = s.quantiles.length - 1;
    if (n < 1) continue;
    const d = pathData({ x: s.quantiles, y: s.quantiles.map((_, i) => i / n) }, x, y);
    if (d !== '') {
      parts.push(`<path d="${d}" stroke="${s.color}"><title>${escapeHtml(s.name)}</title></path>`);
    }
  }
  parts.push('</g>');
  parts.push(
    text((left + right) / 2, bottom + 32, title, `text-anchor="middle" fill="${INK.muted}"`),
  );
  parts.push('</svg>');
  return parts.join('');
}
