/**
 * One simulated model server: prefill and decode timing, prefix reuse only after prefill,
 * chunked prefill, the running cap and memory-limited admission.
 */
import { describe, expect, it } from 'vitest';
import { blockKeys } from '../../src/sim/block-keys.js';
import { Engine, type Job } from '../../src/sim/engine.js';
import { EventQueue } from '../../src/sim/event-queue.js';
import { DEFAULT_FLEET_MODEL, type FleetModel } from '../../src/sim/fleet-model.js';
import type { SimRequest } from '../../src/sim/workload.js';

function request(id: number, tokens: Uint32Array, outputLength: number): SimRequest {
  return { id, promptLength: tokens.length, tokens: () => tokens, outputLength };
}

function prompt(shared: number, own: number, salt: number): Uint32Array {
  const t = new Uint32Array(shared + own);
  for (let i = 0; i < shared; i++) t[i] = 7 + i;
  for (let i = shared; i < t.length; i++) t[i] = 100_000 + salt * 10_000 + i;
  return t;
}

/** Runs one engine over jobs submitted at the given times; returns each job's TTFT and end. */
function run(model: Partial<FleetModel>, submissions: { at: number; request: SimRequest }[]) {
  const m = { ...DEFAULT_FLEET_MODEL, ...model };
  const queue = new EventQueue();
  const ends = new Map<number, { ttft: number; end: number; cached: number }>();
  const engine = new Engine(0, m, {
    wakeAt: (time) => queue.push(time, 1, 0),
    completed: (job: Job, time) =>
      ends.set(job.request.id, {
        ttft: job.firstTokenAt - job.sentAt,
        end: time,
        cached: job.cachedTokens,
      }),
  });
  for (const s of submissions) queue.push(s.at, 0, s.request.id);
  const byId = new Map(submissions.map((s) => [s.request.id, s.request]));
  let peakRunning = 0;
  for (let e = queue.pop(); e !== undefined; e = queue.pop()) {
    if (e.kind === 0) {
      const r = byId.get(e.target)!;
      engine.submit(r, blockKeys(r.tokens(), m.blockSize), undefined, e.time);
    } else engine.step(e.time);
    peakRunning = Math.max(peakRunning, engine.running);
  }
  return { ends, peakRunning, engine };
}

describe('Engine', () => {
  it('one request: TTFT = prompt / prefill speed; then one decode step per further token', () => {
    const { ends } = run({}, [{ at: 0, request: request(0, prompt(0, 2_000, 0), 11) }]);
    const { ttft, end } = ends.get(0)!;
    expect(ttft).toBeCloseTo(250, 6); // 2,000 tokens at 8,000 tok/s
    expect(end - ttft).toBeCloseTo(10 * (6 + 0.35), 6); // 10 steps with one request running
  });

  it('a prefix becomes reusable only once its prefill is done', () => {
    const a = request(0, prompt(1_024, 64, 1), 4);
    const b = request(1, prompt(1_024, 64, 2), 4);
    const c = request(2, prompt(1_024, 64, 3), 4);
    // Prefill in chunks of 256 tokens: b is admitted while a is still prefilling (no hit);
    // c arrives after a's prefill (a hit).
    const { ends } = run({ maxBatchTokens: 256 }, [
      { at: 0, request: a },
      { at: 10, request: b },
      { at: 1_000, request: c },
    ]);
    expect(ends.get(0)!.cached).toBe(0);
    expect(ends.get(1)!.cached).toBe(0);
    expect(ends.get(2)!.cached).toBe(1_024);
    expect(ends.get(2)!.ttft).toBeLessThan(ends.get(0)!.ttft);
  });

  it('always computes at least one prompt token, even when the whole prompt is cached', () => {
    const same = prompt(512, 0, 0);
    const { ends } = run({}, [
      { at: 0, request: request(0, same, 2) },
      { at: 1_000, request: request(1, same, 2) },
    ]);
    expect(ends.get(1)!.cached).toBe(512 - 16); // the last block is recomputed
  });

  it('chunks prefill at maxBatchTokens per step', () => {
    const { ends } = run({ maxBatchTokens: 1_000 }, [
      { at: 0, request: request(0, prompt(0, 2_500, 0), 1) },
    ]);
    // Three steps of 1,000 + 1,000 + 500 tokens: the same total prefill time.
    expect(ends.get(0)!.ttft).toBeCloseTo(2_500 / 8, 6);
  });

  it('runs at most maxRunning requests; the rest wait in order', () => {
    const submissions = Array.from({ length: 10 }, (_, i) => ({
      at: 0,
      request: request(i, prompt(0, 32, i), 50),
    }));
    const { ends, peakRunning } = run({ maxRunning: 4 }, submissions);
    expect(peakRunning).toBe(4);
    expect(ends.size).toBe(10);
    expect(ends.get(9)!.ttft).toBeGreaterThan(ends.get(0)!.ttft);
  });

  it('admits only what fits in the cache; a request larger than the cache still runs alone', () => {
    const big = Array.from({ length: 3 }, (_, i) => ({
      at: 0,
      request: request(i, prompt(0, 800, i), 16),
    }));
    // 800 + 16 tokens = 51 blocks each; 100 blocks hold one request at a time.
    const { peakRunning, ends } = run({ cacheTokens: 1_600 }, big);
    expect(peakRunning).toBe(1);
    expect(ends.size).toBe(3);
    const huge = run({ cacheTokens: 160 }, [{ at: 0, request: request(0, prompt(0, 800, 0), 4) }]);
    expect(huge.ends.size).toBe(1);
  });

  it('frees every block of finished requests except the reusable ones', () => {
    const { engine } = run({}, [
      { at: 0, request: request(0, prompt(256, 40, 1), 30) },
      { at: 0, request: request(1, prompt(256, 40, 2), 30) },
    ]);
    // Both prompts' full blocks (2 × 18 blocks, the shared 16 stored twice in private copies,
    // once as reusable) — only reusable blocks remain: 16 shared + 2 × 2 own.
    expect(engine.cache.used).toBe(16 + 2 + 2);
    expect(engine.inFlight).toBe(0);
  });
});
