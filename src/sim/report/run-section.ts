/**
 * The report's "Run" section: what reproduces the comparison — the command line and version
 * (when recorded), the workload's parameters, the arrivals, seed and routers, and every field
 * of the fleet model.
 *
 * @module
 * @internal
 */
import type { Comparison } from '../result.js';
import { describeDisaggregation } from '../text-table.js';
import { escapeHtml, formatInteger, formatTickValue } from './format.js';

/** A value of the fleet model or the workload's parameters, as shown. */
function shown(value: unknown): string {
  if (typeof value === 'number') {
    if (value === Number.POSITIVE_INFINITY) return 'unbounded';
    return Number.isFinite(value) ? formatTickValue(value) : String(value);
  }
  return String(value);
}

/** @internal `argv` as one shell line: words quoted with `'…'` when they hold anything unusual. */
export function shellLine(argv: readonly string[]): string {
  return argv
    .map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`))
    .join(' ');
}

function entries(record: object): string {
  const rows = Object.entries(record).map(
    ([key, value]) =>
      `<tr><th scope="row"><code>${escapeHtml(key)}</code></th><td>${escapeHtml(shown(value))}</td></tr>`,
  );
  return rows.length === 0
    ? '<p class="note">none</p>'
    : `<table class="settings"><tbody>${rows.join('')}</tbody></table>`;
}

/**
 * @internal The body of the "Run" section: a definition list, every text escaped. The command
 * and version appear only when {@link Comparison.run} is set. Cost: O(fields).
 */
export function runSection(c: Comparison): string {
  const items: [string, string][] = [];
  if (c.run !== undefined) {
    items.push(['Command', `<code class="command">${escapeHtml(shellLine(c.run.argv))}</code>`]);
    items.push(['Version', `fleetroute ${escapeHtml(c.run.version)}`]);
  }
  items.push([
    'Workload',
    `<code>${escapeHtml(c.workload.name)}</code>, ${formatInteger(c.workload.requests)} requests` +
      entries(c.workload.parameters),
  ]);
  items.push(['Arrivals', escapeHtml(c.arrivals)]);
  items.push(['Seed', escapeHtml(String(c.seed))]);
  items.push(['Routers', escapeHtml(formatInteger(c.routers))]);
  if (c.kvEvents !== undefined) {
    items.push([
      'KV events',
      `delay ${escapeHtml(formatTickValue(c.kvEvents.delayMs))} ms, loss ${escapeHtml(shown(c.kvEvents.loss))}`,
    ]);
  }
  if (c.engineRestarts !== undefined) {
    items.push(['Engine restarts', escapeHtml(formatInteger(c.engineRestarts))]);
  }
  items.push(['Fleet', entries(fleetShown(c))]);
  if (c.disaggregation !== undefined) {
    const d = c.disaggregation;
    const pools = `${d.prefillWorkers} prefill + ${d.decodeWorkers} decode workers`;
    items.push(['Prefill/decode', escapeHtml(`${pools}; ${describeDisaggregation(d)}`)]);
  }
  const body = items.map(([term, text]) => `<dt>${term}</dt><dd>${text}</dd>`).join('');
  return `<dl class="run">${body}</dl>`;
}

/** The fleet model as shown: its adapter slots only when some run served LoRA adapters. */
function fleetShown(c: Comparison): object {
  if (c.runs.some((run) => run.adapters !== undefined)) return c.fleet;
  const { maxLoras: _slots, adapterLoadMs: _load, ...rest } = c.fleet;
  return rest;
}
