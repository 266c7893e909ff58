/**
 * The metric table of docs/observability.md is the catalog: every metric registered has a row
 * with its type and labels, and every row is a metric registered.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { METRICS } from '../../src/prometheus/metric-catalog.js';

const DOC = readFileSync(new URL('../../docs/observability.md', import.meta.url), 'utf8');

/** `| name | type | labels | meaning |` rows of the Prometheus metric table. */
function rows(): Map<string, { type: string; labels: string[] }> {
  const table = new Map<string, { type: string; labels: string[] }>();
  for (const line of DOC.split('\n')) {
    if (!line.startsWith('| `fleetroute_')) continue;
    const [name, type, labels] = line
      .split('|')
      .slice(1, 4)
      .map((cell) => cell.trim());
    table.set(name!.replaceAll('`', ''), {
      type: type!.split(',')[0]!,
      labels: labels === '—' ? [] : labels!.split(',').map((l) => l.trim().replaceAll('`', '')),
    });
  }
  return table;
}

describe('metric catalog', () => {
  it('docs/observability.md lists every metric with its type and labels, and nothing else', () => {
    const documented = rows();
    const expected = new Map(
      Object.values(METRICS).map((spec) => [
        `fleetroute_${spec.name}`,
        { type: spec.kind, labels: [...spec.labels] },
      ]),
    );
    expect(documented).toEqual(expected);
  });

  it('names follow Prometheus conventions: counters end in _total, durations in _seconds', () => {
    for (const spec of Object.values(METRICS)) {
      expect(spec.name).toMatch(/^[a-z][a-z0-9_]*$/);
      if (spec.kind === 'counter') expect(spec.name).toMatch(/_total$/);
      else expect(spec.name).not.toMatch(/_total$/);
      if (spec.name.includes('duration') || spec.name.includes('backoff'))
        expect(spec.name).toMatch(/_seconds$/);
    }
  });
});

describe('examples/grafana-dashboard.json', () => {
  const dashboard = JSON.parse(
    readFileSync(new URL('../../examples/grafana-dashboard.json', import.meta.url), 'utf8'),
  ) as {
    panels: {
      id: number;
      title: string;
      gridPos: { x: number; y: number; w: number; h: number };
      targets: { expr: string; refId: string }[];
    }[];
  };
  const exprs = dashboard.panels.flatMap((p) => p.targets.map((t) => t.expr));

  it('queries only metrics fleetroute registers', () => {
    const known = new Set(Object.values(METRICS).map((spec) => `fleetroute_${spec.name}`));
    const used = exprs.flatMap((e) => [...e.matchAll(/fleetroute_[a-z_]+/g)].map((m) => m[0]));
    expect(used.length).toBeGreaterThan(0);
    for (const name of used)
      expect(known, name).toContain(name.replace(/_(bucket|sum|count)$/, ''));
  });

  it('has a panel for each of the three queries of the docs', () => {
    const section = DOC.slice(
      DOC.indexOf('### Three queries'),
      DOC.indexOf('### Label cardinality'),
    );
    const queries = section
      .slice(section.indexOf('```promql') + 9, section.lastIndexOf('```'))
      .split('\n\n')
      .map((block) =>
        block
          .split('\n')
          .filter((line) => !line.startsWith('#'))
          .join('\n')
          .trim(),
      );
    expect(queries).toHaveLength(3);
    for (const query of queries) expect(exprs).toContain(query);
  });
  it('has panels for time to first token (p50, p99 by model), in flight and prefilling per worker, and token rates', () => {
    const ttft = 'sum by (model, le) (rate(fleetroute_time_to_first_token_seconds_bucket[5m]))';
    expect(exprs).toContain(`histogram_quantile(0.5, ${ttft})`);
    expect(exprs).toContain(`histogram_quantile(0.99, ${ttft})`);
    const perWorker = dashboard.panels.find((p) =>
      p.targets.some((t) => t.expr === 'fleetroute_worker_prefilling_requests'),
    );
    expect(perWorker?.targets.map((t) => t.expr)).toContain('fleetroute_worker_in_flight_requests');
    for (const counter of ['prompt', 'completion', 'cached_prompt'])
      expect(exprs).toContain(`sum by (model) (rate(fleetroute_${counter}_tokens_total[5m]))`);
  });

  it('imports as laid out: unique panel ids, unique refIds per panel, no two panels overlapping', () => {
    const panels = dashboard.panels;
    expect(new Set(panels.map((p) => p.id)).size).toBe(panels.length);
    for (const p of panels)
      expect(new Set(p.targets.map((t) => t.refId)).size).toBe(p.targets.length);
    const overlap = (a: (typeof panels)[0]['gridPos'], b: (typeof panels)[0]['gridPos']) =>
      a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
    for (const [i, a] of panels.entries()) {
      expect(a.gridPos.x + a.gridPos.w).toBeLessThanOrEqual(24);
      for (const b of panels.slice(i + 1))
        expect(overlap(a.gridPos, b.gridPos), `${a.title} / ${b.title}`).toBe(false);
    }
  });
});
