/**
 * The report's admission tables: per policy, requests served and turned away by reason, the
 * queue wait, time to first token by priority band and served throughput against capacity; and
 * per tenant, its share of the work sent against its share of the work served while saturated.
 *
 * @module
 * @internal
 */
import type { AdmissionRun, Comparison, PolicyRun } from '../result.js';
import {
  DASH,
  escapeHtml,
  formatDuration,
  formatInteger,
  formatNumber,
  formatPercent,
  formatTickValue,
  isFiniteNumber,
} from './format.js';

/** @internal A run with admission figures. */
export type AdmittedRun = PolicyRun & { readonly admission: AdmissionRun };

/** @internal The runs of `runs` that have admission figures, in order. */
export function admittedRuns(runs: readonly (PolicyRun | undefined)[]): AdmittedRun[] {
  return runs.filter((r): r is AdmittedRun => r?.admission !== undefined);
}

/** @internal Most priority bands given a column each (highest first); the JSON has them all. */
export const MAX_PRIORITY_BANDS = 6;

/** @internal Most tenants given a column each (largest share of the work sent first). */
export const MAX_TENANT_COLUMNS = 8;

/** @internal Most characters of a tenant's name shown; the rest is cut with `…`. */
const MAX_TENANT_NAME = 40;

/**
 * @internal The priority bands of `runs`, highest first, at most {@link MAX_PRIORITY_BANDS},
 * and how many lower ones are left out. Cost: O(bands × runs).
 */
export function priorityBands(runs: readonly AdmittedRun[]): {
  readonly bands: readonly number[];
  readonly hidden: number;
} {
  const all = new Set<number>();
  for (const r of runs) for (const p of r.admission.byPriority) all.add(p.priority);
  const sorted = [...all].filter(isFiniteNumber).sort((a, b) => b - a);
  return {
    bands: sorted.slice(0, MAX_PRIORITY_BANDS),
    hidden: Math.max(0, sorted.length - MAX_PRIORITY_BANDS),
  };
}

/** @internal A priority as a column or series name (`Priority -1`). */
export function bandName(priority: number): string {
  return `Priority ${formatTickValue(priority)}`;
}

/** The band `priority` of a run, if it has requests there. */
function bandOf(
  run: AdmittedRun,
  priority: number,
): AdmissionRun['byPriority'][number] | undefined {
  return run.admission.byPriority.find((p) => p.priority === priority);
}

/** @internal A run's time to first token p99 in band `priority` (`NaN` when it has none). */
export function bandP99(run: AdmittedRun, priority: number): number {
  return bandOf(run, priority)?.ttftMs.p99 ?? Number.NaN;
}

function cell(html: string): string {
  return `<td>${html}</td>`;
}

/** A column header holding `html` (already escaped). */
function col(html: string): string {
  return `<th scope="col">${html}</th>`;
}

/** A table of header cells `head` (whole `<th>` elements), rows `body` and an oracle `<tbody>`. */
function table(head: readonly string[], body: string, oracle: string): string {
  const cols = head.join('');
  return (
    '<div class="table-wrap"><table>' +
    `<thead><tr>${cols}</tr></thead><tbody>${body}</tbody>${oracle}</table></div>`
  );
}

/** The greedy oracle's row label: its name and a tag saying what it is. */
function oracleLabel(run: PolicyRun): string {
  return `${escapeHtml(run.policy)} <span class="tag">reference</span>`;
}

/**
 * @internal The table of outcomes per run: served (and of them after a wait), turned away by
 * reason, the queue wait p50 and p99, time to first token p99 per priority band with the
 * band's served and sent requests, served requests/s and its share of `c.capacity`; the greedy
 * oracle, when given, in a `<tbody class="oracle">` of its own. `—` for any missing or
 * non-finite figure. Cost: O(runs × bands).
 */
export function outcomeTable(
  c: Comparison,
  runs: readonly AdmittedRun[],
  oracle: AdmittedRun | undefined,
): string {
  const { bands, hidden } = priorityBands(oracle === undefined ? runs : [...runs, oracle]);
  const head = [
    'Policy',
    'Served',
    'Served after a wait',
    'Shed',
    'Queue full',
    'Timed out',
    'Wait p50',
    'Wait p99',
    ...bands.map((b) => `${escapeHtml(bandName(b))}: TTFT p99 (served / sent)`),
    'Served requests/s',
    'Of capacity',
  ].map(col);
  const capacity = c.capacity > 0 && Number.isFinite(c.capacity) ? c.capacity : Number.NaN;
  const row = (run: AdmittedRun, label: string): string => {
    const a = run.admission;
    const cells = [
      formatInteger(a.served),
      formatInteger(a.servedAfterWait),
      formatInteger(a.rejected.shed),
      formatInteger(a.rejected.queue_full),
      formatInteger(a.rejected.timeout),
      formatDuration(a.queueWaitMs.p50),
      formatDuration(a.queueWaitMs.p99),
      ...bands.map((b) => {
        const band = bandOf(run, b);
        return band === undefined
          ? DASH
          : `${formatDuration(band.ttftMs.p99)} <span class="note">${formatInteger(band.served)} / ${formatInteger(band.requests)}</span>`;
      }),
      formatNumber(run.throughput.steadyRequestsPerSecond),
      formatPercent(run.throughput.steadyRequestsPerSecond / capacity),
    ];
    return `<tr><th scope="row">${label}</th>${cells.map(cell).join('')}</tr>`;
  };
  const body = runs.map((r) => row(r, escapeHtml(r.policy))).join('');
  const reference =
    oracle === undefined ? '' : `<tbody class="oracle">${row(oracle, oracleLabel(oracle))}</tbody>`;
  const more =
    hidden === 0
      ? ''
      : ` ${formatInteger(hidden)} lower priority band${hidden === 1 ? ' is' : 's are'} not shown; the JSON output holds every band.`;
  return (
    table(head, body, reference) +
    '<p class="note">Served after a wait: of the served requests, those that waited in a ' +
    'router’s queue first. Wait: time in the queue of the served requests (0 for those admitted ' +
    'at once). TTFT p99 per priority band: the band’s served requests, from their arrival at the ' +
    'router, wait included; after it, the band’s served and sent requests. Served requests/s: ' +
    'the steady rate, completions per second over the middle half of the arrivals (without the ' +
    `ramp or the drain), and its share of the fleet’s estimated capacity, ${escapeHtml(formatNumber(c.capacity))} requests/s.${more}</p>`
  );
}

type Tenant = AdmissionRun['tenants'][number];

/** A tenant's name as a column header: `(no tenant)` for `''`, long names cut, escaped. */
function tenantHeader(name: string, heaviest: boolean): string {
  const chars = [...name];
  const shown =
    name === ''
      ? '(no tenant)'
      : chars.length > MAX_TENANT_NAME
        ? `${chars.slice(0, MAX_TENANT_NAME - 1).join('')}…`
        : name;
  const title = shown === name || name === '' ? '' : ` title="${escapeHtml(name)}"`;
  const tag = heaviest ? ' <span class="tag">heaviest</span>' : '';
  return `<th scope="col"${title}>${escapeHtml(shown)}${tag}</th>`;
}

/**
 * The tenants given a column: the {@link MAX_TENANT_COLUMNS} largest by share of the work sent
 * (ties by name). O(n log n) in the tenants.
 */
function shownTenants(tenants: readonly Tenant[]): Tenant[] {
  return [...tenants]
    .sort(
      (a, b) =>
        b.offeredShare - a.offeredShare || (a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : 0),
    )
    .slice(0, MAX_TENANT_COLUMNS);
}

/** Per shown tenant, and the rest summed, a value of each tenant of `tenants`. O(n). */
function spread(
  tenants: readonly Tenant[],
  shown: readonly Tenant[],
  value: (t: Tenant) => number,
): number[] {
  const index = new Map(shown.map((t, i) => [t.tenant, i]));
  const out = new Array<number>(shown.length + 1).fill(0);
  for (const t of tenants) out[index.get(t.tenant) ?? shown.length]! += value(t);
  return out;
}

/**
 * @internal The table of tenants, or `''` when the first run has fewer than two: a column per
 * tenant of the {@link MAX_TENANT_COLUMNS} that sent the most work (the heaviest tagged) and one
 * summing the others; a first row with each one's share of the prompt tokens sent (the first
 * run's: the mix is the same in every run), then a row per run (the greedy oracle's last, apart)
 * with its share of the prompt tokens served while saturated — `—` for a run that served
 * nothing out of a queue. Names are escaped and cut at 40 characters. Cost: O(runs × tenants)
 * plus one sort of the first run's tenants.
 */
export function tenantTable(runs: readonly AdmittedRun[], oracle: AdmittedRun | undefined): string {
  const tenants = runs[0]?.admission.tenants ?? [];
  if (tenants.length < 2) return '';
  const shown = shownTenants(tenants);
  const others = tenants.length - shown.length;
  const head = [
    col('Tenant'),
    ...shown.map((t, i) => tenantHeader(t.tenant, i === 0)),
    ...(others === 0 ? [] : [col(`${formatInteger(others)} other${others === 1 ? '' : 's'}`)]),
  ];
  const width = shown.length + (others === 0 ? 0 : 1);
  const cells = (values: readonly number[], known: boolean): string =>
    values
      .slice(0, width)
      .map((v) => cell(known ? formatPercent(v) : DASH))
      .join('');
  const row = (run: AdmittedRun, label: string): string =>
    `<tr><th scope="row">${label}</th>${cells(
      spread(run.admission.tenants, shown, (t) => t.saturatedShare),
      run.admission.servedAfterWait > 0,
    )}</tr>`;
  const offered = `<tr><th scope="row">Offered</th>${cells(
    spread(tenants, shown, (t) => t.offeredShare),
    true,
  )}</tr>`;
  const body = offered + runs.map((r) => row(r, escapeHtml(r.policy))).join('');
  const reference =
    oracle === undefined ? '' : `<tbody class="oracle">${row(oracle, oracleLabel(oracle))}</tbody>`;
  return (
    table(head, body, reference) +
    '<p class="note">Offered: each tenant’s share of the prompt tokens of all requests. Below, ' +
    'per policy, its share of the prompt tokens served while saturated — by the requests that ' +
    'left a router’s queue, which holds requests only while every worker is full. The queue shares ' +
    'room fairly between tenants, so a tenant that sends far more than the others gets less than ' +
    'its offered share there.</p>'
  );
}
