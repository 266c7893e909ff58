/**
 * The TypeScript snippets of the docs compile under `strict`, against the package's own types:
 * a snippet a user copies must not need fixing first. Each ```ts block is its own module (top-level
 * await allowed), importing from `fleetroute`, `fleetroute/http`, `fleetroute/kv-events`,
 * `fleetroute/prometheus`, `fleetroute/dns` or `fleetroute/sim`.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** Docs whose every ```ts snippet must compile. */
const DOCS = [
  'README.md',
  'docs/router.md',
  'docs/resilience.md',
  'docs/registry.md',
  'docs/hash-ring.md',
  'docs/cache-aware.md',
  'docs/http-transport.md',
  'docs/simulator.md',
  'docs/policies.md',
  'docs/lora.md',
  'docs/quality.md',
  'docs/kv-events.md',
  'docs/observability.md',
  'docs/redis.md',
  'docs/discovery.md',
  'docs/openai.md',
  'docs/admission.md',
];

interface Snippet {
  readonly doc: string;
  /** 1-based line of the opening fence. */
  readonly line: number;
  readonly code: string;
}

/** The ```ts blocks of a markdown file (a line-by-line scan, no regex over the whole text). */
function snippetsOf(doc: string, text: string): Snippet[] {
  const snippets: Snippet[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```ts') continue;
    // A block right after `<!-- not type-checked: … -->` needs a package fleetroute does not
    // ship with (the comment says which); it is skipped.
    const skipped = i > 0 && lines[i - 1]!.trim().startsWith('<!-- not type-checked');
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) body.push(lines[i]!);
    if (!skipped) snippets.push({ doc, line: start + 1, code: body.join('\n') });
  }
  return snippets;
}

const OPTIONS: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts'],
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  types: ['node'],
  skipLibCheck: true,
  baseUrl: ROOT,
  paths: {
    fleetroute: ['src/index.ts'],
    'fleetroute/http': ['src/transport/http/index.ts'],
    'fleetroute/sim': ['src/sim/index.ts'],
    'fleetroute/kv-events': ['src/kv-events/index.ts'],
    'fleetroute/opentelemetry': ['src/opentelemetry/index.ts'],
    'fleetroute/prometheus': ['src/prometheus/index.ts'],
    'fleetroute/redis': ['src/redis/index.ts'],
    'fleetroute/dns': ['src/dns/index.ts'],
    'fleetroute/openai': ['src/openai/index.ts'],
  },
};

/** Type-checks every snippet in one program; returns the diagnostics per snippet. */
function check(snippets: readonly Snippet[]): Map<Snippet, string[]> {
  const files = new Map<string, Snippet>();
  snippets.forEach((snippet, i) => {
    const isModule = /^\s*(import|export) /m.test(snippet.code);
    files.set(`${ROOT}__snippets__/snippet-${i}.ts`, {
      ...snippet,
      code: isModule ? snippet.code : `${snippet.code}\nexport {};\n`,
    });
  });
  const host = ts.createCompilerHost(OPTIONS);
  const readFile = host.readFile.bind(host);
  const fileExists = host.fileExists.bind(host);
  host.readFile = (name) => files.get(name)?.code ?? readFile(name);
  host.fileExists = (name) => files.has(name) || fileExists(name);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, version, ...rest) => {
    const snippet = files.get(name);
    return snippet === undefined
      ? getSourceFile(name, version, ...rest)
      : ts.createSourceFile(name, snippet.code, version, true);
  };
  const program = ts.createProgram([...files.keys()], OPTIONS, host);
  const result = new Map<Snippet, string[]>();
  for (const [name, snippet] of files) {
    const source = program.getSourceFile(name)!;
    const diagnostics = [
      ...program.getSyntacticDiagnostics(source),
      ...program.getSemanticDiagnostics(source),
    ];
    result.set(
      snippet,
      diagnostics.map((d) => {
        const { line } = source.getLineAndCharacterOfPosition(d.start ?? 0);
        const message = ts.flattenDiagnosticMessageText(d.messageText, '\n');
        return `${snippet.doc}:${snippet.line + line + 1}: TS${d.code} ${message}`;
      }),
    );
  }
  return result;
}

describe('doc snippets compile under strict', () => {
  const snippets = DOCS.flatMap((doc) => snippetsOf(doc, readFileSync(`${ROOT}${doc}`, 'utf8')));

  it('finds the snippets', () => {
    expect(snippets.length).toBeGreaterThan(0);
  });

  it('every snippet type-checks', () => {
    const errors = [...check(snippets).values()].flat();
    expect(errors).toEqual([]);
  });

  it('a snippet with a type error is reported (the check is not vacuous)', () => {
    const broken: Snippet = {
      doc: 'broken.md',
      line: 1,
      code: "import { Router } from 'fleetroute';\nconst r: Router = 5;\n",
    };
    expect([...check([broken]).values()].flat()).toEqual([
      expect.stringMatching(/^broken\.md:3: TS2322 /),
    ]);
  });
});
