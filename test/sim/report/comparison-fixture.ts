/**
 * Hand-built `Comparison` values for the report tests: plausible numbers, deterministic
 * timelines, and every field overridable.
 */
import { DEFAULT_FLEET_MODEL } from '../../../src/sim/fleet-model.js';
import type { Comparison, PolicyRun } from '../../../src/sim/result.js';

/** Options of {@link run}: the run's overrides plus the timeline's shape. */
export interface RunShape {
  readonly workers?: number;
  readonly samples?: number;
  readonly intervalMs?: number;
}

/** In-flight counts that wave and jitter deterministically (no RNG). */
function timeline(workers: number, samples: number, seed: number): number[][] {
  return Array.from({ length: workers }, (_, w) =>
    Array.from({ length: samples }, (_, i) =>
      Math.round(10 + 8 * Math.sin(i / 17 + w + seed) + ((i * 7919 + w * 104_729) % 5)),
    ),
  );
}

/** A run's timeline: waiting and running split from the in-flight counts. */
function timelineOf(
  workers: number,
  samples: number,
  seed: number,
  intervalMs: number,
): PolicyRun['timeline'] {
  const inFlight = timeline(workers, samples, seed);
  const running = inFlight.map((w) => w.map((v) => Math.min(v, 8)));
  const waiting = inFlight.map((w, i) => w.map((v, j) => v - running[i]![j]!));
  return { intervalMs, inFlight, waiting, running };
}

/** One policy run; index `seed` varies its numbers so that runs differ. */
export function run(
  policy: string,
  seed = 0,
  overrides: Partial<PolicyRun> = {},
  shape: RunShape = {},
): PolicyRun {
  const workers = shape.workers ?? 4;
  const perWorker = Array.from({ length: workers }, (_, w) => 250 + ((w * 37 + seed * 11) % 60));
  return {
    policy,
    requests: 1000,
    completed: 1000,
    hitRate: 0.5 + seed * 0.03,
    ttftMs: { p50: 100 + seed * 20, p90: 180 + seed * 30, p99: 300 + seed * 40, mean: 140 },
    throughput: {
      requestsPerSecond: 40 + seed,
      outputTokensPerSecond: 5000 + seed * 100,
      steadyRequestsPerSecond: 41 + seed,
    },
    makespanMs: 25_000,
    load: { perWorker, maxOverMean: 1.1 + seed * 0.01, cv: 0.08 + seed * 0.01 },
    work: {
      perWorker: perWorker.map((n) => n * 1_000),
      maxOverMean: 1.2 + seed * 0.01,
      cv: 0.1 + seed * 0.01,
    },
    precision: 0.6 + seed * 0.02,
    routingMicrosPerRequest: 1.5 + seed * 0.1,
    decisions:
      policy === 'cache_aware' ? { cache_hit: 900 - seed * 10, cache_miss: 100 + seed * 10 } : {},
    ttftQuantilesMs: Array.from({ length: 101 }, (_, i) => (40 + seed * 10) * (1 + i / 50)),
    timeline: timelineOf(workers, shape.samples ?? 50, seed, shape.intervalMs ?? 100),
    eventsProcessed: 12_000 + seed,
    timestampOffsetMs: 0,
    ...overrides,
  };
}

/** A comparison of `runs` on a small shared-prefix workload; fields overridable. */
export function comparison(
  runs: readonly PolicyRun[],
  overrides: Partial<Comparison> = {},
): Comparison {
  return {
    workload: {
      name: 'shared-prefix',
      description: 'Groups of requests share a long system prompt',
      requests: 10_000,
      parameters: { groups: 16, prefixTokens: 2048 },
    },
    fleet: { ...DEFAULT_FLEET_MODEL, workers: runs[0]?.load.perWorker.length ?? 4 },
    arrivals: 'Poisson, 57.3 req/s (80 % of capacity)',
    timestampOffsetMs: 0,
    routers: 1,
    seed: 42,
    ceiling: 0.882,
    capacity: 71.6,
    runs,
    ...overrides,
  };
}

/** Policies named like the built-in ones, one run each. */
export function policies(count: number, shape: RunShape = {}): PolicyRun[] {
  const names = [
    'random',
    'round_robin',
    'power_of_two',
    'least_load',
    'consistent_hashing',
    'prefix_hash',
    'bucket',
    'manual',
    'cache_aware',
    'passthrough',
    'custom_a',
    'custom_b',
  ];
  return Array.from({ length: count }, (_, i) => run(names[i] ?? `policy_${i}`, i, {}, shape));
}

/** How often `needle` occurs in `haystack`. */
export function count(haystack: string, needle: string): number {
  return haystack.split(needle).length - 1;
}
