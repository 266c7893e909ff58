/**
 * The oracle run: routing with perfect knowledge of every engine — its cache, the blocks the
 * requests routed to it will publish, and its queue. Its pick rule on a hand-built fleet, on real
 * engines, its place in a comparison, and how it compares with the policies.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockKeys } from '../../src/sim/block-keys.js';
import { Engine } from '../../src/sim/engine.js';
import { DEFAULT_FLEET_MODEL } from '../../src/sim/fleet-model.js';
import {
  agentConversations,
  comparePolicies,
  DEFAULT_POLICIES,
  formatComparison,
  generatedSharedPrefix,
  multiTurnChat,
  simulate,
  singleHotPrefix,
} from '../../src/sim/index.js';
import {
  type OracleEngine,
  OracleView,
  oraclePolicy,
  UNCACHED_WEIGHT,
} from '../../src/sim/oracle.js';
import type { PrefixCache } from '../../src/sim/prefix-cache.js';
import type { SimRequest } from '../../src/sim/workload.js';
import type { Worker } from '../../src/workers/worker.js';
import { comparison, run } from './report/comparison-fixture.js';

const URLS = ['http://w0', 'http://w1', 'http://w2', 'http://w3'];

/**
 * An engine whose cache holds the first `held` blocks of any prompt, `pending` more blocks of
 * which a request in prefill will publish, and a queue of `queuedMs` before any new prefill (a
 * new request's tokens then cost 1 ms each).
 */
function engine(held: number, queuedMs: number, pending = 0, inFlight = 0): OracleEngine {
  // A 10-block prompt: a shorter `keys` is its tail, from block 10 − keys.length on.
  const cache = {
    used: 0,
    match: (keys: Float64Array, limit: number) =>
      Math.max(0, Math.min(held - (10 - keys.length), limit)),
  };
  return {
    cache: cache as unknown as PrefixCache,
    inFlight,
    pendingMatch: (_keys, limit) => Math.min(pending, limit),
    firstTokenEstimateMs: (tokens) => queuedMs + tokens,
  };
}

/** Workers as the router hands them to a policy: URL, availability, the processed count. */
function workers(available: readonly boolean[] = [true, true, true, true]): Worker[] {
  return URLS.map(
    (url, i) =>
      ({
        url,
        isAvailable: () => available[i]!,
        incrementProcessed: () => undefined,
      }) as unknown as Worker,
  );
}

/** The engine index the oracle picks for a 10-block prompt (161 tokens of 16). */
function pick(engines: OracleEngine[], available?: readonly boolean[]): number | undefined {
  const view = new OracleView(16, URLS);
  view.observe(new Float64Array(10), 161, engines);
  const worker = oraclePolicy(view).select(workers(available));
  return worker === undefined ? undefined : URLS.indexOf(worker.url);
}

describe('the oracle pick', () => {
  it.each([
    // [cached blocks, queue ms, expected]; cost = queue + 2 × (161 − 16 × blocks)
    [[2, 5, 3, 0], [0, 0, 0, 0], 1], // longest match on an idle fleet
    [[0, 9, 0, 0], [0, 200, 0, 0], 1], // w1 saves 2 × 144 = 288 ms of prefill, waits 200
    [[0, 9, 0, 0], [0, 300, 0, 0], 0], // … but not 300
    [[0, 9, 9, 0], [0, 50, 50, 0], 1], // equal cost and match: lowest index
    [[0, 0, 0, 0], [30, 20, 10, 40], 2], // nothing cached: the shortest queue
  ])('cached %j with queues %j → worker %i', (matches, queued, expected) => {
    const engines = matches.map((m, i) => engine(m, queued[i]!));
    expect(pick(engines)).toBe(expected);
  });

  it('counts the blocks a request in prefill will publish, continued by the cache', () => {
    // w1 caches nothing yet, but a request in prefill there will publish 8 blocks.
    expect(pick([engine(2, 0), engine(0, 0, 8), engine(0, 0), engine(0, 0)])).toBe(1);
    // Equal cost and match: the fewest in flight wins over the lower index.
    const engines = [engine(4, 0, 0, 3), engine(0, 0, 4, 1), engine(0, 0), engine(0, 0)];
    expect(pick(engines)).toBe(1);
  });

  it('counts at most (promptLength − 1) / blockSize blocks, as the engine serves them', () => {
    const view = new OracleView(16, URLS);
    const engines = [engine(10, 10), engine(9, 0), engine(0, 0), engine(0, 0)];
    // 161 tokens: 10 blocks count; w0 costs 10 + 2, w1 0 + 34.
    view.observe(new Float64Array(10), 161, engines);
    expect(oraclePolicy(view).select(workers())?.url).toBe(URLS[0]);
    // 145 tokens: 9 blocks count on both; w1 has no queue.
    view.observe(new Float64Array(10), 145, engines);
    expect(oraclePolicy(view).select(workers())?.url).toBe(URLS[1]);
  });

  it('never picks an unavailable worker, and returns undefined when none is', () => {
    const engines = [engine(8, 0), engine(1, 0), engine(0, 0), engine(0, 0)];
    expect(pick(engines, [false, true, true, true])).toBe(1);
    expect(pick(engines, [false, false, false, false])).toBeUndefined();
  });

  it('always picks a worker of minimal cost (property)', () => {
    const spec = fc.array(
      fc.record({
        held: fc.integer({ min: 0, max: 12 }),
        pending: fc.integer({ min: 0, max: 12 }),
        queued: fc.integer({ min: 0, max: 400 }),
      }),
      { minLength: 4, maxLength: 4 },
    );
    fc.assert(
      fc.property(spec, (specs) => {
        const engines = specs.map((e) => engine(e.held, e.queued, e.pending));
        const cost = (i: number) => {
          const matched = Math.min(10, Math.max(specs[i]!.held, specs[i]!.pending));
          return specs[i]!.queued + UNCACHED_WEIGHT * (161 - 16 * matched);
        };
        const chosen = pick(engines)!;
        for (let i = 0; i < 4; i++) expect(cost(chosen)).toBeLessThanOrEqual(cost(i));
      }),
    );
  });
});

/** A request of `length` prompt tokens (all `token`) and `output` answer tokens. */
function request(id: number, length: number, output: number, token = 7): SimRequest {
  const prompt = new Uint32Array(length).fill(token);
  return { id, promptLength: length, outputLength: output, tokens: () => prompt };
}

describe('what the oracle reads of an engine', () => {
  const model = { ...DEFAULT_FLEET_MODEL, blockSize: 16 };
  const size = model.blockSize;

  it('sees the prompt blocks of a request in prefill before they are cached, not after decode', () => {
    const steps: number[] = [];
    const e = new Engine(0, model, { wakeAt: (t) => steps.push(t), completed: () => undefined });
    const r = request(0, 161, 2);
    const keys = blockKeys(r.tokens(), size);
    e.submit(r, keys, undefined, 0);
    expect(e.cache.match(keys, 10)).toBe(0);
    expect(e.pendingMatch(keys, 10)).toBe(10);
    // The step in progress took the whole prompt already.
    expect(e.queuedPrefillTokens).toBe(0);
    e.step(steps.at(-1)!); // the prefill is done: the blocks are published
    expect(e.cache.match(keys, 10)).toBe(10);
    expect(e.pendingMatch(keys, 10)).toBe(0);
    expect(e.queuedPrefillTokens).toBe(0);
    const other = blockKeys(request(1, 161, 2, 9).tokens(), size);
    expect(e.pendingMatch(other, 10)).toBe(0);
  });

  it('counts a waiting prompt only for what neither the cache nor a request ahead will hold', () => {
    const e = new Engine(0, model, { wakeAt: () => undefined, completed: () => undefined });
    const a = request(0, 161, 2);
    const b = request(1, 161, 2); // the same prompt: only its last token is computed
    e.submit(a, blockKeys(a.tokens(), size), undefined, 0);
    e.submit(b, blockKeys(b.tokens(), size), undefined, 0);
    expect(e.waiting).toBe(1);
    expect(e.queuedPrefillTokens).toBe(1);
    // An idle engine: its own tokens, in one step with nothing decoding.
    const idle = new Engine(1, model, { wakeAt: () => undefined, completed: () => undefined });
    expect(idle.firstTokenEstimateMs(800)).toBeCloseTo((800 / model.prefillTokensPerSecond) * 1000);
    expect(e.firstTokenEstimateMs(800)).toBeGreaterThan(idle.firstTokenEstimateMs(800));
  });
});

describe('the oracle run in a comparison', () => {
  it('is reported as `greedy-oracle` by default, absent with oracle: false, and never part of simulate', async () => {
    const workload = generatedSharedPrefix({ groups: 8, promptsPerGroup: 6 });
    const policies = ['round_robin', 'cache_aware'] as const;
    const withOracle = await comparePolicies({ workload, policies, threads: 1 });
    expect(withOracle.oracle?.policy).toBe('greedy-oracle');
    expect(withOracle.oracle?.completed).toBe(48);
    expect(withOracle.runs.map((r) => r.policy)).toEqual([...policies]);
    const without = await comparePolicies({ workload, policies, threads: 1, oracle: false });
    expect(without.oracle).toBeUndefined();
    expect('oracle' in without).toBe(false);
    expect(without.runs).toHaveLength(2);
    const alone = await simulate({ workload, policy: 'cache_aware' });
    expect(alone.policy).toBe('cache_aware');
  });

  it('puts a greedy-oracle row and an "of greedy-oracle" column in the text table', async () => {
    const workload = generatedSharedPrefix({ groups: 8, promptsPerGroup: 6 });
    const policies = ['round_robin'] as const;
    const c = await comparePolicies({ workload, policies, threads: 1 });
    const text = formatComparison(c);
    const lines = text.split('\n');
    const header = lines.find((l) => l.startsWith('policy'))!;
    expect(header).toMatch(/of ceiling +of greedy-oracle/);
    const oracleRow = lines.find((l) => l.startsWith('greedy-oracle '))!;
    expect(oracleRow).toContain('100.0 %');
    const share = `${((c.runs[0]!.hitRate / c.oracle!.hitRate) * 100).toFixed(1)} %`;
    expect(lines.find((l) => l.startsWith('round_robin'))).toContain(share);
    const plain = formatComparison(await comparePolicies({ workload, policies, oracle: false }));
    expect(plain).not.toContain('oracle');
  });

  it('claims no bound: a policy that beats the greedy oracle shows more than 100 % of it', () => {
    const c = comparison(
      [run('round_robin', 0, { hitRate: 0.5 }), run('cache_aware', 1, { hitRate: 0.9 })],
      { oracle: run('greedy-oracle', 2, { hitRate: 0.8 }) },
    );
    const text = formatComparison(c);
    const row = text.split('\n').find((l) => l.startsWith('cache_aware'))!;

    expect(c.runs.find((r) => r.policy === 'cache_aware')!.hitRate).toBeGreaterThan(
      c.oracle!.hitRate,
    );
    expect(row).toContain(`${((0.9 / 0.8) * 100).toFixed(1)} %`);
    expect(text).not.toMatch(/bound|of oracle/);
  });
});

/*
 * The oracle reaches at least every policy's hit rate on these workloads at the default fleet.
 * On `agent` consistent_hashing, which never moves a session, stays ahead by up to 0.3 points
 * (97.4 % against 97.3 % with the defaults, 97.3 against 97.1 at 95 % load): the oracle moves
 * a session when its worker's queue costs more than twice the prefill saved, and that copy
 * costs later turns a little; hence the tolerance there, and only there.
 */
describe('the oracle against the policies at the default fleet', () => {
  const cases = [
    { workload: generatedSharedPrefix(), tolerance: 0 },
    { workload: multiTurnChat(), tolerance: 0 },
    { workload: singleHotPrefix(), tolerance: 0 },
    { workload: agentConversations({ conversations: 200 }), tolerance: 0.005 },
  ];
  for (const { workload, tolerance } of cases) {
    it(`${workload.name}: at least every policy's hit rate, within ${tolerance}`, async () => {
      const arrivals = workload.name === 'agent' ? { arrivals: { kind: 'trace' as const } } : {};
      const c = await comparePolicies({ workload, ...arrivals });
      expect(c.runs.map((r) => r.policy)).toEqual([...DEFAULT_POLICIES]);
      const oracle = c.oracle!.hitRate;
      for (const run of c.runs) {
        expect(oracle, run.policy).toBeGreaterThanOrEqual(run.hitRate - tolerance);
      }
    });
  }
});
