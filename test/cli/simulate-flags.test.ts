/**
 * The flag table of `fleetroute simulate`: every entry is in `--help` with the default the parser
 * uses, those defaults are the library's own, and every flag refuses a bad value on one line with
 * exit code 2.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Flag } from '../../src/cli/flags.js';
import { ARRIVAL_FLAGS, GENERATOR_FLAGS, SIMULATE_FLAGS } from '../../src/cli/simulate-flags.js';
import { parseSimulateArgs } from '../../src/cli/simulate-options.js';
import type { BoundedSpec } from '../../src/core/option-table.js';
import { COMPARE_OPTIONS } from '../../src/sim/compare.js';
import { FLEET_OPTIONS } from '../../src/sim/fleet-model.js';
import {
  agentConversations,
  DEFAULT_FLEET_MODEL,
  DEFAULT_POLICIES,
  generatedSharedPrefix,
  loraAdapters,
  multiTurnChat,
  singleHotPrefix,
  type Workload,
  zeroReuse,
} from '../../src/sim/index.js';
import { resolveSimulationOptions, SIMULATION_OPTIONS } from '../../src/sim/simulation-options.js';
import { AGENT_CONVERSATIONS_OPTIONS } from '../../src/sim/workloads/agent-conversations.js';
import { runCli } from '../support/cli.js';

const TRACE = join(process.cwd(), 'test/sim/fixtures/mooncake-sample.jsonl');
const NAMES = Object.keys(SIMULATE_FLAGS) as (keyof typeof SIMULATE_FLAGS)[];
const GENERATORS: Readonly<Record<string, (options: object) => Workload>> = {
  'shared-prefix': generatedSharedPrefix,
  chat: multiTurnChat,
  agent: agentConversations,
  'hot-prefix': singleHotPrefix,
  'zero-reuse': zeroReuse,
  lora: loraAdapters,
};

const cli = (...args: string[]) => runCli(process.cwd(), ...args);

/** One flag's text in the help: its line and the lines that continue it, joined. */
function helpOf(help: string, name: string): string {
  const lines = help.split('\n');
  const start = lines.findIndex((l) => new RegExp(`^ {2}(-\\w, )?--${name}( |$)`).test(l));
  if (start < 0) return '';
  const block = [lines[start]!];
  for (const line of lines.slice(start + 1)) {
    if (!line.startsWith(' '.repeat(28))) break;
    block.push(line);
  }
  return block.map((l) => l.trim()).join(' ');
}

/** The arguments a flag needs beside it to apply: its workload or its arrival process. */
function contextOf(name: string): string[] {
  if (Object.hasOwn(GENERATOR_FLAGS, name)) {
    const sets = GENERATOR_FLAGS[name as keyof typeof GENERATOR_FLAGS].sets;
    return ['--workload', Object.keys(sets)[0]!];
  }
  if (Object.hasOwn(ARRIVAL_FLAGS, name)) {
    const arrival = ARRIVAL_FLAGS[name as keyof typeof ARRIVAL_FLAGS].arrival;
    return arrival === 'trace' ? ['--trace', TRACE] : ['--arrival', arrival];
  }
  return [];
}

/** Whether the flag's reader refuses `text`. */
function refuses(spec: Flag<unknown>, name: string, text: string): boolean {
  try {
    spec.read(text, name);
    return false;
  } catch {
    return true;
  }
}

describe('the flags of fleetroute simulate', () => {
  it('--help lists every flag in the table, in table order, each with the default of its entry', async () => {
    const { code, stdout } = await cli('simulate', '--help');
    expect(code).toBe(0);
    const listed = [...stdout.matchAll(/^ {2}(?:-\w, )?--([\w-]+)/gm)].map((m) => m[1]);
    expect(listed).toEqual(NAMES);
    for (const name of NAMES) {
      const spec: Flag<unknown> = SIMULATE_FLAGS[name];
      const text = helpOf(stdout, name);
      const d = spec.fallback;
      if (typeof d === 'number' || typeof d === 'string') expect(text, name).toContain(`(${d})`);
      else if (spec.shown !== undefined) expect(text, name).toContain(`(${spec.shown})`);
    }
    for (const [name, spec] of Object.entries(GENERATOR_FLAGS)) {
      for (const [workload, [, fallback]] of Object.entries(spec.sets)) {
        expect(helpOf(stdout, name), name).toContain(`${workload}: ${fallback ?? 'all'}`);
      }
    }
  });

  it('with no flags, the parser takes the defaults the help shows', () => {
    const f = SIMULATE_FLAGS;
    const command = parseSimulateArgs([]);
    expect(command).toMatchObject({
      help: false,
      workload: { kind: f.workload.fallback },
      fleet: {
        workers: f.workers.fallback,
        cacheTokens: f['cache-tokens'].fallback,
        blockSize: f['block-size'].fallback,
        maxBatchTokens: f['batch-tokens'].fallback,
        maxRunning: f['max-running'].fallback,
        prefillTokensPerSecond: f['prefill-tokens-per-s'].fallback,
        decodeStepMs: f['decode-step-ms'].fallback,
        decodeStepPerRequestMs: f['decode-step-per-request-ms'].fallback,
      },
      policies: f.policies.fallback,
      arrivals: undefined,
      load: f.load.fallback,
      routers: f.routers.fallback,
      seed: f.seed.fallback,
      loadPollIntervalMs: f['poll-ms'].fallback,
      firstTokens: true,
      out: f.out.fallback,
      json: undefined,
      quiet: false,
    });
    expect(parseSimulateArgs(['--no-first-tokens']).firstTokens).toBe(false);
    expect(parseSimulateArgs(['--arrival', 'closed']).arrivals).toEqual({
      kind: 'closed_loop',
      concurrency: f.concurrency.fallback,
    });
    expect(parseSimulateArgs(['--trace', TRACE]).arrivals).toEqual({
      kind: 'trace',
      speedup: f.speedup.fallback,
    });
    // The agent workload carries its own start times: it is replayed as a trace by default.
    expect(parseSimulateArgs(['--workload', 'agent']).arrivals).toEqual({
      kind: 'trace',
      speedup: f.speedup.fallback,
    });
    expect(parseSimulateArgs(['--trace', TRACE]).workload).toMatchObject({ routingKey: 'none' });
    expect(
      parseSimulateArgs(['--trace', TRACE, '--routing-key', 'session']).workload,
    ).toMatchObject({ kind: 'mooncake', routingKey: 'session' });
  });

  it('the fleet flags reach the fleet model', () => {
    const command = parseSimulateArgs([
      '--block-size',
      '32',
      '--batch-tokens',
      '4096',
      '--max-running',
      '64',
      '--prefill-tokens-per-s',
      '12000.5',
      '--decode-step-ms',
      '4.5',
      '--decode-step-per-request-ms',
      '0',
    ]);
    expect(parseSimulateArgs(['--max-loras', '2', '--adapter-load-ms', '80']).fleet).toMatchObject({
      maxLoras: 2,
      adapterLoadMs: 80,
    });
    expect(parseSimulateArgs(['--adapter-aware']).adapterAware).toBe(true);
    expect(command.fleet).toMatchObject({
      blockSize: 32,
      maxBatchTokens: 4096,
      maxRunning: 64,
      prefillTokensPerSecond: 12000.5,
      decodeStepMs: 4.5,
      decodeStepPerRequestMs: 0,
    });
  });

  it("the defaults it passes are the library's own, so passing them changes nothing", () => {
    for (const [name, spec] of Object.entries(GENERATOR_FLAGS)) {
      for (const [workload, [option, fallback]] of Object.entries(spec.sets)) {
        if (workload === 'mooncake') continue;
        const command = parseSimulateArgs(['--workload', workload]);
        const options = command.workload.kind === 'mooncake' ? {} : command.workload.options;
        expect(options[option], `${name} (${workload})`).toBe(fallback);
        expect(GENERATORS[workload]!({}).parameters[option], `${name} (${workload})`).toBe(
          fallback,
        );
      }
    }
    const f = SIMULATE_FLAGS;
    expect(f.workers.fallback).toBe(DEFAULT_FLEET_MODEL.workers);
    expect(f['cache-tokens'].fallback).toBe(DEFAULT_FLEET_MODEL.cacheTokens);
    expect(f['block-size'].fallback).toBe(DEFAULT_FLEET_MODEL.blockSize);
    expect(f['batch-tokens'].fallback).toBe(DEFAULT_FLEET_MODEL.maxBatchTokens);
    expect(f['max-running'].fallback).toBe(DEFAULT_FLEET_MODEL.maxRunning);
    expect(f['prefill-tokens-per-s'].fallback).toBe(DEFAULT_FLEET_MODEL.prefillTokensPerSecond);
    expect(f['decode-step-ms'].fallback).toBe(DEFAULT_FLEET_MODEL.decodeStepMs);
    expect(f['decode-step-per-request-ms'].fallback).toBe(
      DEFAULT_FLEET_MODEL.decodeStepPerRequestMs,
    );
    expect(f.policies.fallback).toEqual(DEFAULT_POLICIES);
    const resolved = resolveSimulationOptions({
      workload: generatedSharedPrefix({ groups: 1, promptsPerGroup: 1 }),
      policy: 'random',
    });
    expect(resolved.routers).toBe(f.routers.fallback);
    expect(resolved.seed).toBe(f.seed.fallback);
    expect(resolved.loadPollIntervalMs).toBe(f['poll-ms'].fallback);
  });

  it.each([
    ['routers', SIMULATION_OPTIONS, 'routers'],
    ['seed', SIMULATION_OPTIONS, 'seed'],
    ['poll-ms', SIMULATION_OPTIONS, 'loadPollIntervalMs'],
    ['workers', FLEET_OPTIONS, 'workers'],
    ['cache-tokens', FLEET_OPTIONS, 'cacheTokens'],
    ['block-size', FLEET_OPTIONS, 'blockSize'],
    ['batch-tokens', FLEET_OPTIONS, 'maxBatchTokens'],
    ['max-running', FLEET_OPTIONS, 'maxRunning'],
    ['prefill-tokens-per-s', FLEET_OPTIONS, 'prefillTokensPerSecond'],
    ['decode-step-ms', FLEET_OPTIONS, 'decodeStepMs'],
    ['decode-step-per-request-ms', FLEET_OPTIONS, 'decodeStepPerRequestMs'],
    ['conversation-rate', AGENT_CONVERSATIONS_OPTIONS, 'conversationsPerSecond'],
    ['think-ms', AGENT_CONVERSATIONS_OPTIONS, 'meanThinkTimeMs'],
    ['load', COMPARE_OPTIONS, 'load'],
  ] as const)('--%s accepts exactly the range of the option it passes on', (name, table, key) => {
    const spec: Flag<unknown> = SIMULATE_FLAGS[name];
    const { min, max } = table.specs[key as keyof typeof table.specs] as BoundedSpec;
    const libraryAccepts = (value: number): boolean => {
      try {
        (table as { read(input: unknown): unknown }).read({ [key]: value });
        return true;
      } catch {
        return false;
      }
    };
    for (const value of [min, max]) {
      expect(spec.read(String(value), name), `${name} ${value}`).toBe(value);
      expect(libraryAccepts(value), `${key} ${value}`).toBe(true);
    }
    for (const value of [min - 1, max + 1]) {
      expect(refuses(spec, name, String(value)), `${name} ${value}`).toBe(true);
      expect(libraryAccepts(value), `${key} ${value}`).toBe(false);
    }
  });

  it('only the paths take any text', () => {
    const free = NAMES.filter((n) => {
      const spec: Flag<unknown> = SIMULATE_FLAGS[n];
      return spec.value !== undefined && !refuses(spec, n, 'nope');
    });
    expect(free).toEqual(['trace', 'out', 'json']);
  });

  it.each(
    NAMES.filter((n) => {
      const spec: Flag<unknown> = SIMULATE_FLAGS[n];
      return spec.value === undefined || refuses(spec, n, 'nope');
    }),
  )('a bad value of --%s → one line naming it, exit code 2', async (name) => {
    const spec: Flag<unknown> = SIMULATE_FLAGS[name];
    const bad = spec.value === undefined ? [`--${name}=nope`] : [`--${name}`, 'nope'];
    const { code, stdout, stderr } = await cli('simulate', ...contextOf(name), ...bad);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(new RegExp(`^fleetroute: .*--${name}\\b.*\\n$`));
  });

  it.each([['--worker', '3'], ['-x'], ['--Workers', '3']])(
    'an unknown flag %s → one line naming it, exit code 2',
    async (...args) => {
      const { code, stdout, stderr } = await cli('simulate', ...args);
      expect(code).toBe(2);
      expect(stdout).toBe('');
      expect(stderr).toMatch(/^fleetroute: .+\n$/);
      expect(stderr).toContain(`'${args[0]}'`);
    },
  );
});
