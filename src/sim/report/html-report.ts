/**
 * `renderHtmlReport`: a {@link Comparison} as one self-contained HTML5 page (inline CSS and
 * SVG, no script, no external resource) that reads on screen and prints.
 *
 * @module
 */
import type { Comparison, PolicyRun } from '../result.js';
import { ADMISSION_METRICS, admissionSection } from './admission-section.js';
import { REPORT_CSS } from './css.js';
import {
  hitRateFigure,
  inFlightFigure,
  perWorkerFigure,
  queueFigure,
  ttftDistributionFigure,
  ttftFigure,
} from './figures.js';
import {
  escapeHtml,
  formatCacheTokens,
  formatInteger,
  formatNumber,
  formatPercent,
  formatTickValue,
} from './format.js';
import { runSection } from './run-section.js';
import { summaryTable } from './summary-table.js';

/**
 * Options of {@link renderHtmlReport}.
 *
 * @public
 */
export interface HtmlReportOptions {
  /**
   * The page title and heading.
   * @defaultValue `fleetroute simulation: <workload name>`
   */
  readonly title?: string;
  /**
   * Shown under the heading, in UTC. Left out when absent, so the output then depends on the
   * comparison alone.
   * @defaultValue none
   */
  readonly generatedAt?: Date;
}

function plural(count: number, one: string, many: string): string {
  return `${formatInteger(count)} ${count === 1 ? one : many}`;
}

function sentence(text: string): string {
  const trimmed = text.trim();
  return trimmed === '' || /[.!?]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function overview(c: Comparison): string {
  const f = c.fleet;
  const w = c.workload;
  const description = sentence(w.description);
  const routers =
    c.routers === 1
      ? '1 router'
      : `${plural(c.routers, 'router', 'routers')} (requests spread over them round-robin)`;
  const text =
    `Workload <strong>${escapeHtml(w.name)}</strong>${description === '' ? '.' : `: ${escapeHtml(description)}`} ` +
    `${plural(w.requests, 'request', 'requests')}, arriving as ${escapeHtml(c.arrivals)}. ` +
    `Fleet: ${plural(f.workers, 'worker', 'workers')}, each with a prefix cache of ` +
    `${escapeHtml(formatCacheTokens(f.cacheTokens))} (blocks of ${formatInteger(f.blockSize)}), ` +
    `prefill at ${formatInteger(f.prefillTokensPerSecond)} tokens/s and decode steps of ` +
    `${formatTickValue(f.decodeStepMs)} ms + ${formatTickValue(f.decodeStepPerRequestMs)} ms per running ` +
    `request (at most ${formatInteger(f.maxRunning)} running, ${formatInteger(f.maxBatchTokens)} ` +
    `prompt tokens per step). ${routers}, seed ${escapeHtml(String(c.seed))}. ` +
    `Ceiling hit rate <strong>${formatPercent(c.ceiling)}</strong>; estimated capacity ` +
    `<strong>${formatNumber(c.capacity)} requests/s</strong>.`;
  const parameters = Object.entries(w.parameters).map(
    ([key, value]) =>
      `<code>${escapeHtml(key)}</code> = ${escapeHtml(typeof value === 'number' ? formatTickValue(value) : value)}`,
  );
  const params =
    parameters.length === 0 ? '' : `<p class="params">Parameters: ${parameters.join(' · ')}</p>`;
  return `<p class="overview">${text}</p>${params}`;
}

const METRICS: readonly (readonly [string, string])[] = [
  [
    'Hit rate',
    'Prompt tokens served from a worker’s prefix cache over all prompt tokens (token-weighted, not per request).',
  ],
  [
    'Ceiling',
    'The hit rate of one infinite cache shared by the whole fleet; no policy can do better, and “% of ceiling” divides by it.',
  ],
  [
    'Greedy oracle',
    'When present: a run routed greedily with perfect knowledge of every worker’s cache and queue — a reference, not a bound: a policy can beat it; “of greedy-oracle” divides each hit rate by its hit rate.',
  ],
  [
    'TTFT',
    'Time to first token: from arrival to the end of the request’s prefill, in simulated time.',
  ],
  ['Throughput', 'Completed requests and generated tokens per second of simulated time.'],
  [
    'Waiting, running',
    'Requests queued on a worker for a place in its batch, and requests in the batch (prefill or decode).',
  ],
  [
    'Load',
    'Requests routed per worker: the busiest worker over the mean, and the coefficient of variation (standard deviation over mean); 1 and 0 are perfectly even.',
  ],
  [
    'Tokens max/mean',
    'Prompt tokens routed per worker, the busiest worker over the mean: balance weighted by work, which even request counts can hide.',
  ],
  [
    'Precision',
    'The share of requests sent to the worker holding the longest cached prefix, among requests for which some worker held one (— when none did).',
  ],
  [
    'Routing µs',
    'Wall-clock time of the routing call per request on the machine that ran the simulation; the only metric that is not simulated.',
  ],
];

/** The glossary: {@link METRICS}, and the admission terms when the page shows admission. */
function footer(admission: boolean): string {
  const items = (admission ? [...METRICS, ...ADMISSION_METRICS] : METRICS)
    .map(([term, text]) => `<dt>${term}</dt><dd>${text}</dd>`)
    .join('');
  return `<footer><h2>Metrics</h2><dl>${items}</dl></footer>`;
}

/**
 * What the `cache_aware+events` and `(1 router)` rows mean and what the engine restarts did,
 * or nothing when the comparison has neither.
 */
function eventsNote(c: Comparison): string {
  const restarts =
    c.engineRestarts === undefined
      ? ''
      : ` ${plural(c.engineRestarts, 'engine restart', 'engine restarts')} spread over each run emptied that engine’s cache; ` +
        (c.kvEvents === undefined
          ? 'the routers were not told.'
          : 'routers fed by events learned of it after the delay, the others did not.');
  if (c.kvEvents === undefined)
    return restarts === '' ? '' : `<p class="note">${restarts.trim()}</p>`;
  const loss =
    c.kvEvents.loss > 0
      ? `, losing ${formatPercent(c.kvEvents.loss)} of the batches (a router that loses one forgets that worker’s blocks, as a subscriber without replay does)`
      : '';
  const routers =
    c.routers > 1
      ? ` Rows marked “(1 router)” ran with one router; the others with ${formatInteger(c.routers)} routers, each seeing a share of the traffic: the gap is what several routers cost with and without events.`
      : '';
  return (
    '<p class="note"><code>cache_aware</code> scores prompts against its own approximate tree of what it routed; ' +
    '<code>cache_aware+events</code> scores them against the blocks the engines report holding: each engine’s ' +
    'stored and removed blocks, batched per engine step, reach every router ' +
    `${formatTickValue(c.kvEvents.delayMs)} ms later${loss}.${routers}${restarts}</p>`
  );
}

/**
 * The decisions each policy took, by branch (`policy.explain()`): the counts an operator sees as
 * `fleetroute_decisions_total{branch}`. Empty (no section) when no run reports branches.
 */
function decisionsTable(c: Comparison): string {
  const runs = c.runs.filter((r) => Object.keys(r.decisions ?? {}).length > 0);
  if (runs.length === 0) return '';
  const branches = [...new Set(runs.flatMap((r) => Object.keys(r.decisions)))].sort();
  const head = branches.map((b) => `<th scope="col">${escapeHtml(b)}</th>`).join('');
  const rows = runs.map((r) => {
    const total = Object.values(r.decisions).reduce((a, b) => a + b, 0);
    const cells = branches.map((b) => {
      const n = r.decisions[b] ?? 0;
      return `<td>${formatInteger(n)} <span class="note">${formatPercent(total === 0 ? 0 : n / total)}</span></td>`;
    });
    return `<tr><th scope="row">${escapeHtml(r.policy)}</th>${cells.join('')}</tr>`;
  });
  return (
    '<div class="table-wrap"><table>' +
    `<thead><tr><th scope="col">Policy</th>${head}</tr></thead>` +
    `<tbody>${rows.join('')}</tbody></table></div>` +
    '<p class="note">Each decision counted by the branch the policy took, as a router reports it ' +
    '(<code>fleetroute_decisions_total</code> in Prometheus, <code>decision</code> events): ' +
    'hits, misses, imbalance escapes, holders over their load bound.</p>'
  );
}

function section(id: string, title: string, body: string): string {
  return `<section id="${id}"><h2>${escapeHtml(title)}</h2>${body}</section>`;
}

function generated(at: Date | undefined): string {
  if (at === undefined || Number.isNaN(at.getTime())) return '';
  const iso = at.toISOString();
  return `<p class="meta">Generated ${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</p>`;
}

/**
 * Renders a comparison of routing policies as one self-contained HTML5 document: an overview
 * of workload and fleet, a summary table (best value per column in bold; the oracle, when
 * present, in a row of its own), charts of hit rate, time to first token (percentiles and
 * distribution), requests per worker, in-flight requests and waiting against running requests
 * over time, the run's settings (command line and version when {@link Comparison.run} is set)
 * and a glossary. When a run has admission figures ({@link PolicyRun.admission}), an
 * "Admission" section follows the summary: what admission did (and the limits in force, from
 * the recorded command line), each policy's requests by outcome, the queue wait, time to first
 * token by priority band, served throughput against capacity, and the tenants' shares (the 8
 * that sent the most, the rest summed); without admission figures the page has none of it.
 * Full-width charts are drawn twice, wide and narrow, and the page shows the one that fits the
 * screen.
 *
 * Every text from the data is escaped; numbers are formatted without the host locale, and the
 * output depends only on its arguments, so equal inputs give byte-identical pages. Missing and
 * non-finite values show as `—`; a comparison without runs renders its overview and a note.
 * Time series are cut to at most 300 points per line (the largest value per bucket) and 16,000
 * per panel, so size grows with the number of policies and not with the simulated duration:
 * about 2.0 MB for 10 policies × 64 workers × 10,000 samples.
 *
 * Cost: O(policies × workers × samples) time, plus O(policies × tenants) with admission;
 * output O(policies × min(workers × 300, 16,000)).
 *
 * @param comparison - what the simulator returned.
 * @param options - page title and generation time.
 * @returns the whole page, starting with `<!doctype html>`.
 *
 * @example
 * ```ts
 * import { writeFileSync } from 'node:fs';
 * writeFileSync('report.html', renderHtmlReport(comparison, { generatedAt: new Date() }));
 * ```
 *
 * @public
 */
export function renderHtmlReport(comparison: Comparison, options: HtmlReportOptions = {}): string {
  const c = comparison;
  const title = options.title ?? `fleetroute simulation: ${c.workload.name}`;
  const admission = admissionSection(c);
  const body =
    c.runs.length === 0
      ? '<p class="empty">No results: this comparison holds no policy runs.</p>'
      : section(
          'summary',
          'Summary',
          `${summaryTable(c)}<p class="note">Bold: the best value in each column.</p>${eventsNote(c)}`,
        ) +
        (admission === '' ? '' : section('admission', 'Admission', admission)) +
        section('hit-rate', 'Cache hit rate by policy', hitRateFigure(c)) +
        section('ttft', 'Time to first token', ttftFigure(c)) +
        section(
          'ttft-distribution',
          'Time to first token, distribution',
          ttftDistributionFigure(c),
        ) +
        (decisionsTable(c) === ''
          ? ''
          : section('decisions', 'Routing decisions by branch', decisionsTable(c))) +
        section('per-worker', 'Requests routed per worker', perWorkerFigure(c)) +
        section('in-flight', 'In flight per worker over time', inFlightFigure(c)) +
        section('queue', 'Waiting and running requests over time', queueFigure(c));
  return (
    '<!doctype html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n' +
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n' +
    '<meta name="color-scheme" content="light">\n' +
    `<title>${escapeHtml(title)}</title>\n<style>${REPORT_CSS}</style>\n</head>\n<body>\n` +
    `<header><h1>${escapeHtml(title)}</h1>${generated(options.generatedAt)}</header>\n` +
    `<main>\n${section('overview', 'Overview', overview(c))}\n${body}\n` +
    `${section('run', 'Run', runSection(c))}\n</main>\n${footer(admission !== '')}\n` +
    '</body>\n</html>\n'
  );
}
