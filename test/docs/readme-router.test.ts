/**
 * The README's `Router` snippet, run as a script of its own against local stand-in engines, ends
 * by itself with code 0: `await router.ready()` holds the process open while it waits, though
 * every timer of the router is `unref`'d.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type StandInEngine, startStandInEngine } from '../support/vllm-engine.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** The ```ts block of a markdown text whose code calls `router.ready(` (a line scan). */
function readySnippet(markdown: string): string {
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (lines[i]!.trim() !== '```ts') continue;
    const body: string[] = [];
    for (i++; i < lines.length && lines[i]!.trim() !== '```'; i++) body.push(lines[i]!);
    const code = body.join('\n');
    if (code.includes('router.ready(')) return code;
  }
  throw new Error('README.md has no ```ts block that calls router.ready(');
}

/** Worker addresses: `http(s)://host[:port]` and bare `a.b.c.d:port`. */
const ADDRESS = /\bhttps?:\/\/[\w.-]+(?::\d+)?|\b\d{1,3}(?:\.\d{1,3}){3}:\d+/g;
/** `model: '…'` and `models: ['…', …]`: the model ids the snippet names. */
const MODEL_FIELD = /\bmodels?:\s*(\[[^\]]*\]|'[^']*'|"[^"]*")/g;
const QUOTED = /'([^']*)'|"([^"]*)"/g;

/** Distinct matches of `pattern` in `code`, in order of first appearance. */
function distinct(code: string, pattern: RegExp): string[] {
  return [...new Set([...code.matchAll(pattern)].map((m) => m[0]))];
}

/** The model ids the snippet names, distinct. */
function modelsOf(code: string): string[] {
  const ids = new Set<string>();
  for (const field of code.matchAll(MODEL_FIELD))
    for (const quoted of field[1]!.matchAll(QUOTED)) ids.add(quoted[1] ?? quoted[2]!);
  return [...ids];
}

/** The snippet with its addresses replaced by the engines' URLs and its models by theirs. */
function localised(code: string, engines: readonly StandInEngine[], addresses: string[]): string {
  let out = code;
  addresses.forEach((address, i) => {
    out = out.split(address).join(engines[i]!.url);
  });
  for (const id of modelsOf(code)) {
    const model = engines[0]!.model;
    out = out.split(`'${id}'`).join(`'${model}'`).split(`"${id}"`).join(`"${model}"`);
  }
  return out;
}

/** Runs a script with `node --import tsx` from the repository root. */
function runScript(file: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    // A script that neither ends nor fails is killed, and the test fails on its code.
    const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('README: the Router snippet', () => {
  const engines: StandInEngine[] = [];
  let dir: string | undefined;
  afterAll(async () => {
    for (const engine of engines) await engine.stop();
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
  });

  it('run as a script against local engines, it prints an answer and exits by itself with code 0', async () => {
    // Arrange: the snippet as a user would paste it, pointed at local engines.
    const code = readySnippet(readFileSync(join(ROOT, 'README.md'), 'utf8'));
    const addresses = distinct(code, ADDRESS);
    expect(addresses.length).toBeGreaterThan(0);
    for (let i = 0; i < addresses.length; i++) engines.push(await startStandInEngine());
    mkdirSync(join(ROOT, 'scratch'), { recursive: true });
    dir = mkdtempSync(join(ROOT, 'scratch', 'readme-router-'));
    const file = join(dir, 'router-snippet.ts');
    writeFileSync(file, localised(code, engines, addresses));

    // Act
    const { code: exitCode, stdout, stderr } = await runScript(file);

    // Assert: exit code 13 is a top-level await left unsettled when nothing held the process.
    expect({ exitCode, stderr }).toEqual({ exitCode: 0, stderr: '' });
    expect(stdout.trim()).not.toBe('');
    expect(engines.reduce((sum, engine) => sum + engine.requests.length, 0)).toBeGreaterThan(0);
  }, 90_000);
});
