/**
 * `fleetroute simulate --kv-events`: its flags, their rules, and the rows they add to the table
 * and the report.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SIMULATE_FLAGS } from '../../src/cli/simulate-flags.js';
import { parseSimulateArgs } from '../../src/cli/simulate-options.js';
import { runCli } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetroute-kv-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const SMALL = ['--groups', '4', '--prompts-per-group', '4', '--workers', '2', '--threads', '1'];

describe('fleetroute simulate --kv-events', () => {
  it('is off by default, with the library defaults for delay, loss and restarts', () => {
    const command = parseSimulateArgs([]);
    expect(command).toMatchObject({
      kvEvents: false,
      kvEventDelayMs: 5,
      kvEventLoss: 0,
      engineRestarts: 0,
    });
    expect(SIMULATE_FLAGS['kv-event-delay-ms'].fallback).toBe(5);
  });

  it('reads the delay, the loss and the restarts', () => {
    const command = parseSimulateArgs([
      '--kv-events',
      '--kv-event-delay-ms',
      '50',
      '--kv-event-loss',
      '0.01',
      '--engine-restarts',
      '3',
    ]);
    expect(command).toMatchObject({
      kvEvents: true,
      kvEventDelayMs: 50,
      kvEventLoss: 0.01,
      engineRestarts: 3,
    });
    // Restarts apply without events too (the routers are then not told).
    expect(parseSimulateArgs(['--engine-restarts', '2']).engineRestarts).toBe(2);
  });

  it.each([
    [['--kv-event-delay-ms', '5'], /--kv-event-delay-ms needs --kv-events/],
    [['--kv-event-loss', '0.1'], /--kv-event-loss needs --kv-events/],
    [['--kv-events', '--kv-event-loss', '1.5'], /--kv-event-loss/],
    [['--kv-events', '--kv-event-delay-ms', '-1'], /--kv-event-delay-ms/],
    [['--engine-restarts', '-1'], /--engine-restarts/],
    [['--engine-restarts', '1.5'], /--engine-restarts/],
    [['--kv-events', '--policies', 'round_robin'], /--kv-events compares cache_aware/],
  ])('refuses %j on one line, exit code 2', async (args, message) => {
    const { code, stdout, stderr } = await runCli(dir, 'simulate', ...args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr.split('\n')).toHaveLength(2);
  });

  it('refuses a block size that is no multiple of the page size, exit code 2', async () => {
    const { code, stderr } = await runCli(
      dir,
      'simulate',
      ...SMALL,
      '--kv-events',
      '--block-size',
      '12',
      '--no-report',
      '--quiet',
    );
    expect(code).toBe(2);
    expect(stderr).toMatch(/blockSize \(12\) must equal cache_aware's pageSize \(16\)/);
  });

  it('adds cache_aware+events rows, at 1 router and at K, to the table and the report', async () => {
    const { code, stdout } = await runCli(
      dir,
      'simulate',
      ...SMALL,
      '--policies',
      'round_robin,cache_aware',
      '--routers',
      '2',
      '--kv-events',
      '--engine-restarts',
      '1',
      '--quiet',
    );
    expect(code).toBe(0);
    const rows = stdout
      .split('\n')
      .filter((l) => /^(round_robin|cache_aware|greedy-oracle)/.test(l))
      .map((l) => l.split(/ {2,}/)[0]);
    expect(rows).toEqual([
      'round_robin',
      'cache_aware (1 router)',
      'cache_aware+events (1 router)',
      'cache_aware',
      'cache_aware+events',
      'greedy-oracle',
    ]);
    expect(stdout).toMatch(/^kv events .*5 ms late; 1 engine restart/m);
    const html = await readFile(join(dir, 'fleetroute-report.html'), 'utf8');
    expect(html).toContain('cache_aware+events (1 router)');
    expect(html).toContain('Rows marked “(1 router)” ran with one router');
    expect(html).toContain('<dt>KV events</dt>');
  });
});
