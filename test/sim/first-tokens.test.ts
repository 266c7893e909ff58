/**
 * The simulator marks each request's first token on its lease when its prefill ends, as a
 * streaming client does, so the load-aware policies see which workers are busy prefilling;
 * `firstTokens: false` models a caller that never marks them. The simulation is deterministic,
 * so these are exact checks of routing behaviour, not of timing.
 */
import { describe, expect, it } from 'vitest';
import { comparePolicies, type PolicyRun, zeroReuse } from '../../src/sim/index.js';

async function p99s(firstTokens: boolean): Promise<Map<string, number>> {
  const c = await comparePolicies({
    workload: zeroReuse(),
    policies: ['round_robin', 'bucket', 'least_load', 'power_of_two'],
    load: 0.8,
    firstTokens,
    threads: 1,
  });
  return new Map(c.runs.map((r: PolicyRun) => [r.policy, r.ttftMs.p99]));
}

describe('first tokens in the simulator (zero reuse, 8 workers, 80 % load)', () => {
  it('marked, bucket comes within 2 % of round robin’s TTFT p99, and every load-aware policy improves on its unmarked run', async () => {
    const marked = await p99s(true);
    const unmarked = await p99s(false);

    // Round robin reads no load: the same run either way.
    expect(marked.get('round_robin')).toBe(unmarked.get('round_robin'));
    expect(marked.get('bucket')!).toBeLessThanOrEqual(1.02 * marked.get('round_robin')!);
    for (const policy of ['bucket', 'least_load', 'power_of_two']) {
      expect(marked.get(policy)!, policy).toBeLessThan(0.9 * unmarked.get(policy)!);
    }
  });
});
