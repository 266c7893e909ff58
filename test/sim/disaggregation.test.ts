/**
 * A prefill/decode-disaggregated fleet in `simulate` and `comparePolicies`: both legs run, the
 * conditional rule skips the prefill leg of mostly cached prompts, the transfer cost reaches the
 * time to first token, and the options it does not model are refused.
 */
import { describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/index.js';
import { blockKeys } from '../../src/sim/block-keys.js';
import { Engine } from '../../src/sim/engine.js';
import { DEFAULT_FLEET_MODEL } from '../../src/sim/fleet-model.js';
import {
  comparePolicies,
  formatComparison,
  multiTurnChat,
  type PolicyRun,
  renderHtmlReport,
  type SimulationOptions,
  simulate,
  zeroReuse,
} from '../../src/sim/index.js';

/** 8 users × 4 rounds: later turns repeat the conversation so far (mostly cached). */
const chat = multiTurnChat({ users: 8, rounds: 4 });
const pools = { prefillWorkers: 2, decodeWorkers: 2 } as const;
const base = {
  workload: chat,
  policy: 'cache_aware',
  arrivals: { kind: 'poisson', ratePerSecond: 10 },
} as const satisfies SimulationOptions;

/** Everything but the wall-clock routing time. */
const simulated = ({ routingMicrosPerRequest: _, ...rest }: PolicyRun) => rest;

/** Completions as `onProgress` reports them. */
function progressOf(options: SimulationOptions): { calls: number[]; run: Promise<PolicyRun> } {
  const calls: number[] = [];
  const run = simulate({ ...options, onProgress: (completed) => calls.push(completed) });
  return { calls, run };
}

describe('simulate with a disaggregated fleet', () => {
  it("'always': every request runs both legs, completes once, and its KV is moved", async () => {
    const { calls, run: pending } = progressOf({
      ...base,
      disaggregation: { ...pools, mode: 'always' },
    });
    const run = await pending;
    const d = run.disaggregation!;
    expect(run.completed).toBe(chat.requests.length);
    expect(calls.at(-1)).toBe(chat.requests.length);
    expect(calls.filter((c) => c === chat.requests.length)).toHaveLength(1);
    expect(d.disaggregated).toBe(chat.requests.length);
    expect(d.prefillSkipped).toBe(0);
    expect(d.transfers).toBe(d.disaggregated);
    expect(d.tokensTransferred).toBeGreaterThan(0);
    // Every prompt token is computed on the prefill pool: the run's hit rate is that pool's.
    expect(run.hitRate).toBeCloseTo(d.prefillHitRate, 12);
    // Both legs count per worker: every worker of both pools took some.
    expect(run.load.perWorker.reduce((a, b) => a + b, 0)).toBe(2 * chat.requests.length);
    expect(run.load.perWorker.every((n) => n > 0)).toBe(true);
    expect(run.precision).toBeUndefined();
  });

  it("'conditional': later turns, mostly cached on their decode worker, skip the prefill leg", async () => {
    const run = await simulate({ ...base, disaggregation: { ...pools, mode: 'conditional' } });
    const d = run.disaggregation!;
    expect(d.prefillSkipped + d.disaggregated).toBe(chat.requests.length);
    expect(d.transfers).toBe(d.disaggregated);
    // At least every turn after the first of each user (24 of 32) is mostly cached.
    expect(d.prefillSkipped).toBeGreaterThanOrEqual(24);
    expect(d.skippedShare).toBeCloseTo(d.prefillSkipped / chat.requests.length, 12);
    // The rule read cache_aware's belief on the decode leg.
    expect(d.decisionsByPolicy).toBe(chat.requests.length);
    expect(run.load.perWorker.reduce((a, b) => a + b, 0)).toBe(
      chat.requests.length + d.disaggregated,
    );
    const always = await simulate({ ...base, disaggregation: { ...pools, mode: 'always' } });
    expect(d.tokensTransferred).toBeLessThan(always.disaggregation!.tokensTransferred);
    // No prefill leg, no transfer: the median request gets its first token sooner, and the
    // decode worker, which keeps the answers, serves more of the prompt from its cache.
    expect(run.ttftMs.p50).toBeLessThan(always.ttftMs.p50);
    expect(run.hitRate).toBeGreaterThan(always.hitRate);
  });

  it('a rule with localPrefillTokens 0 skips nothing and routes exactly as always', async () => {
    const conditional = await simulate({
      ...base,
      disaggregation: {
        ...pools,
        mode: 'conditional',
        decodePolicy: 'cache_aware',
        rule: { localPrefillTokens: 0 },
      },
    });
    const always = await simulate({
      ...base,
      disaggregation: { ...pools, mode: 'always', decodePolicy: 'cache_aware' },
    });
    expect(conditional.disaggregation!.prefillSkipped).toBe(0);
    const { disaggregation: a, ...restA } = simulated(conditional);
    const { disaggregation: b, ...restB } = simulated(always);
    expect(restA).toEqual(restB);
    const strip = ({ mode: _m, decisionsByPolicy: _d, misjudged: _x, ...rest }: typeof a & {}) =>
      rest;
    expect(strip(a!)).toEqual(strip(b!));
  });

  it('a transfer cost raises the time to first token; no cost moves nothing later', async () => {
    const run = (transferMs: number, transferMsPerThousandTokens: number) =>
      simulate({
        ...base,
        disaggregation: { ...pools, mode: 'always', transferMs, transferMsPerThousandTokens },
      });
    const free = await run(0, 0);
    const costly = await run(100, 50);
    expect(free.disaggregation!.transferMsMean).toBe(0);
    expect(costly.disaggregation!.transferMsMean).toBeGreaterThanOrEqual(100);
    expect(costly.ttftMs.mean).toBeGreaterThan(free.ttftMs.mean + 100);
    expect(costly.ttftMs.p50).toBeGreaterThan(free.ttftMs.p50);
  });

  it('is deterministic for a seed, and another seed changes the random choices', async () => {
    for (const mode of ['always', 'conditional'] as const) {
      const options = { ...base, disaggregation: { ...pools, mode } };
      expect(simulated(await simulate(options))).toEqual(simulated(await simulate(options)));
    }
    const random = {
      ...base,
      policy: 'random',
      disaggregation: { ...pools, mode: 'always', decodePolicy: 'random' },
    } as const;
    const a = await simulate(random);
    expect(simulated(await simulate(random))).toEqual(simulated(a));
    const c = await simulate({ ...random, seed: 2 });
    expect(c.load.perWorker).not.toEqual(a.load.perWorker);
  });

  it('a decode policy that does not explain itself leaves the rule to the actual cache', async () => {
    const run = await simulate({
      ...base,
      disaggregation: { ...pools, mode: 'conditional', decodePolicy: 'round_robin' },
    });
    expect(run.disaggregation!.decisionsByPolicy).toBe(0);
    expect(run.disaggregation!.misjudged).toBe(0);
    expect(run.disaggregation!.prefillSkipped).toBeGreaterThan(0);
  });

  it('on prompts that share nothing, the conditional rule skips nothing', async () => {
    const run = await simulate({
      workload: zeroReuse({ requests: 64 }),
      policy: 'cache_aware',
      disaggregation: { ...pools, mode: 'conditional' },
    });
    expect(run.disaggregation!.prefillSkipped).toBe(0);
    expect(run.disaggregation!.disaggregated).toBe(64);
  });

  it('refuses what it does not model, naming the option', async () => {
    const refused = async (options: Partial<SimulationOptions>, field: RegExp) => {
      const error = await simulate({ ...base, ...options }).catch((e: unknown) => e);
      expect(FleetRouteError.is(error, 'INVALID_ARGUMENT')).toBe(true);
      expect((error as Error).message).toMatch(field);
    };
    const disaggregation = { ...pools, mode: 'conditional' } as const;
    await refused({ disaggregation, fleet: { workers: 8 } }, /^fleet\.workers must be/);
    await refused({ disaggregation, kvEvents: true }, /^kvEvents must be off/);
    await refused({ disaggregation, engineRestarts: 2 }, /^engineRestarts must be off/);
    await refused({ disaggregation, admission: true }, /^admission must be off/);
    await refused({ disaggregation, sharedState: 'memory' }, /^sharedState must be off/);
    await refused({ disaggregation: { mode: 'sometimes' as never } }, /^disaggregation\.mode/);
    await refused({ disaggregation: { prefillWorkers: 0 } }, /^disaggregation\.prefillWorkers/);
    await refused({ disaggregation: { decodePolicy: 'best' as never } }, /decodePolicy/);
    await refused(
      { disaggregation: { rule: { localPrefillShare: 2 } } },
      /^disaggregation\.rule\.localPrefillShare/,
    );
    await refused({ disaggregation: { pools: 2 } as never }, /pools is not an option/);
    // The pools' sum is a fine `workers`.
    const run = await simulate({ ...base, disaggregation, fleet: { workers: 4 } });
    expect(run.completed).toBe(chat.requests.length);
  });
});

describe("a decode leg's engine job", () => {
  it('prefills nothing when its KV arrived: its first token comes out of the next step, and the prompt stays cached', () => {
    const tokens = Uint32Array.from({ length: 8_000 }, (_, i) => i + 1);
    const request = { id: 0, promptLength: tokens.length, outputLength: 2, tokens: () => tokens };
    const keys = blockKeys(tokens, DEFAULT_FLEET_MODEL.blockSize);
    const run = (loaded: boolean) => {
      const wakes: number[] = [];
      let first = Number.NaN;
      const engine = new Engine(0, DEFAULT_FLEET_MODEL, {
        wakeAt: (time) => wakes.push(time),
        firstToken: (_job, time) => {
          first = time;
        },
        completed: () => undefined,
      });
      engine.submit(request, keys, undefined, 0, undefined, loaded);
      engine.step(wakes[0]!);
      return { first, held: engine.cache.match(keys, keys.length) };
    };
    const loaded = run(true);
    expect(loaded.first).toBeLessThan(1);
    expect(loaded.held).toBe(500);
    // Without its KV, the same job prefills 8,000 tokens first (a second at 8,000 tokens/s).
    expect(run(false).first).toBeGreaterThanOrEqual(1_000);
  });
});

describe('comparePolicies with a disaggregated fleet', () => {
  it("mode 'both' runs each policy always and conditionally, without the greedy oracle", async () => {
    const c = await comparePolicies({
      workload: chat,
      policies: ['cache_aware', 'round_robin'],
      threads: 1,
      disaggregation: { ...pools, mode: 'both' },
    });
    expect(c.runs.map((r) => r.policy)).toEqual([
      'cache_aware+always',
      'cache_aware+conditional',
      'round_robin+always',
      'round_robin+conditional',
    ]);
    expect(c.runs.map((r) => r.disaggregation?.mode)).toEqual([
      'always',
      'conditional',
      'always',
      'conditional',
    ]);
    expect(c.oracle).toBeUndefined();
    expect(c.fleet.workers).toBe(4);
    expect(c.disaggregation).toMatchObject({
      prefillWorkers: 2,
      decodeWorkers: 2,
      modes: ['always', 'conditional'],
      decodePolicy: { always: 'power_of_two', conditional: 'cache_aware' },
      rule: { localPrefillTokens: 2048, localPrefillShare: 0.7 },
    });
    const text = formatComparison(c);
    expect(text).toContain('2 prefill + 2 decode workers');
    expect(text).toMatch(/prefill skipped +transfers +tokens moved +hit P \/ D/);
    expect(text).toContain('decode leg power_of_two (always), cache_aware (conditional)');
    const html = renderHtmlReport(c);
    for (const header of ['TTFT mean (ms)', 'Prefill legs skipped', 'Tokens moved'])
      expect(html).toContain(`<th scope="col">${header}</th>`);
    expect(html).toContain(
      '<dt>Prefill/decode</dt><dd>2 prefill + 2 decode workers; always and conditional;',
    );
  });
});
