/**
 * The report's figures, each a `<figure>` built from a {@link Comparison}: hit rate, time to
 * first token (percentiles and distribution), requests per worker, in-flight requests over
 * time, and waiting against running requests over time. Scales that panels share are computed
 * here, across every run.
 *
 * @module
 * @internal
 */
import type { Comparison, PolicyRun } from '../result.js';
import { cdfChart } from './cdf-chart.js';
import { downsampleMax } from './downsample.js';
import {
  escapeHtml,
  formatDuration,
  formatDurationTick,
  formatFixed,
  formatInteger,
  formatPercent,
  formatPercentTick,
  isFiniteNumber,
} from './format.js';
import { categoryColor, PALETTE, workerStroke } from './palette.js';
import { LOG_SCALE_RATIO, shouldUseLog } from './scale.js';
import { barChart, columnPanel, groupedBarChart, legend, linePanel } from './svg-charts.js';

/** @internal Width of the narrow rendering of a full-width chart, shown on small screens, px. */
export const NARROW_WIDTH = 360;

/**
 * @internal A full-width chart drawn twice, at `CHART_WIDTH` and at {@link NARROW_WIDTH}; the
 * stylesheet shows one of them by screen width (the wide one in print), so chart text stays at
 * its size on a phone instead of shrinking with the SVG.
 */
export function responsive(draw: (width: number | undefined) => string): string {
  return `<div class="wide">${draw(undefined)}</div><div class="narrow">${draw(NARROW_WIDTH)}</div>`;
}

/** @internal Most points drawn per line: about one per pixel of a panel's plot. */
export const MAX_POINTS_PER_LINE = 300;

/**
 * @internal Most points drawn per panel (over all its lines), about 180 KB of path data: a
 * large fleet gets fewer points per line so the page stays small.
 */
export const MAX_POINTS_PER_PANEL = 16_000;

/** @internal Points per line for a fleet of `workers`: 300 up to 53 workers, then fewer (≥ 60). */
export function pointsPerLine(workers: number): number {
  const share = Math.floor(MAX_POINTS_PER_PANEL / Math.max(1, workers));
  return Math.max(60, Math.min(MAX_POINTS_PER_LINE, share));
}

/** @internal Largest fleet that still gets a colour per worker and a per-worker legend. */
export const MAX_LEGEND_WORKERS = 16;

function figure(body: string, caption: string): string {
  return `<figure>${body}<figcaption>${caption}</figcaption></figure>`;
}

function largest(values: Iterable<number>): number {
  let max = 0;
  for (const v of values) if (Number.isFinite(v) && v > max) max = v;
  return max;
}

/** @internal Bars of each policy's hit rate on a 0 – 100 % axis, with the ceiling dashed. */
export function hitRateFigure(c: Comparison): string {
  const hitRates = c.runs.map((r) => r.hitRate);
  const svg = responsive((width) =>
    barChart({
      label: 'Cache hit rate by policy',
      bars: c.runs.map((r) => ({ label: r.policy, value: r.hitRate })),
      format: formatPercent,
      tickFormat: formatPercentTick,
      max: Math.max(1, largest(hitRates), isFiniteNumber(c.ceiling) ? c.ceiling : 0),
      reference: { value: c.ceiling, label: `ceiling ${formatPercent(c.ceiling)}` },
      axisTitle: 'prompt tokens served from cache',
      color: PALETTE[0]!,
      ...(width === undefined ? {} : { width }),
    }),
  );
  const ceiling = isFiniteNumber(c.ceiling)
    ? `The dashed line is the ceiling, ${formatPercent(c.ceiling)}: the hit rate of one infinite cache shared by the whole fleet.`
    : 'The ceiling is unknown for this run.';
  return figure(svg, `Token-weighted prefix-cache hit rate. ${ceiling}`);
}

/** @internal p50 and p99 time to first token per policy; log axis when the range is wide. */
export function ttftFigure(c: Comparison): string {
  const groups = c.runs.map((r) => ({ label: r.policy, values: [r.ttftMs.p50, r.ttftMs.p99] }));
  const svg = responsive((width) =>
    groupedBarChart({
      label: 'Time to first token, p50 and p99, by policy',
      groups,
      series: [
        { name: 'p50', color: categoryColor(0) },
        { name: 'p99', color: categoryColor(1) },
      ],
      format: formatDuration,
      tickFormat: formatDurationTick,
      scale: 'auto',
      axisTitle: 'time to first token',
      ...(width === undefined ? {} : { width }),
    }),
  );
  const log = shouldUseLog(groups.flatMap((g) => g.values))
    ? ` The axis is logarithmic because the values span more than ${LOG_SCALE_RATIO}×.`
    : '';
  return figure(svg, `From arrival to the end of prefill, in simulated time.${log}`);
}

function meanOf(values: readonly number[]): number {
  const finite = values.filter(isFiniteNumber);
  return finite.length === 0 ? Number.NaN : finite.reduce((a, b) => a + b, 0) / finite.length;
}

function workerColor(workers: number): (index: number) => string {
  return workers <= MAX_LEGEND_WORKERS ? (i) => workerStroke(i).color : () => PALETTE[0]!;
}

/** @internal One column panel per policy: requests routed to each worker, on a shared axis. */
export function perWorkerFigure(c: Comparison): string {
  const yMax = largest(c.runs.flatMap((r) => r.load.perWorker));
  const workers = Math.max(0, ...c.runs.map((r) => r.load.perWorker.length));
  const color = workerColor(workers);
  const panels = c.runs.map((run) =>
    columnPanel({
      title: run.policy,
      note: `max/mean ${formatFixed(run.load.maxOverMean, 2)}`,
      values: run.load.perWorker,
      yMax,
      reference: meanOf(run.load.perWorker),
      color,
    }),
  );
  return figure(
    `<div class="multiples">${panels.join('')}</div>`,
    'Requests routed to each worker; the dashed line is the mean, where a perfectly even policy ' +
      'would put every worker. All panels share one y axis.',
  );
}

function samplesOf(run: PolicyRun): number {
  return Math.max(0, ...run.timeline.inFlight.map((w) => w.length));
}

function workerLegend(workers: number): string {
  if (workers > MAX_LEGEND_WORKERS) {
    return (
      `<p class="note">${formatInteger(workers)} workers, one thin line each; no per-worker legend ` +
      `above ${MAX_LEGEND_WORKERS} workers.</p>`
    );
  }
  const items = Array.from({ length: workers }, (_, i) => ({
    label: `worker ${i}`,
    shape: 'line' as const,
    ...workerStroke(i),
  }));
  return items.length === 0 ? '' : legend(items);
}

/**
 * @internal One line panel per policy: requests in flight on each worker over simulated time,
 * each line cut to {@link pointsPerLine} points (largest value per bucket), on axes shared by
 * every panel.
 */
export function inFlightFigure(c: Comparison): string {
  const timed = c.runs.every(
    (r) => isFiniteNumber(r.timeline.intervalMs) && r.timeline.intervalMs > 0,
  );
  const unit = (run: PolicyRun): number => (timed ? run.timeline.intervalMs / 1000 : 1);
  const xMax = largest(c.runs.map((r) => Math.max(0, samplesOf(r) - 1) * unit(r)));
  const yMax = largest(c.runs.flatMap((r) => r.timeline.inFlight.map((w) => largest(w))));
  const workers = Math.max(0, ...c.runs.map((r) => r.timeline.inFlight.length));
  const longest = Math.max(0, ...c.runs.map(samplesOf));
  const limit = pointsPerLine(workers);

  const panels = c.runs.map((run) => {
    const step = unit(run);
    const series = run.timeline.inFlight.map((samples, worker) => {
      const points = downsampleMax(samples, limit);
      return {
        points: { x: points.x.map((x) => x * step), y: points.y },
        stroke: workerStroke(worker),
      };
    });
    const peak = largest(run.timeline.inFlight.map((w) => largest(w)));
    return linePanel({
      title: run.policy,
      note: `peak ${formatInteger(peak)}`,
      series,
      xMax,
      yMax,
      xTitle: timed ? 'simulated time (s)' : 'sample',
      thin: workers > MAX_LEGEND_WORKERS,
      names: workers > MAX_LEGEND_WORKERS ? [] : run.timeline.inFlight.map((_, w) => `worker ${w}`),
    });
  });
  const interval = c.runs[0]?.timeline.intervalMs ?? Number.NaN;
  const sampling = timed
    ? `, sampled every ${escapeHtml(formatDuration(interval))} of simulated time`
    : '';
  const bucket = Math.ceil(longest / limit);
  const reduced =
    bucket > 1 ? `; each point is the largest of up to ${formatInteger(bucket)} samples` : '';
  return figure(
    `${workerLegend(workers)}<div class="multiples">${panels.join('')}</div>`,
    `Requests waiting or running on each worker${sampling}${reduced}. All panels share both axes.`,
  );
}

/**
 * @internal The distribution of time to first token: one cumulative line per policy through
 * its percentiles ({@link PolicyRun.ttftQuantilesMs}), log x axis when the values span more
 * than {@link LOG_SCALE_RATIO}×, with a legend naming each policy.
 */
export function ttftDistributionFigure(c: Comparison): string {
  const series = c.runs.map((r, i) => ({
    name: r.policy,
    color: categoryColor(i),
    quantiles: r.ttftQuantilesMs,
  }));
  const svg = responsive((width) =>
    cdfChart({
      label: 'Distribution of time to first token by policy',
      series,
      tickFormat: formatDurationTick,
      axisTitle: 'time to first token',
      scale: 'auto',
      width: width ?? 1000,
      height: width === undefined ? 300 : 260,
    }),
  );
  const items = series.map((s) => ({ label: s.name, color: s.color, shape: 'line' as const }));
  const log = shouldUseLog(series.flatMap((s) => s.quantiles))
    ? ` The time axis is logarithmic because the values span more than ${LOG_SCALE_RATIO}×.`
    : '';
  return figure(
    `${legend(items)}${svg}`,
    'The share of requests whose first token came within a given time, from arrival to the end ' +
      `of prefill; further left is faster, and the top of each line is the slowest request.${log}`,
  );
}

/** Sample-wise sum over workers of `series[worker][sample]`. */
function fleetSum(series: readonly (readonly number[])[]): number[] {
  const length = Math.max(0, ...series.map((s) => s.length));
  const sum = new Array<number>(length).fill(0);
  for (const s of series) for (let i = 0; i < s.length; i++) sum[i]! += s[i]!;
  return sum;
}

const QUEUE_STROKES = {
  running: { color: categoryColor(0), dash: undefined },
  waiting: { color: categoryColor(2), dash: '5 3' },
} as const;

/**
 * @internal One line panel per policy: requests running (in a batch) and waiting (queued on a
 * worker) summed over the fleet, over simulated time, each line cut to {@link
 * MAX_POINTS_PER_LINE} points (largest value per bucket), on axes shared by every panel. Sums
 * read the same at 8 and at 64 workers, where one line per worker would not.
 */
export function queueFigure(c: Comparison): string {
  const timed = c.runs.every(
    (r) => isFiniteNumber(r.timeline.intervalMs) && r.timeline.intervalMs > 0,
  );
  const sums = c.runs.map((r) => ({
    running: fleetSum(r.timeline.running),
    waiting: fleetSum(r.timeline.waiting),
  }));
  const unit = (run: PolicyRun): number => (timed ? run.timeline.intervalMs / 1000 : 1);
  const xMax = largest(c.runs.map((r, i) => Math.max(0, sums[i]!.running.length - 1) * unit(r)));
  const yMax = largest(sums.flatMap((s) => [largest(s.running), largest(s.waiting)]));
  const names = ['running', 'waiting'] as const;
  const panels = c.runs.map((run, i) => {
    const step = unit(run);
    const series = names.map((name) => {
      const points = downsampleMax(sums[i]![name], MAX_POINTS_PER_LINE);
      return {
        points: { x: points.x.map((x) => x * step), y: points.y },
        stroke: QUEUE_STROKES[name],
      };
    });
    return linePanel({
      title: run.policy,
      note: `peak waiting ${formatInteger(largest(sums[i]!.waiting))}`,
      series,
      xMax,
      yMax,
      xTitle: timed ? 'simulated time (s)' : 'sample',
      thin: false,
      names,
    });
  });
  const items = names.map((name) => ({
    label: name,
    shape: 'line' as const,
    ...QUEUE_STROKES[name],
  }));
  return figure(
    `${legend(items)}<div class="multiples">${panels.join('')}</div>`,
    'Requests in a batch (running) and queued for one (waiting), summed over all workers. ' +
      'Waiting requests mean the fleet, or the workers a policy favours, are saturated. ' +
      'All panels share both axes.',
  );
}
