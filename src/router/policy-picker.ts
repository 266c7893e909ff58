/**
 * `PolicyPicker`: which policy routes a request — its model's, else the router's — over which
 * candidates: the registry's list for the model, and on a retry that list without the workers
 * tried. The pick is timed into a `decision` event when someone listens, and told to the shared
 * state.
 *
 * @module
 * @internal
 */
import type { Policy, SelectRequest } from '../policies/policy.js';
import { type PrefillCharge, prefillChargeOf } from '../policies/prefill-charge.js';
import { chargePrefill, type Worker, type WorkerLease } from '../workers/worker.js';
import type { RouterEvents } from './router-events.js';
import type { ResolvedRouterOptions } from './router-options.js';

/**
 * @internal The router's policies and how a request finds one. Emits: `decision` (through the
 * router's events, only while someone listens) · Cost: the policy's, plus one filtered copy of
 * the candidates on a retry.
 */
export class PolicyPicker {
  readonly #o: ResolvedRouterOptions;
  readonly #events: RouterEvents;
  /** What the last pick's policy predicted for it, until the lease on it is taken. */
  #charge: PrefillCharge | undefined;

  constructor(options: ResolvedRouterOptions, events: RouterEvents) {
    this.#o = options;
    this.#events = events;
  }

  /**
   * The model's policy, over its workers, without `exclude`d ones; a worker picked is told to the
   * shared state (`shared.placed`).
   *
   * @param attempt - 1 for `select` and a call's first attempt; 2, 3, … for retries.
   */
  pick(
    request: SelectRequest,
    exclude: ReadonlySet<Worker> | undefined,
    attempt: number,
  ): Worker | undefined {
    const registry = this.#o.registry;
    const model = typeof request.model === 'string' ? request.model : undefined;
    const policy =
      (model === undefined ? undefined : this.#o.policies.get(model)) ?? this.#o.policy;
    const worker = this.#pickWith(policy, model, registry, request, exclude, attempt);
    const charge = worker === undefined ? undefined : prefillChargeOf(policy);
    this.#charge = charge?.worker === worker ? charge : undefined;
    if (worker !== undefined && this.#o.shared !== undefined)
      this.#o.shared.placed(request, policy, worker);
    return worker;
  }

  /**
   * Charges `lease` with what the last pick's policy predicted for it (`chargePrefill`), when the
   * lease is on the worker picked; the prediction is used once. O(1).
   */
  charge(lease: WorkerLease): void {
    const charge = this.#charge;
    if (charge === undefined) return;
    this.#charge = undefined;
    if (charge.worker === lease.worker)
      chargePrefill(lease, charge.tokens, charge.ahead, charge.clock, charge.priorPerMs);
  }

  /** The policy of `request.model`, else the default policy. */
  policyOf(request: SelectRequest): Policy {
    const model = typeof request.model === 'string' ? request.model : undefined;
    return (model === undefined ? undefined : this.#o.policies.get(model)) ?? this.#o.policy;
  }

  /** Every policy of the router, each once: the default, the models', prefill and decode. */
  all(): Policy[] {
    const o = this.#o;
    return [...new Set([o.policy, ...o.policies.values(), o.prefillPolicy, o.decodePolicy])];
  }

  #pickWith(
    policy: Policy,
    model: string | undefined,
    registry: ResolvedRouterOptions['registry'],
    request: SelectRequest,
    exclude: ReadonlySet<Worker> | undefined,
    attempt: number,
  ): Worker | undefined {
    let candidates = registry.getByModel(model);
    // Retries: a new list without the workers tried, with the registry's ring so ring policies
    // need not rebuild one.
    const ring =
      exclude !== undefined && exclude.size > 0 ? registry.getHashRing(model) : undefined;
    if (ring !== undefined) candidates = candidates.filter((w) => !exclude!.has(w));
    const req = ring === undefined ? request : { ...request, ring };
    const events = this.#events;
    if (events.listening.decision === 0) return policy.select(candidates, req);
    return events.decide(policy, candidates, req, model, attempt);
  }
}
