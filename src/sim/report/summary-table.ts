/**
 * The report's summary table: one row per policy, one column per metric, with the best value
 * of each column in bold, and the greedy oracle's row (when the comparison has one) set apart
 * below.
 *
 * @module
 * @internal
 */
import { ORACLE } from '../oracle.js';
import type { Comparison, PolicyRun } from '../result.js';
import {
  DASH,
  escapeHtml,
  formatFixed,
  formatInteger,
  formatNumber,
  formatPercent,
} from './format.js';

/** @internal One metric column. */
interface Column {
  /** Header HTML (already escaped). */
  readonly header: string;
  readonly value: (run: PolicyRun) => number | undefined;
  readonly format: (value: number, run: PolicyRun) => string;
  /** Which end is best; `undefined` for a column that is not ranked. */
  readonly better: 'high' | 'low' | undefined;
}

function columns(c: Comparison): Column[] {
  const incomplete = c.runs.some((r) => r.completed !== r.requests);
  const ofCeiling = (r: PolicyRun): number =>
    c.ceiling > 0 && Number.isFinite(c.ceiling) ? r.hitRate / c.ceiling : Number.NaN;
  const list: Column[] = [
    { header: 'Hit rate', value: (r) => r.hitRate, format: formatPercent, better: 'high' },
    { header: '% of ceiling', value: ofCeiling, format: formatPercent, better: 'high' },
    ...(c.oracle === undefined ? [] : [ofOracle(c.oracle)]),
    { header: 'TTFT p50 (ms)', value: (r) => r.ttftMs.p50, format: formatNumber, better: 'low' },
    { header: 'TTFT p99 (ms)', value: (r) => r.ttftMs.p99, format: formatNumber, better: 'low' },
    ...(c.runs.some((r) => r.disaggregation !== undefined) ? PD_COLUMNS : []),
    {
      header: 'Requests/s',
      value: (r) => r.throughput.requestsPerSecond,
      format: formatNumber,
      better: 'high',
    },
    {
      header: 'Output tokens/s',
      value: (r) => r.throughput.outputTokensPerSecond,
      format: formatNumber,
      better: 'high',
    },
    {
      header: 'Load max/mean',
      value: (r) => r.load.maxOverMean,
      format: (v) => formatFixed(v, 2),
      better: 'low',
    },
    {
      header: 'Tokens max/mean',
      value: (r) => r.work.maxOverMean,
      format: (v) => formatFixed(v, 2),
      better: 'low',
    },
    { header: 'Load CV', value: (r) => r.load.cv, format: (v) => formatFixed(v, 2), better: 'low' },
    { header: 'Precision', value: (r) => r.precision, format: formatPercent, better: 'high' },
    {
      header: 'Routing µs/req',
      value: (r) => r.routingMicrosPerRequest,
      format: formatNumber,
      better: 'low',
    },
  ];
  if (c.runs.some((r) => r.adapters !== undefined)) {
    list.push(
      {
        header: 'Adapter loads',
        value: (r) => r.adapters?.loads,
        format: formatInteger,
        better: 'low',
      },
      {
        header: 'Loads/worker max',
        value: (r) => r.adapters?.maxPerWorker,
        format: (v, r) =>
          `${formatInteger(v)} (min ${formatInteger(r.adapters?.minPerWorker ?? 0)})`,
        better: 'low',
      },
    );
  }
  if (incomplete) {
    list.splice(0, 0, {
      header: 'Completed',
      value: (r) => r.completed,
      format: (v, r) => `${formatInteger(v)} / ${formatInteger(r.requests)}`,
      better: undefined,
    });
  }
  return list;
}

/** With a disaggregated fleet: the legs' figures (`PolicyRun.disaggregation`). */
const PD_COLUMNS: readonly Column[] = [
  { header: 'TTFT mean (ms)', value: (r) => r.ttftMs.mean, format: formatNumber, better: 'low' },
  {
    header: 'Prefill legs skipped',
    value: (r) => r.disaggregation?.skippedShare,
    format: (v, r) => `${formatInteger(r.disaggregation!.prefillSkipped)} (${formatPercent(v)})`,
    better: undefined,
  },
  {
    header: 'Tokens moved',
    value: (r) => r.disaggregation?.tokensTransferred,
    format: formatInteger,
    better: 'low',
  },
  {
    header: 'Prefill pool hit rate',
    value: (r) => r.disaggregation?.prefillHitRate,
    format: formatPercent,
    better: undefined,
  },
  {
    header: 'Decode pool hit rate',
    value: (r) => r.disaggregation?.decodeHitRate,
    format: formatPercent,
    better: undefined,
  },
];

/**
 * The column "of greedy-oracle": a run's hit rate over the greedy oracle's (— when its is 0); a
 * policy that beats it shows more than 100 %.
 */
function ofOracle(oracle: PolicyRun): Column {
  const value = (r: PolicyRun): number =>
    oracle.hitRate > 0 && Number.isFinite(oracle.hitRate) ? r.hitRate / oracle.hitRate : Number.NaN;
  return { header: `of ${ORACLE}`, value, format: formatPercent, better: 'high' };
}

/** The best finite value of a column, or `undefined` when fewer than two runs can be ranked. */
function bestOf(column: Column, runs: readonly PolicyRun[]): number | undefined {
  if (column.better === undefined) return undefined;
  const values = runs.map(column.value).filter((v): v is number => Number.isFinite(v));
  if (values.length < 2) return undefined;
  return column.better === 'high' ? Math.max(...values) : Math.min(...values);
}

/**
 * @internal The summary `<table>`: a row per run in the order given, `—` for a missing or
 * non-finite value, and the best value of each ranked column in `<strong>` (every tie too).
 * The greedy oracle, when present, is ranked with no one: its row comes last, in its own
 * `<tbody class="oracle">`, tagged as a reference rather than a bound, and the column
 * "of greedy-oracle" divides each hit rate by its own.
 */
export function summaryTable(c: Comparison): string {
  const cols = columns(c);
  const best = cols.map((col) => bestOf(col, c.runs));
  const head = cols.map((col) => `<th scope="col">${escapeHtml(col.header)}</th>`).join('');
  const row = (run: PolicyRun, label: string, ranked: boolean): string => {
    const cells = cols.map((col, i) => {
      const value = col.value(run);
      const shown = value === undefined ? DASH : escapeHtml(col.format(value, run));
      return ranked && value !== undefined && value === best[i]
        ? `<td class="best"><strong>${shown}</strong></td>`
        : `<td>${shown}</td>`;
    });
    return `<tr><th scope="row">${label}</th>${cells.join('')}</tr>`;
  };
  const rows = c.runs.map((run) => row(run, escapeHtml(run.policy), true));
  const oracle =
    c.oracle === undefined
      ? ''
      : `<tbody class="oracle">${row(c.oracle, `${escapeHtml(c.oracle.policy)} <span class="tag">reference, not a bound</span>`, false)}</tbody>`;
  return (
    '<div class="table-wrap"><table>' +
    `<thead><tr><th scope="col">Policy</th>${head}</tr></thead>` +
    `<tbody>${rows.join('')}</tbody>${oracle}</table></div>`
  );
}
