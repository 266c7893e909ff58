/**
 * The published declarations carry the public API and nothing else. They are built here the way
 * `npm run build` builds them (the same tsup entries, `@internal` stripped), into a temporary
 * folder, and searched for every internal name: a name declared in a module marked
 * `@module @internal`, or a member marked `@internal`, that is not also a public export. They must
 * also compile on their own: a public type that refers to a stripped one breaks them.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'tsup';
import ts from 'typescript';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import config from '../../tsup.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIBRARY = (Array.isArray(config) ? config[0] : config) as Parameters<typeof build>[0] & {
  entry: Record<string, string>;
};
/** Every entry point's source, as the build lists them (test/package/entry-points.test.ts ties them to `exports`). */
const ENTRIES = Object.values(LIBRARY.entry);

/** Every `.ts` file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

function hasInternalTag(node: ts.Node): boolean {
  return ts.getJSDocTags(node).some((tag) => tag.tagName.text === 'internal');
}

/** The name of a declaration or member, when it has a plain one. */
function nameOf(node: ts.Node): string | undefined {
  const name = (node as ts.Node & { name?: ts.Node }).name;
  if (name === undefined) return undefined;
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) return name.text;
  return undefined;
}

function isExported(node: ts.Node): boolean {
  return (
    ts.canHaveModifiers(node) &&
    ts.getModifiers(node)?.some((m) => m.kind === ts.SyntaxKind.ExportKeyword) === true
  );
}

/**
 * Internal names in the sources: top-level names exported by `@module @internal` files or marked
 * `@internal`, and `Class.member` for members marked `@internal`.
 */
function internalNames(): Set<string> {
  const names = new Set<string>();
  for (const file of sources(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8');
    const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
    const header = text.startsWith('/**') ? text.slice(0, text.indexOf('*/')) : '';
    const moduleInternal = header.includes('@module') && header.includes('@internal');
    for (const statement of source.statements) {
      const internal = (moduleInternal && isExported(statement)) || hasInternalTag(statement);
      const name = nameOf(statement);
      if (internal && name !== undefined) names.add(name);
      if (internal && ts.isVariableStatement(statement)) {
        for (const d of statement.declarationList.declarations)
          if (ts.isIdentifier(d.name)) names.add(d.name.text);
      }
      if ((ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement)) && name) {
        for (const member of statement.members) {
          const m = nameOf(member);
          if (m !== undefined && hasInternalTag(member)) names.add(`${name}.${m}`);
        }
      }
    }
  }
  return names;
}

/** What the declarations declare: top-level names, and `Class.member` for class members. */
function declaredNames(text: string): Set<string> {
  const names = new Set<string>();
  const source = ts.createSourceFile('index.d.ts', text, ts.ScriptTarget.Latest, true);
  for (const statement of source.statements) {
    const name = nameOf(statement);
    if (ts.isVariableStatement(statement)) {
      for (const d of statement.declarationList.declarations)
        if (ts.isIdentifier(d.name)) names.add(d.name.text);
    }
    if (name === undefined) continue;
    names.add(name);
    if (ts.isClassDeclaration(statement) || ts.isInterfaceDeclaration(statement)) {
      for (const member of statement.members) {
        const m = nameOf(member);
        if (m !== undefined) names.add(`${name}.${m}`);
      }
    }
  }
  return names;
}

/** Every module a declaration file refers to: `import`/`export … from`, and `import('…')` types. */
function moduleSpecifiers(text: string): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (
      (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) &&
      node.moduleSpecifier !== undefined &&
      ts.isStringLiteral(node.moduleSpecifier)
    )
      out.push(node.moduleSpecifier.text);
    if (
      ts.isImportTypeNode(node) &&
      ts.isLiteralTypeNode(node.argument) &&
      ts.isStringLiteral(node.argument.literal)
    )
      out.push(node.argument.literal.text);
    ts.forEachChild(node, visit);
  };
  visit(ts.createSourceFile('index.d.ts', text, ts.ScriptTarget.Latest, true));
  return out;
}

/** Names the public entry points export (an internal module may hold a public type too). */
function publicNames(): Set<string> {
  const names = new Set<string>();
  for (const entry of ENTRIES) {
    const text = readFileSync(join(ROOT, entry), 'utf8');
    for (const match of text.matchAll(/export (?:type )?\{([^}]*)\}/g)) {
      for (const part of match[1]!.split(',')) {
        const name = part
          .trim()
          .split(/\s+as\s+/)
          .pop()!
          .replace(/^type\s+/, '');
        if (name !== '') names.add(name);
      }
    }
  }
  return names;
}

describe('published declarations', { timeout: 120_000 }, () => {
  let outDir = '';
  let declarations = '';

  const declared = new Set<string>();

  beforeAll(async () => {
    // Inside the project, so the declarations resolve their dependencies' types from node_modules.
    outDir = mkdtempSync(join(ROOT, 'node_modules', '.fleetroute-dts-'));
    await build({
      ...LIBRARY,
      outDir,
      dts: { ...(LIBRARY.dts as object), only: true },
      silent: true,
    });
    for (const name of readdirSync(outDir)) {
      if (!name.endsWith('.d.ts') && !name.endsWith('.d.cts')) continue;
      const text = readFileSync(join(outDir, name), 'utf8');
      declarations += `${text}\n`;
      for (const declaredName of declaredNames(text)) declared.add(declaredName);
    }
  }, 180_000); // a declaration build takes tens of seconds on a loaded 2-core machine

  afterAll(() => {
    rmSync(outDir, { recursive: true, force: true });
  });

  it('are built', () => {
    expect(declarations).toContain('declare class WorkerRegistry');
    expect(declarations).toContain('declare class Router');
    expect(declarations).toContain('declare class RedisSharedStore');
  });

  it('import no optional peer, so a project without it still type-checks', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    const peers = Object.keys(pkg.peerDependencies);
    expect(peers).toContain('ioredis');
    const named: string[] = [];
    for (const name of readdirSync(outDir)) {
      if (!name.endsWith('.d.ts') && !name.endsWith('.d.cts')) continue;
      const text = readFileSync(join(outDir, name), 'utf8');
      for (const specifier of moduleSpecifiers(text))
        if (peers.some((peer) => specifier === peer || specifier.startsWith(`${peer}/`)))
          named.push(`${name}: ${specifier}`);
    }
    expect(named).toEqual([]);
  });

  it('declare no internal name, and say nothing marked @internal', () => {
    const exported = publicNames();
    const internal = [...internalNames()].filter((name) => !exported.has(name));
    expect(internal).toEqual(
      expect.arrayContaining([
        'WorkerRuntime',
        'LeaseState',
        'workerInternals',
        'CircuitBreaker.settle',
      ]),
    );
    const leaked = internal.filter((name) => declared.has(name));
    expect(leaked).toEqual([]);
    expect(declarations).not.toContain('@internal');
  });

  it('compile on their own: no public type refers to a stripped internal one', () => {
    const files = readdirSync(outDir)
      .filter((name) => name.endsWith('.d.ts') || name.endsWith('.d.cts'))
      .map((name) => join(outDir, name));
    const program = ts.createProgram(files, {
      noEmit: true,
      strict: true,
      skipLibCheck: false,
      types: [],
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((d) => d.file?.fileName.startsWith(outDir) === true)
      .map((d) => {
        const { line } = d.file!.getLineAndCharacterOfPosition(d.start ?? 0);
        const where = `${d.file!.fileName.slice(outDir.length + 1)}:${line + 1}`;
        return `${where} ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`;
      });
    expect(problems).toEqual([]);
  });

  it('give the classes users must not construct a private constructor', () => {
    for (const name of ['Worker', 'WorkerLease', 'WorkerRegistry', 'CircuitBreaker', 'HashRing']) {
      const body = declarations.split(`declare class ${name} {`)[1] ?? '';
      const classBody = body.slice(0, body.indexOf('\n}'));
      expect(classBody, name).toMatch(/private constructor\(\);/);
    }
    // A class that implements an interface: its body starts after the `implements` clause.
    const body =
      declarations.split('declare class RedisSharedStore implements SharedStore {')[1] ?? '';
    expect(body.slice(0, body.indexOf('\n}')), 'RedisSharedStore').toMatch(
      /private constructor\(\);/,
    );
  });
});
