/**
 * How many requests per second a fleet sustains on a workload, from the engine model alone.
 *
 * @module
 */
import type { FleetModel } from './fleet-model.js';
import type { Workload } from './workload.js';

/**
 * The fleet's capacity in requests per second on `workload` when every request gets `hitRate`
 * of its prompt from cache (pass the ceiling for the best any router can do).
 *
 * Each worker runs a full batch `B = min(maxRunning, requests whose private blocks fit in the
 * cache)`; a decode step then costs `decodeStepMs + decodeStepPerRequestMs × B` and finishes
 * `B / output` requests' worth of tokens, so decoding alone sustains
 * `D = 1000 · B / (output · step)` requests/s. Each request also prefills
 * `prompt × (1 − hitRate)` tokens at `prefillTokensPerSecond`, which takes `p` seconds of the
 * same engine, so a worker sustains `D / (1 + D · p)` requests/s. The fleet: that times `workers`.
 *
 * @returns requests per second (0 for an empty workload).
 * Cost: O(requests).
 * @public
 */
export function fleetCapacity(workload: Workload, fleet: FleetModel, hitRate: number): number {
  const n = workload.requests.length;
  if (n === 0) return 0;
  let prompt = 0;
  let output = 0;
  for (const request of workload.requests) {
    prompt += request.promptLength;
    output += request.outputLength;
  }
  prompt /= n;
  output /= n;
  const privateBlocks = Math.max(1, Math.ceil((prompt * (1 - hitRate) + output) / fleet.blockSize));
  const fits = fleet.cacheTokens / fleet.blockSize / privateBlocks;
  const batch = Math.max(1, Math.min(fleet.maxRunning, Math.floor(fits)));
  const step = fleet.decodeStepMs + fleet.decodeStepPerRequestMs * batch;
  const decode = (1000 * batch) / (Math.max(1, output) * step);
  const prefillSeconds = (prompt * (1 - hitRate)) / fleet.prefillTokensPerSecond;
  return (fleet.workers * decode) / (1 + decode * prefillSeconds);
}
