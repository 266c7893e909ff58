/**
 * `fleetroute simulate --disaggregation`: its flags reach `comparePolicies`, each needs what it
 * applies to, bad values are refused on one line with exit code 2, and a run prints and writes
 * the figures of both legs.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseSimulateArgs } from '../../src/cli/simulate-options.js';
import { runCli } from '../support/cli.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'fleetroute-pd-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const cli = (...args: string[]) => runCli(dir, ...args);

describe('fleetroute simulate --disaggregation', () => {
  it('is off by default; given, it takes the defaults of the simulator and the rule', () => {
    expect(parseSimulateArgs([]).disaggregation).toBeUndefined();
    expect(parseSimulateArgs(['--disaggregation', 'both']).disaggregation).toEqual({
      mode: 'both',
      prefillWorkers: 4,
      decodeWorkers: 4,
      transferMs: 2,
      transferMsPerThousandTokens: 5,
      rule: { localPrefillTokens: 2048, localPrefillShare: 0.7 },
    });
  });

  it('passes every flag on', () => {
    const command = parseSimulateArgs([
      '--disaggregation',
      'conditional',
      '--prefill-workers',
      '3',
      '--decode-workers',
      '5',
      '--transfer-ms',
      '1.5',
      '--transfer-ms-per-1k',
      '8',
      '--decode-policy',
      'least_load',
      '--local-prefill-tokens',
      '512',
      '--local-prefill-share',
      '0.5',
    ]);
    expect(command.disaggregation).toEqual({
      mode: 'conditional',
      decodePolicy: 'least_load',
      prefillWorkers: 3,
      decodeWorkers: 5,
      transferMs: 1.5,
      transferMsPerThousandTokens: 8,
      rule: { localPrefillTokens: 512, localPrefillShare: 0.5 },
    });
  });

  it('refuses bad values and flags without what they apply to, on one line with exit code 2', async () => {
    const cases: readonly [readonly string[], RegExp][] = [
      [['--prefill-workers', '2'], /--prefill-workers needs --disaggregation/],
      [['--local-prefill-share', '0.5'], /--local-prefill-share needs --disaggregation/],
      [
        ['--disaggregation', 'sometimes'],
        /--disaggregation must be one of always, conditional, both/,
      ],
      [
        ['--disaggregation', 'always', '--local-prefill-tokens', '10'],
        /--local-prefill-tokens applies to --disaggregation conditional or both/,
      ],
      [['--disaggregation', 'always', '--workers', '8'], /--workers does not apply/],
      [['--disaggregation', 'both', '--kv-events'], /--kv-events is not modelled/],
      [['--disaggregation', 'both', '--admission'], /--admission is not modelled/],
      [
        ['--disaggregation', 'both', '--local-prefill-share', '1.5'],
        /--local-prefill-share must be a number from 0 to 1/,
      ],
      [['--disaggregation', 'both', '--decode-policy', 'best'], /--decode-policy must be one of/],
      [
        ['--disaggregation', 'both', '--prefill-workers', '0'],
        /--prefill-workers must be an integer from 1/,
      ],
      [
        ['--disaggregation', 'both', '--transfer-ms', 'soon'],
        /--transfer-ms must be a number from 0/,
      ],
    ];
    for (const [args, message] of cases) {
      const { code, stdout, stderr } = await cli('simulate', ...args, '--no-report', '--quiet');
      expect({ args, code }).toEqual({ args, code: 2 });
      expect(stderr).toMatch(message);
      expect(stderr.trim().split('\n')).toHaveLength(1);
      expect(stdout).toBe('');
    }
  });

  it('prints both modes side by side and writes the legs’ figures to the JSON', async () => {
    const { code, stdout } = await cli(
      'simulate',
      '--workload',
      'chat',
      '--users',
      '4',
      '--rounds',
      '3',
      '--policies',
      'cache_aware',
      '--disaggregation',
      'both',
      '--prefill-workers',
      '2',
      '--decode-workers',
      '2',
      '--threads',
      '1',
      '--no-report',
      '--quiet',
      '--json',
      'out.json',
    );
    expect(code).toBe(0);
    expect(stdout).toMatch(/^fleet {5}2 prefill \+ 2 decode workers/m);
    expect(stdout).toMatch(
      /^p\/d {7}always and conditional; KV transfer 2 ms \+ 5 ms per 1,000 tokens/m,
    );
    expect(stdout).toMatch(/^cache_aware\+always /m);
    expect(stdout).toMatch(/^cache_aware\+conditional /m);
    const json = JSON.parse(await readFile(join(dir, 'out.json'), 'utf8'));
    expect(json.disaggregation.modes).toEqual(['always', 'conditional']);
    expect(json.runs).toHaveLength(2);
    for (const run of json.runs) {
      const d = run.disaggregation;
      expect(d.disaggregated + d.prefillSkipped).toBe(12);
      expect(typeof d.tokensTransferred).toBe('number');
      expect(typeof d.prefillHitRate).toBe('number');
      expect(typeof d.decodeHitRate).toBe('number');
    }
    expect(json.oracle).toBeUndefined();
  });
});
