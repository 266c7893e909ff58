/**
 * The simulator on a prefill/decode-disaggregated fleet: a multi-turn chat on 2 prefill and 6
 * decode workers, every request through both legs ('always') against the conditional rule, which
 * lets a decode worker prefill a mostly cached later turn itself.
 *
 * Run: `npx tsx examples/sim-disaggregation.ts`.
 */
import { comparePolicies, formatComparison, multiTurnChat } from 'fleetroute/sim';

const comparison = await comparePolicies({
  workload: multiTurnChat({ users: 16, rounds: 6 }),
  policies: ['cache_aware'], // routes the prefill leg
  load: 0.6,
  disaggregation: {
    mode: 'both', // one row per mode: cache_aware+always, cache_aware+conditional
    prefillWorkers: 2,
    decodeWorkers: 6,
    transferMs: 2, // per transfer
    transferMsPerThousandTokens: 5, // 128 KB of KV per token at about 25 GB/s
    rule: { localPrefillTokens: 2048, localPrefillShare: 0.7 },
  },
});
console.log(formatComparison(comparison));
for (const run of comparison.runs) {
  const d = run.disaggregation!;
  console.log(
    `${run.policy}: TTFT mean ${run.ttftMs.mean.toFixed(0)} ms, prefill legs skipped ${d.prefillSkipped} of ${run.requests}, ${d.tokensTransferred} tokens moved`,
  );
}
