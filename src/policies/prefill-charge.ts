/**
 * The port through which a policy that predicts prefill work tells the router what to charge the
 * lease it takes on the policy's pick: the pick's predicted uncached prompt tokens and the work
 * predicted ahead of it. The router reads it right after `select` and charges the lease
 * (`chargePrefill`); it never sees the policy's classes, and the policy never sees the router's.
 *
 * @module
 * @internal
 */
import type { Worker } from '../workers/worker.js';
import type { Policy } from './policy.js';

/** @internal The key of the method a policy that predicts prefill work offers its charge under. */
export const PREFILL_CHARGE: unique symbol = Symbol('fleetroute.prefillCharge');

/** @internal What the last `select` predicted for its pick. The object is reused. */
export interface PrefillCharge {
  /** The worker picked. A charge is applied only to a lease on it. */
  readonly worker: Worker;
  /** Uncached prompt tokens predicted there. */
  readonly tokens: number;
  /** Prefill work (tokens) predicted queued ahead of the request there. */
  readonly ahead: number;
  /** The clock first-token times are measured on. */
  readonly clock: () => number;
  /** The prior prefill speed, tokens per ms, the worker's estimate is blended with. */
  readonly priorPerMs: number;
}

/** @internal A policy that offers its charges. */
export interface ChargingPolicy extends Policy {
  /** The last `select`'s charge, or `undefined` when it picked nothing or predicted nothing. */
  [PREFILL_CHARGE](): PrefillCharge | undefined;
}

/** @internal The charge of `policy`'s last `select`, if it offers one. O(1). */
export function prefillChargeOf(policy: Policy): PrefillCharge | undefined {
  const offer = (policy as Partial<ChargingPolicy>)[PREFILL_CHARGE];
  return typeof offer === 'function' ? offer.call(policy) : undefined;
}
