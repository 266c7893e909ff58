/**
 * A disaggregated run accounts for every request, whatever the pools, the transfer cost, the
 * rule and the mode: each completes once, either through both legs (one transfer each) or
 * prefilled on its decode worker, and a rule that never skips behaves as 'always'.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { multiTurnChat, simulate } from '../../src/sim/index.js';
import { runs } from '../helpers/fc-settings.js';

describe('a disaggregated run', () => {
  it('completes every request once, through both legs or a local prefill', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          seed: fc.integer({ min: 0, max: 1_000 }),
          users: fc.integer({ min: 1, max: 6 }),
          rounds: fc.integer({ min: 1, max: 4 }),
          prefillWorkers: fc.integer({ min: 1, max: 3 }),
          decodeWorkers: fc.integer({ min: 1, max: 3 }),
          mode: fc.constantFrom('always', 'conditional' as const),
          transferMs: fc.double({ min: 0, max: 50, noNaN: true }),
          transferMsPerThousandTokens: fc.double({ min: 0, max: 50, noNaN: true }),
          localPrefillTokens: fc.integer({ min: 0, max: 4_096 }),
          localPrefillShare: fc.double({ min: 0, max: 1, noNaN: true }),
          rate: fc.double({ min: 1, max: 200, noNaN: true }),
        }),
        async (p) => {
          const workload = multiTurnChat({
            users: p.users,
            rounds: p.rounds,
            systemPromptLength: 256,
            seed: p.seed,
          });
          const total = workload.requests.length;
          const calls: number[] = [];
          const run = await simulate({
            workload,
            policy: 'cache_aware',
            seed: p.seed,
            arrivals: { kind: 'poisson', ratePerSecond: p.rate },
            disaggregation: {
              mode: p.mode,
              prefillWorkers: p.prefillWorkers,
              decodeWorkers: p.decodeWorkers,
              transferMs: p.transferMs,
              transferMsPerThousandTokens: p.transferMsPerThousandTokens,
              rule: {
                localPrefillTokens: p.localPrefillTokens,
                localPrefillShare: p.localPrefillShare,
              },
            },
            onProgress: (completed) => calls.push(completed),
          });
          const d = run.disaggregation!;
          expect(run.completed).toBe(total);
          expect(calls.filter((c) => c === total)).toHaveLength(1);
          expect(d.disaggregated + d.prefillSkipped).toBe(total);
          expect(d.transfers).toBe(d.disaggregated);
          if (p.mode === 'always' || p.localPrefillTokens === 0 || p.localPrefillShare === 0)
            expect(d.prefillSkipped).toBe(0);
          const prompts = workload.requests.reduce((sum, r) => sum + r.promptLength, 0);
          expect(d.tokensTransferred).toBeLessThanOrEqual(prompts);
          expect(d.transferMsMean).toBeGreaterThanOrEqual(
            d.disaggregated === 0 ? 0 : p.transferMs - 1e-9,
          );
          for (const rate of [run.hitRate, d.prefillHitRate, d.decodeHitRate])
            expect(rate >= 0 && rate <= 1).toBe(true);
          expect(run.load.perWorker).toHaveLength(p.prefillWorkers + p.decodeWorkers);
          expect(run.load.perWorker.reduce((a, b) => a + b, 0)).toBe(total + d.disaggregated);
          expect(run.ttftMs.p50).toBeGreaterThan(0);
        },
      ),
      runs(15, 100),
    );
  });
});
