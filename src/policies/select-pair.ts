/**
 * `selectPair`: a prefill worker and a decode worker for one disaggregated request.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import type { Worker } from '../workers/worker.js';
import type { Policy, SelectRequest } from './policy.js';
import { nextAvailable } from './support/sampling.js';

/** The two policies of {@link selectPair}: separate instances, one per leg. @public */
export interface PairPolicies {
  readonly prefill: Policy;
  readonly decode: Policy;
}

/** A prefill worker and a decode worker chosen together. @public */
export interface WorkerPair {
  readonly prefill: Worker;
  readonly decode: Worker;
}

/**
 * Picks the two workers of a prefill/decode-disaggregated request: each leg by its own policy
 * instance, with `request.leg` set to `'prefill'` or `'decode'`, so round-robin counters, sticky
 * keys and ring placement of the two legs never interfere (routing keys are namespaced
 * `prefill:` / `decode:` by the key-based policies). A `request.ring` is not passed on: it covers
 * one candidate list, and each leg's policy keeps a ring per list of its own.
 *
 * Never returns half a pair: when either list has no available worker, the result is
 * `undefined` and neither policy is asked.
 *
 * Cost: the two policies' costs plus an O(1) availability check of each list (O(n) when most
 * workers are unavailable). Allocates the two per-leg request objects and the result.
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `policies` is not two distinct policies.
 * @public
 */
export function selectPair(
  prefillWorkers: readonly Worker[],
  decodeWorkers: readonly Worker[],
  request: SelectRequest | undefined,
  policies: PairPolicies,
): WorkerPair | undefined {
  const prefillPolicy = policies?.prefill;
  const decodePolicy = policies?.decode;
  if (typeof prefillPolicy?.select !== 'function' || typeof decodePolicy?.select !== 'function') {
    throw new FleetRouteError('INVALID_ARGUMENT', 'selectPair needs { prefill, decode } policies');
  }
  if (prefillPolicy === decodePolicy) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      'selectPair needs a separate policy instance per leg (the same instance would share counters and keys)',
    );
  }
  if (!Array.isArray(prefillWorkers) || !Array.isArray(decodeWorkers)) return undefined;
  if (prefillWorkers.length === 0 || decodeWorkers.length === 0) return undefined;
  if (nextAvailable(prefillWorkers, 0) < 0 || nextAvailable(decodeWorkers, 0) < 0) return undefined;
  // A request's `ring` covers one candidate list; each leg builds (and caches) its own instead.
  const { ring: _ring, ...base } = typeof request === 'object' && request !== null ? request : {};
  const prefill = prefillPolicy.select(prefillWorkers, { ...base, leg: 'prefill' });
  if (prefill === undefined) return undefined;
  const decode = decodePolicy.select(decodeWorkers, { ...base, leg: 'decode' });
  if (decode === undefined) return undefined;
  return { prefill, decode };
}
