/**
 * The warning codes: one typed union (`WarningCode`), one code per event. Every code written in
 * the sources is one of them, at the level it is documented at, and docs/observability.md lists
 * each of them once — so a new code, or a second name for an event, shows up here.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it, vi } from 'vitest';
import type { LogLevel, WarningCode } from '../../src/index.js';
import { Router, WorkerRegistry } from '../../src/index.js';

/** Every code and its level: the compiler checks that this names each code of the union once. */
const LEVELS = {
  FLEETROUTE_LEASE_LEAK: 'warn',
  FLEETROUTE_LISTENER_THREW: 'warn',
  FLEETROUTE_RETRY_HOOK: 'warn',
  FLEETROUTE_KV_DISCONNECTED: 'warn',
  FLEETROUTE_KV_GAP: 'warn',
  FLEETROUTE_KV_DROPPED: 'warn',
  FLEETROUTE_KV_RESTART: 'info',
  FLEETROUTE_KV_TARGET_THREW: 'error',
  FLEETROUTE_SHARED_STATE_DEGRADED: 'warn',
  FLEETROUTE_METRICS_MISSING: 'warn',
  FLEETROUTE_METRICS_TOO_LARGE: 'warn',
  FLEETROUTE_ANSWER_BROKE: 'warn',
  FLEETROUTE_DISAGG_FALLBACK: 'warn',
} as const satisfies Record<WarningCode, LogLevel>;

const SRC = fileURLToPath(new URL('../../src', import.meta.url));
const DOCS = fileURLToPath(new URL('../../docs/observability.md', import.meta.url));
const LOG_LEVELS: readonly string[] = ['debug', 'info', 'warn', 'error'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

interface CodeUse {
  readonly file: string;
  readonly code: string;
  /** The level literal passed before the code in the same call, when there is one. */
  readonly level: string | undefined;
}

/** Every string literal naming a `FLEETROUTE_…` code in the sources (comments aside). */
function codeUses(): CodeUse[] {
  const uses: CodeUse[] = [];
  for (const file of sources(SRC)) {
    const source = ts.createSourceFile(
      file,
      readFileSync(file, 'utf8'),
      ts.ScriptTarget.Latest,
      true,
    );
    const visit = (node: ts.Node): void => {
      if (ts.isStringLiteralLike(node) && /^FLEETROUTE_[A-Z_]+$/.test(node.text)) {
        const call = ts.isCallExpression(node.parent) ? node.parent : undefined;
        const args: readonly ts.Expression[] = call?.arguments ?? [];
        const at = args.indexOf(node as ts.Expression);
        const before = at > 0 ? args[at - 1] : undefined;
        const level =
          before !== undefined && ts.isStringLiteralLike(before) && LOG_LEVELS.includes(before.text)
            ? before.text
            : undefined;
        uses.push({ file: file.slice(SRC.length + 1), code: node.text, level });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return uses;
}

describe('warning codes', () => {
  it('every code in the sources is a WarningCode, written at its level', () => {
    const uses = codeUses();
    expect(uses.length).toBeGreaterThanOrEqual(10);
    for (const use of uses) {
      expect(Object.keys(LEVELS), `${use.file}: ${use.code}`).toContain(use.code);
      if (use.level !== undefined)
        expect(use.level, `${use.file}: ${use.code}`).toBe(LEVELS[use.code as WarningCode]);
    }
  });

  it('docs/observability.md lists every code once, with its level, and no other', () => {
    const rows = [
      ...readFileSync(DOCS, 'utf8').matchAll(/^\| `(FLEETROUTE_[A-Z_]+)` \| (\w+) \|/gm),
    ].map((m) => [m[1], m[2]]);
    expect(rows.map(([code]) => code).sort()).toEqual(Object.keys(LEVELS).sort());
    expect(Object.fromEntries(rows)).toEqual(LEVELS);
  });

  it('a listener that throws is one event, FLEETROUTE_LISTENER_THREW, from the registry and the router alike', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const router = new Router({
      registry,
      transport: { probe: async () => true },
      health: false,
      loadPolling: false,
      policy: 'round_robin',
    });
    const emit = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      registry.on('registered', () => {
        throw new Error('registry listener');
      });
      router.on('decision', () => {
        throw new Error('router listener');
      });
      await registry.register({ url: 'http://w0:8000', models: ['m'] });
      router.select({ model: 'm' });

      const codes = emit.mock.calls.map((call) => (call[1] as { code?: string }).code);
      expect(codes).toEqual(['FLEETROUTE_LISTENER_THREW', 'FLEETROUTE_LISTENER_THREW']);
    } finally {
      emit.mockRestore();
      await router.close();
      registry.close();
    }
  });
});
