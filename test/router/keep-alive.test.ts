/**
 * What a caller awaits from a `Router` holds the process open until it settles, though every
 * background timer of the router is `unref`'d; nothing else does, so an idle router still lets
 * the process exit. Each case runs as its own process (`fixtures/awaited-router.ts`).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const FIXTURE = fileURLToPath(new URL('fixtures/awaited-router.ts', import.meta.url));

/** Runs the fixture in `mode`; a process that does not end by itself within 30 s is killed. */
function run(mode: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', FIXTURE, mode]);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout: stdout.trim(), stderr });
    });
  });
}

describe('Router: awaited promises keep the process alive, an idle router does not', () => {
  it.each([
    ['ready', 'ready'],
    ['ready-closed', 'rejected CLOSED'],
    ['poll', 'polled: {"rounds":1,"polls":1,"reports":0,"failures":1}'],
    ['execute-backoff', 'executed 200 at attempt 2'],
  ])(
    '`%s`: the awaited promise settles and the script goes on (exit 0, not 13)',
    async (mode, out) => {
      const { code, stdout, stderr } = await run(mode);
      expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: out, stderr: '' });
    },
    40_000,
  );

  it.each([
    ['ready-no-close', 'ready'],
    ['idle', 'started'],
  ])(
    '`%s`: a router left open with nobody waiting lets the process exit by itself',
    async (mode, out) => {
      const { code, stdout, stderr } = await run(mode);
      expect({ code, stdout, stderr }).toEqual({ code: 0, stdout: out, stderr: '' });
    },
    40_000,
  );
});
