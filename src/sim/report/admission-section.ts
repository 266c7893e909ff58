/**
 * The report's "Admission" section, for a comparison run with admission control
 * (`PolicyRun.admission`): a paragraph on what admission did, the requests of each policy by
 * outcome, the outcome table, time to first token by priority band, and the tenants' shares.
 *
 * @module
 * @internal
 */
import type { AdmissionRun, Comparison } from '../result.js';
import {
  type AdmittedRun,
  admittedRuns,
  bandName,
  bandP99,
  outcomeTable,
  priorityBands,
  tenantTable,
} from './admission-tables.js';
import { responsive } from './figures.js';
import {
  escapeHtml,
  formatDuration,
  formatDurationTick,
  formatInteger,
  formatNumber,
  formatPercent,
  formatPercentTick,
  isFiniteNumber,
} from './format.js';
import { categoryColor, PALETTE } from './palette.js';
import { LOG_SCALE_RATIO, shouldUseLog } from './scale.js';
import { stackedBarChart } from './stacked-bar-chart.js';
import { INK } from './svg.js';
import { groupedBarChart, legend } from './svg-charts.js';

/** @internal Terms the glossary adds when the comparison has admission figures. */
export const ADMISSION_METRICS: readonly (readonly [string, string])[] = [
  [
    'Served, turned away',
    'With admission: every request is served (it reached a worker, at once or after waiting in a router’s queue) or turned away — shed (a priority below the threshold while every worker is full), the queue full, or timed out (its wait passed the longest allowed). TTFT then counts the served requests, from their arrival at the router.',
  ],
  [
    'Served while saturated',
    'A tenant’s share of the prompt tokens served by requests that left a router’s queue, against its share of the prompt tokens sent (offered).',
  ],
  [
    'Of capacity',
    'Served requests per second over the fleet’s estimated capacity (requests/s at the ceiling hit rate).',
  ],
];

/** The outcomes of a request, in the order a bar stacks them. */
const OUTCOMES: readonly {
  readonly name: string;
  readonly color: string;
  readonly ink: string;
  readonly count: (a: AdmissionRun) => number;
}[] = [
  {
    name: 'served at once',
    color: PALETTE[0]!,
    ink: '#fff',
    count: (a) => a.served - a.servedAfterWait,
  },
  { name: 'served after a wait', color: '#a0cbe8', ink: INK.text, count: (a) => a.servedAfterWait },
  { name: 'shed', color: categoryColor(1), ink: INK.text, count: (a) => a.rejected.shed },
  {
    name: 'queue full',
    color: categoryColor(5),
    ink: INK.text,
    count: (a) => a.rejected.queue_full,
  },
  { name: 'timed out', color: categoryColor(2), ink: '#fff', count: (a) => a.rejected.timeout },
];

function rejected(a: AdmissionRun): number {
  return a.rejected.shed + a.rejected.queue_full + a.rejected.timeout;
}

/** `x`, or `x to y` when the values differ, each formatted; `—` when none is finite. */
function range(values: readonly number[], format: (v: number) => string): string {
  const finite = values.filter(isFiniteNumber);
  if (finite.length === 0) return '—';
  const low = Math.min(...finite);
  const high = Math.max(...finite);
  return format(low) === format(high) ? format(low) : `${format(low)} to ${format(high)}`;
}

/** A range of counts, `none` when every one is 0. */
function counts(values: readonly number[]): string {
  const text = range(values, formatInteger);
  return text === '0' ? 'none' : text;
}

/**
 * @internal The admission flags of a recorded command line (`--admission-…`, with the value
 * that follows when it is a separate word), at most 16, each at most 80 characters.
 */
export function admissionFlags(argv: readonly string[]): string[] {
  const flags: string[] = [];
  for (let i = 0; i < argv.length && flags.length < 16; i++) {
    const word = argv[i]!;
    if (!word.startsWith('--admission-')) continue;
    const next = argv[i + 1];
    const flag =
      word.includes('=') || next === undefined || next.startsWith('-') ? word : `${word} ${next}`;
    if (flag !== word) i++;
    flags.push(flag.length > 80 ? `${flag.slice(0, 79)}…` : flag);
  }
  return flags;
}

/**
 * What limits were in force, from the recorded command line, as a sentence and a space; `''`
 * when no command line was recorded.
 */
function limits(c: Comparison): string {
  if (c.run === undefined) return '';
  const flags = admissionFlags(c.run.argv);
  if (flags.length === 0) return 'Limits in force: the router’s default limits. ';
  const listed = flags.map((f) => `<code>${escapeHtml(f)}</code>`).join(', ');
  return `Limits in force, from the command line: ${listed}; the others at the router’s defaults. `;
}

/** What admission did to the requests of `runs`, in one or two sentences. */
function outcomes(runs: readonly AdmittedRun[]): string {
  const a = runs.map((r) => r.admission);
  const requests = range(
    runs.map((r) => r.requests),
    formatInteger,
  );
  const who = runs.length === 1 ? escapeHtml(runs[0]!.policy) : 'the policies';
  if (!a.some((x) => x.servedAfterWait > 0 || rejected(x) > 0)) {
    return (
      `Admission held nothing back: ${who} served all ${requests} requests at once — none ` +
      'waited in a router’s queue and none was turned away.'
    );
  }
  const served = range(
    a.map((x) => x.served),
    formatInteger,
  );
  const share = range(
    runs.map((r) => r.admission.served / r.requests),
    formatPercent,
  );
  const wait = range(
    a.map((x) => x.queueWaitMs.p99),
    formatDuration,
  );
  return (
    'Each router held a request while every worker was full and turned away what could not ' +
    `wait: ${who} served ${served} of ${requests} requests (${share}), ` +
    `${counts(a.map((x) => x.servedAfterWait))} of them after waiting in a router’s queue ` +
    `(wait p99 ${wait}), and turned away ${counts(a.map(rejected))}: ` +
    `${counts(a.map((x) => x.rejected.shed))} shed, ` +
    `${counts(a.map((x) => x.rejected.queue_full))} for a full queue, ` +
    `${counts(a.map((x) => x.rejected.timeout))} timed out.`
  );
}

/**
 * @internal What admission did over `runs`: served and turned away (as ranges over the runs),
 * served throughput against capacity, then the limits in force when the command line was
 * recorded, and what time to first token counts.
 */
export function admissionSummary(c: Comparison, runs: readonly AdmittedRun[]): string {
  const capacity =
    c.capacity > 0 && Number.isFinite(c.capacity)
      ? ` Served throughput, steady (over the middle half of the arrivals): ${range(
          runs.map((r) => r.throughput.steadyRequestsPerSecond / c.capacity),
          formatPercent,
        )} of the estimated capacity (${escapeHtml(formatNumber(c.capacity))} requests/s).`
      : '';
  return (
    `<p class="note">Admission control was on. ${outcomes(runs)}${capacity}</p>` +
    `<p class="note">${limits(c)}Time to first token in ` +
    'this report counts the served requests only, from their arrival at a router, their wait ' +
    'included.</p>'
  );
}

function figure(body: string, caption: string): string {
  return `<figure>${body}<figcaption>${caption}</figcaption></figure>`;
}

/** @internal A stacked bar per run: its requests by outcome, the share served after it. */
export function outcomeFigure(runs: readonly AdmittedRun[]): string {
  const rows = runs.map((r) => {
    const counts = OUTCOMES.map((o) => o.count(r.admission));
    return {
      label: r.policy,
      values: counts.map((n) => n / r.requests),
      labels: counts.map(formatInteger),
      total: `${formatPercent(r.admission.served / r.requests)} served`,
    };
  });
  const series = OUTCOMES.map(({ name, color, ink }) => ({ name, color, ink }));
  const svg = responsive((width) =>
    stackedBarChart({
      label: 'Requests served and turned away, by policy',
      rows,
      series,
      tickFormat: formatPercentTick,
      max: 1,
      axisTitle: 'share of the requests (labels: requests)',
      ...(width === undefined ? {} : { width }),
    }),
  );
  const items = OUTCOMES.map((o) => ({ label: o.name, color: o.color, shape: 'box' as const }));
  return figure(
    `${legend(items)}${svg}`,
    'Each policy’s requests by outcome, as shares of all its requests (counts on the bars): ' +
      'served at once, served after waiting in a router’s queue, or turned away — shed, the ' +
      'queue full, or timed out.',
  );
}

/**
 * @internal Time to first token p99 per priority band, grouped by run, on a log axis when the
 * values span more than {@link LOG_SCALE_RATIO}×; `''` with fewer than two bands (the summary's
 * p99 already says it).
 */
export function priorityFigure(runs: readonly AdmittedRun[]): string {
  const { bands } = priorityBands(runs);
  if (bands.length < 2) return '';
  const groups = runs.map((r) => ({ label: r.policy, values: bands.map((b) => bandP99(r, b)) }));
  const svg = responsive((width) =>
    groupedBarChart({
      label: 'Time to first token p99 by priority band, by policy',
      groups,
      series: bands.map((b, i) => ({ name: bandName(b), color: categoryColor(i) })),
      format: formatDuration,
      tickFormat: formatDurationTick,
      scale: 'auto',
      axisTitle: 'time to first token, p99 of the served requests',
      ...(width === undefined ? {} : { width }),
    }),
  );
  const log = shouldUseLog(groups.flatMap((g) => g.values))
    ? ` The axis is logarithmic because the values span more than ${LOG_SCALE_RATIO}×.`
    : '';
  return figure(
    svg,
    'The served requests of each priority band (higher runs first), from arrival at the router to ' +
      `the end of prefill, wait included; a band with nothing served shows —.${log}`,
  );
}

/**
 * @internal The body of the "Admission" section, or `''` when no run of `c` has admission
 * figures. Every text from the data is escaped. Cost: O(runs × (bands + tenants)).
 */
export function admissionSection(c: Comparison): string {
  const runs = admittedRuns(c.runs);
  if (runs.length === 0) return '';
  const [oracle] = admittedRuns([c.oracle]);
  return (
    admissionSummary(c, runs) +
    outcomeFigure(runs) +
    outcomeTable(c, runs, oracle) +
    priorityFigure(runs) +
    tenantTable(runs, oracle)
  );
}
