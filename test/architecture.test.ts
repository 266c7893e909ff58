/**
 * The layers of `src/` import only what docs/architecture.md allows, and no import cycle exists:
 * the table in the doc is the rule, and this test keeps the code (and the doc) true to it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** File → the source files it imports (relative specifiers only), with whether type-only. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sources(SRC)) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const line of text.split('\n')) {
      const from = line.indexOf(" from '.");
      if (!(line.startsWith('import') || line.startsWith('export') || line.startsWith('}')))
        continue;
      if (from < 0) continue;
      const specifier = line.slice(from + 7, line.indexOf("'", from + 8));
      targets.push(resolve(dirname(file), specifier.replace(/\.js$/, '.ts')));
    }
    graph.set(file, targets);
  }
  return graph;
}

/** The "may import" column of the doc's layer table. */
function allowedImports(): Map<string, Set<string>> {
  const doc = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8');
  const allowed = new Map<string, Set<string>>();
  for (const line of doc.split('\n')) {
    if (!line.startsWith('| `')) continue;
    const cells = line.split('|').map((c) => c.trim());
    const folder = cells[1]!.replaceAll('`', '');
    const may = cells[3]!.replaceAll('`', '');
    allowed.set(folder, new Set(may === '—' ? [] : may.split(',').map((m) => m.trim())));
  }
  return allowed;
}

const layerOf = (file: string): string => relative(SRC, file).split('/')[0]!;

describe('architecture', () => {
  const graph = importGraph();

  it('every folder of src/ is in the doc’s layer table', () => {
    const allowed = allowedImports();
    const folders = new Set([...graph.keys()].map(layerOf).filter((f) => !f.endsWith('.ts')));
    expect([...folders].sort()).toEqual([...allowed.keys()].sort());
  });

  it('each layer imports only the layers the doc allows', () => {
    const allowed = allowedImports();
    const violations: string[] = [];
    for (const [file, targets] of graph) {
      const from = layerOf(file);
      if (from.endsWith('.ts')) continue; // the entry point src/index.ts exports every layer
      for (const target of targets) {
        const to = layerOf(target);
        if (to !== from && !allowed.get(from)?.has(to))
          violations.push(`${relative(SRC, file)} → ${relative(SRC, target)}`);
      }
    }
    expect(violations).toEqual([]);
  });

  it('no import cycle, not even a type-only one', () => {
    const cycles: string[] = [];
    const state = new Map<string, 'visiting' | 'done'>();
    const stack: string[] = [];
    const visit = (file: string): void => {
      state.set(file, 'visiting');
      stack.push(file);
      for (const target of graph.get(file) ?? []) {
        if (!graph.has(target)) continue;
        if (state.get(target) === 'visiting') {
          const cycle = stack.slice(stack.indexOf(target)).map((f) => relative(SRC, f));
          cycles.push(cycle.join(' → '));
        } else if (!state.has(target)) visit(target);
      }
      stack.pop();
      state.set(file, 'done');
    };
    for (const file of graph.keys()) if (!state.has(file)) visit(file);
    expect(cycles).toEqual([]);
  });
});
