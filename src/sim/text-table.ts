/**
 * The comparison as plain text: a few lines of context and one table row per policy, for a
 * terminal.
 *
 * @module
 */
import { ORACLE } from './oracle.js';
import type { Comparison, PolicyRun } from './result.js';

/** A column: its header and how a run's value is shown (the first is left-aligned, the rest right). */
interface Column {
  readonly header: string;
  readonly cell: (run: PolicyRun, comparison: Comparison) => string;
  /** Shown only when the comparison has an oracle run. */
  readonly oracleOnly?: boolean;
  /** Shown only when a run has admission figures (`--admission`). */
  readonly admissionOnly?: boolean;
  /** Shown only when a run served LoRA adapters (`PolicyRun.adapters`). */
  readonly adaptersOnly?: boolean;
  /** Shown only when a run has disaggregation figures (`--disaggregation`). */
  readonly pdOnly?: boolean;
}

const COLUMNS: readonly Column[] = [
  { header: 'policy', cell: (r) => r.policy },
  { header: 'hit rate', cell: (r) => percent(r.hitRate) },
  { header: 'of ceiling', cell: (r, c) => (c.ceiling > 0 ? percent(r.hitRate / c.ceiling) : '—') },
  {
    header: `of ${ORACLE}`,
    cell: (r, c) => {
      const oracle = c.oracle?.hitRate ?? 0;
      return oracle > 0 ? percent(r.hitRate / oracle) : '—';
    },
    oracleOnly: true,
  },
  { header: 'TTFT p50', cell: (r) => ms(r.ttftMs.p50) },
  { header: 'TTFT p99', cell: (r) => ms(r.ttftMs.p99) },
  { header: 'TTFT mean', cell: (r) => ms(r.ttftMs.mean), pdOnly: true },
  {
    header: 'prefill skipped',
    cell: (r) => {
      const d = r.disaggregation;
      return d === undefined ? '—' : `${thousands(d.prefillSkipped)} (${percent(d.skippedShare)})`;
    },
    pdOnly: true,
  },
  { header: 'transfers', cell: (r) => count(r.disaggregation?.transfers), pdOnly: true },
  {
    header: 'tokens moved',
    cell: (r) => count(r.disaggregation?.tokensTransferred),
    pdOnly: true,
  },
  {
    header: 'hit P / D',
    cell: (r) => {
      const d = r.disaggregation;
      return d === undefined ? '—' : `${percent(d.prefillHitRate)} / ${percent(d.decodeHitRate)}`;
    },
    pdOnly: true,
  },
  { header: 'req/s', cell: (r) => fixed(r.throughput.requestsPerSecond, 1) },
  { header: 'load max/mean', cell: (r) => fixed(r.load.maxOverMean, 2) },
  { header: 'tokens max/mean', cell: (r) => fixed(r.work.maxOverMean, 2) },
  { header: 'load CV', cell: (r) => fixed(r.load.cv, 2) },
  { header: 'precision', cell: (r) => (r.precision === undefined ? '—' : percent(r.precision)) },
  { header: 'route µs', cell: (r) => fixed(r.routingMicrosPerRequest, 1) },
  { header: 'adapter loads', cell: (r) => count(r.adapters?.loads), adaptersOnly: true },
  {
    header: 'loads/worker max/min',
    cell: (r) =>
      r.adapters === undefined
        ? '—'
        : `${count(r.adapters.maxPerWorker)}/${count(r.adapters.minPerWorker)}`,
    adaptersOnly: true,
  },
  { header: 'served', cell: (r) => count(r.admission?.served), admissionOnly: true },
  {
    header: 'rejected',
    cell: (r) => {
      const a = r.admission;
      return a === undefined
        ? '—'
        : count(a.rejected.shed + a.rejected.queue_full + a.rejected.timeout);
    },
    admissionOnly: true,
  },
  {
    header: 'wait p99',
    cell: (r) => ms(r.admission?.queueWaitMs.p99 ?? Number.NaN),
    admissionOnly: true,
  },
  {
    header: 'TTFT p99 by priority',
    cell: (r) =>
      r.admission === undefined
        ? '—'
        : r.admission.byPriority.map((p) => `${p.priority}: ${ms(p.ttftMs.p99)}`).join(', '),
    admissionOnly: true,
  },
  {
    header: 'heaviest tenant',
    cell: (r) => {
      const tenants = r.admission?.tenants ?? [];
      if (tenants.length < 2) return '—';
      const top = tenants.reduce((a, b) => (b.offeredShare > a.offeredShare ? b : a));
      return `${percent(top.saturatedShare)} of ${percent(top.offeredShare)}`;
    },
    admissionOnly: true,
  },
  {
    header: 'served/capacity',
    cell: (r, c) =>
      c.capacity > 0 ? percent(r.throughput.steadyRequestsPerSecond / c.capacity) : '—',
    admissionOnly: true,
  },
];

/**
 * Renders `comparison` for a terminal: the workload, fleet, arrivals, ceiling and capacity, then
 * an aligned table with one row per policy and, when the comparison has one, a last row for the
 * greedy-oracle run and a column "of greedy-oracle" (each hit rate over its hit rate: a
 * reference, not a bound, so a policy can exceed 100 %). Plain ASCII apart from `µ`, `—` and
 * `×`.
 *
 * @returns the text, ending with a newline.
 * @public
 */
export function formatComparison(comparison: Comparison): string {
  const c = comparison;
  const f = c.fleet;
  const cache =
    f.cacheTokens === Number.POSITIVE_INFINITY
      ? 'unbounded prefix cache'
      : `${thousands(f.cacheTokens)}-token prefix cache`;
  const d = c.disaggregation;
  const workers =
    d === undefined
      ? `${f.workers} workers`
      : `${d.prefillWorkers} prefill + ${d.decodeWorkers} decode workers`;
  const lines = [
    `workload  ${c.workload.name}: ${c.workload.description} (${thousands(c.workload.requests)} requests)`,
    `fleet     ${workers}, ${cache} each, prefill ${thousands(f.prefillTokensPerSecond)} tok/s, decode step ${f.decodeStepMs} ms + ${f.decodeStepPerRequestMs} ms × running`,
    `arrivals  ${c.arrivals}${c.routers > 1 ? `, ${c.routers} independent routers` : ''}, seed ${c.seed}`,
    `ceiling   ${percent(c.ceiling)} token hit rate (one infinite shared cache); capacity ≈ ${fixed(c.capacity, 1)} req/s`,
  ];
  const events = eventsLine(c);
  if (events !== undefined) lines.push(events);
  if (d !== undefined) lines.push(`p/d       ${describeDisaggregation(d)}`);
  lines.push('');
  const admission = c.runs.some((run) => run.admission !== undefined);
  const adapters = c.runs.some((run) => run.adapters !== undefined);
  if (adapters)
    lines.splice(
      2,
      0,
      `adapters  ${f.maxLoras} LoRA slots per worker, ${thousands(f.adapterLoadMs)} ms per adapter load`,
    );
  const pd = c.runs.some((run) => run.disaggregation !== undefined);
  const columns = COLUMNS.filter(
    (col) =>
      (c.oracle !== undefined || col.oracleOnly !== true) &&
      (admission || col.admissionOnly !== true) &&
      (adapters || col.adaptersOnly !== true) &&
      (pd || col.pdOnly !== true),
  );
  const runs = c.oracle === undefined ? c.runs : [...c.runs, c.oracle];
  const rows = runs.map((run) => columns.map((col) => col.cell(run, c)));
  const widths = columns.map((col, i) =>
    Math.max(col.header.length, ...rows.map((row) => row[i]!.length)),
  );
  const render = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (i === 0 ? cell.padEnd(widths[i]!) : cell.padStart(widths[i]!)))
      .join('  ')
      .trimEnd();
  lines.push(render(columns.map((col) => col.header)));
  lines.push(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) lines.push(render(row));
  return `${lines.join('\n')}\n`;
}

/**
 * @internal The line on KV events and engine restarts, or `undefined` when the comparison has
 * neither (shared with the HTML report's wording).
 */
export function eventsLine(c: Comparison): string | undefined {
  const restarts =
    c.engineRestarts === undefined
      ? ''
      : `${c.engineRestarts} engine restart${c.engineRestarts === 1 ? '' : 's'} (each empties that engine's cache)`;
  if (c.kvEvents === undefined) return restarts === '' ? undefined : `restarts  ${restarts}`;
  const loss =
    c.kvEvents.loss > 0 ? `, ${(c.kvEvents.loss * 100).toFixed(2)} % of batches lost` : '';
  return (
    `kv events cache_aware: its own tree; cache_aware+events: the engines' KV events, ` +
    `${c.kvEvents.delayMs} ms late${loss}${restarts === '' ? '' : `; ${restarts}`}`
  );
}

/**
 * @internal A disaggregated fleet's modes, transfer cost, decode policy and rule, in words
 * (shared with the HTML report's "Run" section).
 */
export function describeDisaggregation(d: NonNullable<Comparison['disaggregation']>): string {
  const rule = d.modes.includes('conditional')
    ? `; conditional: the decode worker prefills when fewer than ${thousands(d.rule.localPrefillTokens)} prompt tokens and ${percent(d.rule.localPrefillShare)} of the prompt are uncached there`
    : '';
  return `${d.modes.join(' and ')}; KV transfer ${d.transferMs} ms + ${d.transferMsPerThousandTokens} ms per 1,000 tokens; decode leg ${d.modes.map((m) => `${d.decodePolicy[m]}${d.modes.length > 1 ? ` (${m})` : ''}`).join(', ')}${rule}`;
}

function percent(value: number): string {
  return Number.isFinite(value) ? `${(value * 100).toFixed(1)} %` : '—';
}

function count(value: number | undefined): string {
  return value === undefined ? '—' : thousands(value);
}

function fixed(value: number, digits: number): string {
  return Number.isFinite(value) ? value.toFixed(digits) : '—';
}

function ms(value: number): string {
  if (!Number.isFinite(value)) return '—';
  if (value >= 10_000) return `${(value / 1000).toFixed(1)} s`;
  return `${value.toFixed(0)} ms`;
}

function thousands(value: number): string {
  return Number.isFinite(value) ? Math.round(value).toLocaleString('en-US') : '∞';
}
