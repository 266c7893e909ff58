/**
 * The house's size limits (docs/architecture.md, "Sizes"): no file of `src/` over 600 lines, no
 * function over 120. Read with the TypeScript parser, so a function is what the language says it
 * is (declarations, methods, accessors, constructors, arrows and function expressions).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SRC = join(ROOT, 'src');
const MAX_FILE_LINES = 600;
const MAX_FUNCTION_LINES = 120;

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** Every function of `file` longer than `limit` lines, as `path:line name (n lines)`. */
function longFunctions(file: string, text: string, limit: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const lineOf = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line;
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body !== undefined) {
      const first = lineOf(node.getStart(source));
      const lines = lineOf(node.getEnd()) - first + 1;
      if (lines > limit) {
        const named =
          node.name ?? (ts.isVariableDeclaration(node.parent) ? node.parent.name : undefined);
        const name = named !== undefined ? named.getText(source) : '(anonymous)';
        found.push(`${relative(ROOT, file)}:${first + 1} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('sizes', () => {
  const files = sources(SRC).map((file) => ({ file, text: readFileSync(file, 'utf8') }));

  it(`no file of src/ is over ${MAX_FILE_LINES} lines`, () => {
    const over = files
      .map(({ file, text }) => ({ file: relative(ROOT, file), lines: text.split('\n').length - 1 }))
      .filter(({ lines }) => lines > MAX_FILE_LINES);
    expect(over).toEqual([]);
  });

  it(`no function of src/ is over ${MAX_FUNCTION_LINES} lines`, () => {
    const over = files.flatMap(({ file, text }) => longFunctions(file, text, MAX_FUNCTION_LINES));
    expect(over).toEqual([]);
  });

  it('the function count sees a long function (the rule is not vacuous)', () => {
    const body = Array.from({ length: 130 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const text = `class C {\n  m(): void {\n${body}\n  }\n}\nconst f = () => {\n${body}\n};\n`;
    expect(longFunctions(join(SRC, 'x.ts'), text, MAX_FUNCTION_LINES)).toEqual([
      'src/x.ts:2 m (132 lines)',
      'src/x.ts:135 f (132 lines)',
    ]);
  });
});
