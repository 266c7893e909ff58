/**
 * `fleetroute simulate`: what it prints, what it writes, and how it refuses bad input (one line,
 * exit code 2).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_POLICIES } from '../../src/sim/index.js';
import { runCli } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetroute-cli-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runCli(dir, ...args);

const SMALL = ['--groups', '4', '--prompts-per-group', '4', '--workers', '2'];

describe('fleetroute simulate', () => {
  it('prints the comparison table, one row per policy, and writes the HTML report it names', async () => {
    const { code, stdout, stderr } = await cli(
      'simulate',
      ...SMALL,
      '--policies',
      'round_robin,cache_aware',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/^workload {2}shared-prefix: 4 groups × 4 prompts/);
    expect(stdout).toMatch(/^round_robin /m);
    expect(stdout).toMatch(/^cache_aware /m);
    expect(stdout).not.toMatch(/^random /m);
    const path = /report: (.+)\n/.exec(stdout)![1]!;
    expect(path).toBe(join(dir, 'fleetroute-report.html'));
    const html = await readFile(path, 'utf8');
    expect(html).toMatch(/^<!doctype html>/i);
    expect(html).toContain('cache_aware');
    expect(stderr).toMatch(/round_robin +done in/); // progress, one line per policy off a terminal
  });

  it('--json writes the results; --no-report writes no HTML; --quiet prints no progress', async () => {
    const { code, stdout, stderr } = await cli(
      'simulate',
      ...SMALL,
      '--policies',
      'random',
      '--no-report',
      '--json',
      'out.json',
      '--quiet',
    );
    expect(code).toBe(0);
    expect(stdout).not.toContain('report:');
    expect(stderr).toBe('');
    const json = JSON.parse(await readFile(join(dir, 'out.json'), 'utf8'));
    expect(json.runs[0].policy).toBe('random');
    expect(json.workload.requests).toBe(16);
  });

  it('--admission adds the served / rejected columns and JSON figures; its flags need it', async () => {
    const { code, stdout } = await cli(
      'simulate',
      ...SMALL,
      '--policies',
      'round_robin',
      '--no-report',
      '--quiet',
      '--load',
      '3',
      '--admission',
      '--admission-max-prefilling',
      '1',
      '--low-priority-share',
      '0.5',
      '--tenants',
      '3',
      '--heavy-tenant-factor',
      '10',
      '--json',
      'out.json',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/served +rejected +wait p99/);
    const json = JSON.parse(await readFile(join(dir, 'out.json'), 'utf8'));
    const admission = json.runs[0].admission;
    const rejected =
      admission.rejected.shed + admission.rejected.queue_full + admission.rejected.timeout;
    expect(admission.served + rejected).toBe(16);
    const plain = await cli(
      'simulate',
      ...SMALL,
      '--policies',
      'round_robin',
      '--no-report',
      '--quiet',
    );
    expect(plain.stdout).not.toMatch(/served/);
    for (const args of [
      ['--admission-max-wait-ms', '100'],
      ['--admission-max-prefilling', '2'],
      ['--heavy-tenant-factor', '5'],
      ['--skip-low-priority'],
    ]) {
      const refused = await cli('simulate', ...SMALL, ...args);
      expect(refused.code).toBe(2);
      expect(refused.stderr).toMatch(/needs --(admission|tenants|low-priority-share)/);
    }
    // A wait the router would refuse is refused as a usage error, before any run.
    const zero = await cli('simulate', ...SMALL, '--admission', '--admission-max-wait-ms', '0');
    expect(zero.code).toBe(2);
    expect(zero.stderr).toMatch(/--admission-max-wait-ms/);
  });

  it('runs each workload, arrival process and the multi-router mode', async () => {
    for (const args of [
      ['--workload', 'chat', '--users', '3', '--rounds', '2'],
      ['--workload', 'agent', '--users', '6', '--rounds', '2', '--think-ms', '500'],
      ['--workload', 'agent', '--users', '6', '--arrival', 'closed', '--concurrency', '3'],
      [
        '--trace',
        'test/sim/fixtures/mooncake-sample.jsonl',
        '--arrival',
        'closed',
        '--concurrency',
        '32',
      ],
      ['--trace', 'test/sim/fixtures/mooncake-sample.jsonl', '--routing-key', 'session'],
      [...SMALL, '--block-size', '32', '--batch-tokens', '2048', '--prefill-tokens-per-s', '4000'],
      ['--workload', 'hot-prefix', '--requests', '20', '--arrival', 'all'],
      ['--workload', 'zero-reuse', '--requests', '20', '--arrival', 'closed', '--concurrency', '4'],
      ['--trace', 'test/sim/fixtures/mooncake-sample.jsonl', '--speedup', '5'],
      [...SMALL, '--routers', '2', '--rate', '5', '--cache-tokens', 'inf'],
    ]) {
      const trace =
        args[0] === '--trace' ? [args[0], join(process.cwd(), args[1]!), ...args.slice(2)] : args;
      const { code, stderr } = await cli(
        'simulate',
        ...trace,
        '--policies',
        'cache_aware',
        '--no-report',
        '--quiet',
      );
      expect(`${code} ${stderr}`).toBe('0 ');
    }
  });

  it.each([
    [['--workers', 'many'], /--workers must be an integer/],
    [['--workers', '0'], /--workers must be an integer from 1/],
    [['--policies', 'cache_aware,fastest'], /unknown policy 'fastest'/],
    [['--workload', 'movies'], /--workload must be one of/],
    [['--workload', 'chat', '--groups', '3'], /--groups does not apply to --workload chat/],
    [['--load', '0.5', '--rate', '3'], /--load or --rate/],
    [['--concurrency', '3'], /--concurrency applies to --arrival closed/],
    [['--arrival', 'trace'], /needs a trace/],
    [['--workload', 'chat', '--routing-key', 'session'], /--routing-key applies to a trace/],
    [
      [
        '--trace',
        join(process.cwd(), 'test/sim/fixtures/mooncake-sample.jsonl'),
        '--routing-key',
        'user',
      ],
      /--routing-key must be one of none, session/,
    ],
    [['--workload', 'agent', '--groups', '3'], /--groups does not apply to --workload agent/],
    [['--workload', 'agent', '--conversation-rate', '0'], /--conversation-rate must be a number/],
    [['--block-size', '0'], /--block-size must be an integer from 1/],
    [['--workload', 'mooncake'], /needs --trace/],
    [['--trace', 'no-such-file.jsonl'], /no-such-file/],
    [['--frobnicate'], /frobnicate/],
    [['--groups', '0'], /--groups must be an integer/],
    [['--out', 'a.html', '--no-report'], /--out or --no-report/],
  ])('%j → one line on stderr, exit code 2', async (args, message) => {
    const { code, stdout, stderr } = await cli('simulate', ...args);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/^fleetroute: .+\n$/);
    expect(stderr.split('\n')).toHaveLength(2);
    expect(stderr).toMatch(message);
  });

  it('a trace at epoch-ms timestamps is rebased to 0, and the table and the JSON say by how much', async () => {
    const start = 1_700_000_000_000;
    const lines = [0, 1_000, 3_600_000, 7_200_000].map((at, i) =>
      JSON.stringify({
        timestamp: start + at,
        input_length: 600,
        output_length: 4,
        hash_ids: [1, 10 + i],
      }),
    );
    await writeFile(join(dir, 'epoch.jsonl'), `${lines.join('\n')}\n`);
    const { code, stdout } = await cli(
      'simulate',
      '--trace',
      join(dir, 'epoch.jsonl'),
      '--policies',
      'least_load',
      '--no-report',
      '--json',
      'out.json',
      '--quiet',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(
      /^arrivals {2}trace timestamps, rebased: 1,700,000,000,000 ms subtracted \(first arrival at 0\), seed 1$/m,
    );
    const json = JSON.parse(await readFile(join(dir, 'out.json'), 'utf8'));
    expect(json.timestampOffsetMs).toBe(start);
    expect(json.runs[0].timestampOffsetMs).toBe(start);
    expect(json.runs[0].eventsProcessed).toBeLessThan(200);
  }, 10_000);

  it('--routing-key session routes a trace by its session ids: manual and consistent_hashing follow sessions', async () => {
    // Four sessions of four turns; every turn of a session extends its previous prompt.
    const lines: string[] = [];
    for (let turn = 0; turn < 4; turn++) {
      for (let s = 0; s < 4; s++) {
        const ids = Array.from({ length: turn + 2 }, (_, j) => (j === 0 ? 7 : 100 * s + j));
        lines.push(
          JSON.stringify({
            session_id: `conv-${s}`,
            ...(turn === 0 ? { timestamp: s * 10 } : { delay: 50 }),
            input_length: ids.length * 512,
            output_length: 8,
            hash_ids: ids,
          }),
        );
      }
    }
    await writeFile(join(dir, 'sessions.jsonl'), `${lines.join('\n')}\n`);
    const run = async (key: string) => {
      const { code } = await cli(
        'simulate',
        '--trace',
        join(dir, 'sessions.jsonl'),
        '--routing-key',
        key,
        '--workers',
        '4',
        '--policies',
        'manual,consistent_hashing',
        '--no-report',
        '--json',
        `${key}.json`,
        '--quiet',
      );
      expect(code).toBe(0);
      return JSON.parse(await readFile(join(dir, `${key}.json`), 'utf8'));
    };
    const keyed = await run('session');
    const unkeyed = await run('none');
    for (const r of keyed.runs) {
      // Each session stays on one worker: every later turn finds its whole previous prompt.
      expect(r.completed, r.policy).toBe(16);
      expect(r.hitRate, r.policy).toBeGreaterThan(0.6);
    }
    expect(keyed.runs.map((r: { hitRate: number }) => r.hitRate)).not.toEqual(
      unkeyed.runs.map((r: { hitRate: number }) => r.hitRate),
    );
  });

  it('--help prints the options; an unknown command is exit code 2', async () => {
    const help = await cli('simulate', '--help');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--policies');
    expect(help.stdout).toContain(
      'all but passthrough, which always picks the\n                            first available worker in list order',
    );
    expect(help.stdout).not.toMatch(/explicit target/);
    const unknown = await cli('route');
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown command 'route'/);
  });

  it('the main job (npm start) runs every policy on the default workload and prints where the report is', async () => {
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/cli/fleetroute.ts', 'simulate', '--out', join(dir, 'report.html')],
      { timeout: 60_000 },
    );
    for (const policy of DEFAULT_POLICIES) {
      expect(stdout).toMatch(new RegExp(`^${policy} `, 'm'));
    }
    expect(stdout).toContain(`report: ${join(dir, 'report.html')}`);
    expect((await readFile(join(dir, 'report.html'), 'utf8')).length).toBeGreaterThan(10_000);
  });
});
