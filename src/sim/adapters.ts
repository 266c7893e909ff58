/**
 * What a run does for LoRA adapters outside the engines: block keys by adapter — an engine's
 * prefix cache keys blocks by the adapter too (vLLM's block hashes include the LoRA name), so a
 * prompt never matches blocks another adapter, or the base model, computed — and the run's
 * adapter loads.
 *
 * @module
 * @internal
 */
import { fmix32 } from '../core/fmix32.js';
import type { AdapterSlots } from './adapter-slots.js';
import type { AdapterLoads, PolicyRun } from './result.js';
import type { Workload } from './workload.js';

/**
 * @internal Rekeys `keys` (from `blockKeys`, integers below 2^53) in place for `adapter`: equal
 * keys of one adapter stay equal, and keys of two adapters (or of an adapter and the base model)
 * differ up to a 2^-53 collision chance. O(keys + adapter length).
 */
export function keyByAdapter(keys: Float64Array, adapter: string): void {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < adapter.length; i++) {
    const c = adapter.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  const salt = fmix32(a ^ 0x2545f491);
  const salt2 = fmix32(b);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const hi = Math.floor(key / 2_097_152);
    const lo = key - hi * 2_097_152;
    keys[i] = fmix32(hi ^ salt) * 2_097_152 + (fmix32(lo ^ salt2 ^ hi) >>> 11);
  }
}

/** @internal The adapter loads of `slots` (one per engine, in worker order). O(workers). */
export function adapterLoadsOf(slots: readonly AdapterSlots[]): AdapterLoads {
  const perWorker = slots.map((s) => s.loads);
  return {
    loads: perWorker.reduce((sum, n) => sum + n, 0),
    perWorker,
    maxPerWorker: perWorker.length === 0 ? 0 : Math.max(...perWorker),
    minPerWorker: perWorker.length === 0 ? 0 : Math.min(...perWorker),
  };
}

/**
 * @internal `run` with the adapter loads of `engines` (in worker order) when `workload` names
 * adapters, else `run` itself. O(requests + workers).
 */
export function withAdapterLoads(
  run: PolicyRun,
  workload: Workload,
  engines: readonly { readonly adapters: AdapterSlots }[],
): PolicyRun {
  if (!workload.requests.some((r) => r.adapter !== undefined)) return run;
  return { ...run, adapters: adapterLoadsOf(engines.map((e) => e.adapters)) };
}
