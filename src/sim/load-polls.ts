/**
 * The load reports a router's polling would deliver: every `loadPollIntervalMs` of simulated
 * time, each policy receives what a `/metrics` scrape of each worker would say.
 *
 * @module
 * @internal
 */
import type { Policy } from '../policies/policy.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Engine } from './engine.js';

/**
 * @internal The poll times: tick `k` is at `k × intervalMs` from time 0. While the fleet is idle
 * nothing a report says changes, so the ticks between the first idle one and the last one before
 * the next arrival are skipped: each would replace the policies' reports with identical ones,
 * and the last one delivers the very state (and arrival time) that they would have left.
 */
export class LoadPolls {
  readonly #intervalMs: number;
  #tick = 0;

  /** @param intervalMs - simulated ms between polls (> 0). */
  constructor(intervalMs: number) {
    this.#intervalMs = intervalMs;
  }

  /**
   * Moves past the current tick.
   *
   * @param quietUntil - when the fleet is idle: the time of the next arrival (`Infinity` when
   *   none is due); otherwise any time not after now.
   * @returns the time of the next tick worth delivering: the next one, or the last one before
   *   `quietUntil` when that is later; `Infinity` when the fleet stays idle for ever. O(1).
   */
  advance(quietUntil: number): number {
    const step = this.#intervalMs;
    let k = this.#tick + 1;
    if (quietUntil === Number.POSITIVE_INFINITY) return quietUntil;
    if (quietUntil > (k + 1) * step) {
      // The last tick strictly before `quietUntil` (a tick at that very time follows the arrival).
      let last = Math.ceil(quietUntil / step) - 1;
      while (last * step >= quietUntil) last--;
      while ((last + 1) * step < quietUntil) last++;
      if (last > k) k = last;
    }
    this.#tick = k;
    return k * step;
  }
}

/**
 * `report` with the engine's adapters — resident (the residency gauges; left out without
 * `residency`, as an engine serving only `vllm:lora_requests_info` does), running, waiting (among
 * the first 64 waiting) and its slots — once any request of an adapter reached it (an engine
 * says nothing of adapters before one was used, as vLLM's metric is absent until then).
 */
function withAdapters(report: LoadReport, engine: Engine, residency: boolean): LoadReport {
  const slots = engine.adapters;
  const waiting = engine.waitingAdapters();
  if (slots.loads === 0 && waiting.length === 0) return report;
  const running = slots.running();
  return {
    ...report,
    adapters: residency
      ? { running, waiting, resident: slots.resident(), maxAdapters: slots.max }
      : { running, waiting, maxAdapters: slots.max },
  };
}

/**
 * @internal Gives each policy the reports a metrics endpoint of each worker would give at `now`:
 * running and waiting requests, KV-cache usage (none for an unbounded cache), and the adapters
 * once one was used.
 * Cost: O(workers + policies × their `updateLoads`).
 */
export function deliverLoads(
  policies: readonly Policy[],
  engines: readonly Engine[],
  urls: readonly string[],
  now: number,
  adapterResidency = true,
): void {
  const reports = new Map<string, LoadReport>();
  for (let w = 0; w < engines.length; w++) {
    const engine = engines[w]!;
    const capacity = engine.cache.capacity;
    const report: LoadReport =
      capacity === Number.POSITIVE_INFINITY
        ? { runningRequests: engine.running, waitingRequests: engine.waiting, at: now }
        : {
            runningRequests: engine.running,
            waitingRequests: engine.waiting,
            tokenUsage: Math.min(1, engine.cache.used / capacity),
            at: now,
          };
    reports.set(urls[w]!, withAdapters(report, engine, adapterResidency));
  }
  for (const policy of policies) policy.updateLoads?.(reports);
}
