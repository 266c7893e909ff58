/**
 * `fleetroute simulate --shared-state`: its flags, their rules, and the rows they add.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseSimulateArgs } from '../../src/cli/simulate-options.js';
import { runCli } from '../support/cli.js';
import { freePort } from '../support/redis-server.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetroute-shared-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SMALL = ['--groups', '4', '--prompts-per-group', '4', '--workers', '2', '--threads', '1'];

describe('fleetroute simulate --shared-state', () => {
  it('is off by default; reads memory, a Redis URL and the refresh', () => {
    expect(parseSimulateArgs([])).toMatchObject({ sharedState: undefined, sharedRefreshMs: 100 });
    expect(parseSimulateArgs(['--shared-state', 'memory']).sharedState).toBe('memory');
    expect(
      parseSimulateArgs(['--shared-state', 'redis://127.0.0.1:6379', '--shared-refresh-ms', '50']),
    ).toMatchObject({ sharedState: 'redis://127.0.0.1:6379', sharedRefreshMs: 50 });
  });

  it.each([
    [['--shared-state', 'disk'], /--shared-state must be memory or a redis:\/\/ URL/],
    [['--shared-refresh-ms', '50'], /--shared-refresh-ms needs --shared-state/],
    [['--shared-state', 'memory', '--shared-refresh-ms', '0'], /--shared-refresh-ms/],
  ])('refuses %j on one line, exit code 2', async (args, message) => {
    const { code, stdout, stderr } = await runCli(dir, 'simulate', ...args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr.split('\n')).toHaveLength(2);
  });

  it('adds a +shared row beside each K-router row, and each policy at 1 router', async () => {
    const { code, stdout } = await runCli(
      dir,
      'simulate',
      ...SMALL,
      '--policies',
      'round_robin,cache_aware',
      '--routers',
      '2',
      '--shared-state',
      'memory',
      '--no-report',
      '--quiet',
    );
    expect(code).toBe(0);
    const rows = stdout
      .split('\n')
      .filter((l) => /^(round_robin|cache_aware|greedy-oracle)/.test(l))
      .map((l) => l.split(/ {2,}/)[0]);
    expect(rows).toEqual([
      'round_robin (1 router)',
      'round_robin',
      'round_robin+shared',
      'cache_aware (1 router)',
      'cache_aware',
      'cache_aware+shared',
      'greedy-oracle',
    ]);
  });

  it('refuses a Redis nobody answers on with one line and exit code 1, printing no row', async () => {
    // A port just closed: nothing listens on it.
    const port = await freePort();
    const run = promisify(execFile)(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/fleetroute.ts',
        'simulate',
        ...SMALL,
        '--policies',
        'round_robin',
        '--shared-state',
        `redis://user:secret@127.0.0.1:${port}`,
        '--no-report',
        '--quiet',
      ],
      { timeout: 60_000 },
    );

    const failure = await run.then(
      () => undefined,
      (error: { code: number; stdout: string; stderr: string }) => error,
    );

    expect(failure?.code).toBe(1);
    expect(failure?.stdout).toBe('');
    const lines = failure!.stderr.split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(
      new RegExp(
        `^fleetroute: shared state: no Redis answered at redis://127\\.0\\.0\\.1:${port} \\(`,
      ),
    );
    expect(lines[0]).not.toContain('secret');
  });
});
