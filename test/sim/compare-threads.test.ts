/**
 * `comparePolicies` in worker threads: the same comparison as one thread, progress and errors
 * forwarded, and the cases that stay in this thread (a workload of one's own, functions in a
 * policy configuration, a workload that cannot be built again).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/core/errors.js';
import type { CompareJob } from '../../src/sim/compare-job.js';
import {
  agentConversations,
  type Comparison,
  comparePolicies,
  generatedSharedPrefix,
  multiTurnChat,
  type PolicyRun,
  parseMooncakeTrace,
  readMooncakeTrace,
  type Workload,
} from '../../src/sim/index.js';
import { runJobs } from '../../src/sim/parallel-runs.js';
import { resolveSimulationOptions } from '../../src/sim/simulation-options.js';

const POLICIES = ['round_robin', 'consistent_hashing', 'cache_aware'] as const;
const dir = mkdtempSync(join(tmpdir(), 'fleetroute-threads-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A Mooncake trace of `n` records over 6 shared prefixes of 512-token blocks, 250 ms apart. */
function traceText(n: number): string {
  const lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const group = (i * 7) % 6;
    const shared = Array.from({ length: 4 }, (_, b) => group * 100 + b);
    const ids = [...shared, 10_000 + i, 20_000 + i];
    lines.push(
      JSON.stringify({
        timestamp: 1_000 + i * 250,
        input_length: 6 * 512 - 40,
        output_length: 20 + (i % 5),
        hash_ids: ids,
      }),
    );
  }
  return `${lines.join('\n')}\n`;
}

/** `comparison` without the wall-clock figures. */
function deterministic(comparison: Comparison): unknown {
  const strip = (run: PolicyRun) => ({ ...run, routingMicrosPerRequest: 0 });
  return {
    ...comparison,
    runs: comparison.runs.map(strip),
    oracle: comparison.oracle === undefined ? undefined : strip(comparison.oracle),
  };
}

/** One job per policy for `workload`, as `comparePolicies` builds them. */
function jobsOf(
  workload: Workload,
  configs: Readonly<Record<string, Readonly<Record<string, unknown>>>> = {},
): CompareJob[] {
  return POLICIES.map((policy) => ({
    name: policy,
    oracle: false,
    plan: resolveSimulationOptions({
      workload,
      policy,
      policyConfig: configs[policy] ?? {},
      arrivals: { kind: 'poisson', ratePerSecond: 40 },
    }),
  }));
}

describe('comparePolicies with worker threads', () => {
  it('gives the same comparison as one thread for a generated workload, the oracle included', async () => {
    const workload = generatedSharedPrefix({ groups: 12, promptsPerGroup: 10 });
    const serial = await comparePolicies({ workload, policies: POLICIES, threads: 1 });
    const threaded = await comparePolicies({ workload, policies: POLICIES, threads: 2 });
    expect(threaded.oracle?.policy).toBe('greedy-oracle');
    expect(deterministic(threaded)).toEqual(deterministic(serial));
  });

  it('gives the same comparison for an agent workload, built again in each thread', async () => {
    const workload = agentConversations({ conversations: 24, meanThinkTimeMs: 500, seed: 3 });
    const arrivals = { kind: 'trace' } as const;
    const serial = await comparePolicies({ workload, policies: POLICIES, arrivals, threads: 1 });
    const threaded = await comparePolicies({ workload, policies: POLICIES, arrivals, threads: 2 });
    expect(serial.runs[0]!.completed).toBe(workload.requests.length);
    expect(deterministic(threaded)).toEqual(deterministic(serial));
    const { threads } = await runJobs(workload, jobsOf(workload), 2, undefined);
    expect(threads).toBeGreaterThanOrEqual(1);
  });

  it('gives the same comparison for a small Mooncake trace, parsed from text or read from a file', async () => {
    const text = traceText(120);
    const path = join(dir, 'trace.jsonl');
    writeFileSync(path, text);
    for (const workload of [parseMooncakeTrace(text), await readMooncakeTrace(path)]) {
      const serial = await comparePolicies({ workload, policies: POLICIES, threads: 1 });
      const threaded = await comparePolicies({ workload, policies: POLICIES, threads: 3 });
      expect(serial.runs[0]!.completed).toBe(120);
      expect(deterministic(threaded)).toEqual(deterministic(serial));
      const { threads } = await runJobs(workload, jobsOf(workload), 2, undefined);
      expect(threads).toBeGreaterThanOrEqual(1);
    }
  });

  it('runs the jobs of a generated workload in worker threads, each taking the next', async () => {
    const workload = multiTurnChat({ users: 6, rounds: 3 });
    const { runs, threads } = await runJobs(workload, jobsOf(workload), 2, undefined);
    // One or both: a worker that starts late may find every job taken.
    expect(threads).toBeGreaterThanOrEqual(1);
    expect(threads).toBeLessThanOrEqual(2);
    expect(runs.map((r) => r.policy)).toEqual([...POLICIES]);
  });

  it('runs a workload of your own in this thread, with the same results', async () => {
    const generated = generatedSharedPrefix({ groups: 6, promptsPerGroup: 6 });
    const own: Workload = { ...generated, name: 'own' };
    const mine = await runJobs(own, jobsOf(own), 2, undefined);
    expect(mine.threads).toBe(0);
    const theirs = await runJobs(generated, jobsOf(generated), 2, undefined);
    expect(theirs.threads).toBeGreaterThanOrEqual(1);
    const hits = (runs: readonly PolicyRun[]) => runs.map((r) => [r.hitRate, r.ttftMs]);
    expect(hits(mine.runs)).toEqual(hits(theirs.runs));
    const comparison = await comparePolicies({ workload: own, policies: POLICIES, threads: 2 });
    expect(comparison.workload.name).toBe('own');
    expect(comparison.runs).toHaveLength(POLICIES.length);
  });

  it('runs in this thread when a policy configuration holds a function', async () => {
    const workload = generatedSharedPrefix({ groups: 4, promptsPerGroup: 4 });
    const configs = { round_robin: { clock: () => 0 } };
    const { threads } = await runJobs(workload, jobsOf(workload, configs), 2, undefined);
    expect(threads).toBe(0);
  });

  it('falls back to this thread when the workload cannot be built again in a worker', async () => {
    const path = join(dir, 'vanishing.jsonl');
    writeFileSync(path, traceText(40));
    const workload = await readMooncakeTrace(path);
    const expected = await comparePolicies({ workload, policies: POLICIES, threads: 1 });
    writeFileSync(path, traceText(30)); // the file changed after it was read
    const jobs = jobsOf(workload);
    const { threads } = await runJobs(workload, jobs, 2, undefined);
    expect(threads).toBe(0);
    rmSync(path); // and then it went
    const comparison = await comparePolicies({ workload, policies: POLICIES, threads: 2 });
    expect(deterministic(comparison)).toEqual(deterministic(expected));
  });

  it("brings a worker's error back as the same FleetRouteError (code and message)", async () => {
    const workload = generatedSharedPrefix({ groups: 4, promptsPerGroup: 4 });
    const jobs = jobsOf(workload);
    // A plan that fails only once it runs: the worker builds a policy that does not exist.
    const broken = { ...jobs[1]!, plan: { ...jobs[1]!.plan, policy: 'no_such_policy' as never } };
    const here = await runJobs(workload, [broken], 1, undefined).catch((e: unknown) => e);
    const there = await runJobs(workload, [jobs[0]!, broken], 2, undefined).catch(
      (e: unknown) => e,
    );
    expect(here).toBeInstanceOf(FleetRouteError);
    expect(there).toBeInstanceOf(FleetRouteError);
    expect((there as FleetRouteError).code).toBe((here as FleetRouteError).code);
    expect((there as FleetRouteError).message).toBe((here as FleetRouteError).message);
  });

  it('forwards progress: every policy and the oracle reach 100 %, each never going back', async () => {
    const workload = generatedSharedPrefix({ groups: 8, promptsPerGroup: 8 });
    const last = new Map<string, [number, number]>();
    const backwards: string[] = [];
    await comparePolicies({
      workload,
      policies: POLICIES,
      threads: 2,
      onProgress: (policy, completed, total) => {
        const before = last.get(policy);
        if (before !== undefined && completed < before[0]) backwards.push(policy);
        last.set(policy, [completed, total]);
      },
    });
    expect([...last.keys()].sort()).toEqual([...POLICIES, 'greedy-oracle'].sort());
    for (const [completed, total] of last.values()) expect([completed, total]).toEqual([64, 64]);
    expect(backwards).toEqual([]);
  });

  it('rethrows an error thrown by onProgress as is and stops the other runs', async () => {
    const workload = generatedSharedPrefix({ groups: 8, promptsPerGroup: 8 });
    const stop = new Error('stop');
    await expect(
      comparePolicies({
        workload,
        policies: POLICIES,
        threads: 2,
        onProgress: (_policy, completed) => {
          if (completed > 10) throw stop;
        },
      }),
    ).rejects.toBe(stop);
  });

  it('rejects a threads option that is not an integer ≥ 1', async () => {
    const workload = generatedSharedPrefix({ groups: 2, promptsPerGroup: 2 });
    for (const threads of [0, 1.5, 'two']) {
      await expect(comparePolicies({ workload, threads: threads as number })).rejects.toMatchObject(
        { code: 'INVALID_ARGUMENT', message: expect.stringContaining('threads') },
      );
    }
  });
});
