/**
 * `PolicyPicker`: which policy routes a request — its model's, else the router's; a prefill or
 * decode leg's, `prefillPolicy` / `decodePolicy` — over which candidates: the registry's list for
 * the model (of the leg's worker type, for a leg), and on a retry that list without the workers
 * tried. The pick is timed into a `decision` event when someone listens, and told to the shared
 * state.
 *
 * @module
 * @internal
 */
import type { NoWorkerReason } from '../core/errors.js';
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
  #matched: number | undefined;

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
    const policy = this.policyOf(request);
    const leg = legOf(request);
    const worker =
      leg === undefined
        ? this.#pickWith(policy, model, registry, request, exclude, attempt)
        : this.#pickLeg(policy, model, registry.getByModel(model, leg), request, exclude, attempt);
    // Asked only for a decode leg (conditional disaggregation reads it): else never, so a
    // router nobody observes never asks its policies to explain.
    this.#matched = worker === undefined || leg !== 'decode' ? undefined : policy.explain?.()?.held;
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

  /**
   * For a decode leg, the share of the prompt (0 … 1) the last pick's policy matched on the
   * worker it picked (`explain().held`); `undefined` for other requests, when it keeps no
   * such knowledge, or when it picked nothing.
   */
  get matched(): number | undefined {
    return this.#matched;
  }

  /**
   * The policy of a `prefill` / `decode` leg (`prefillPolicy` / `decodePolicy`); else the policy
   * of `request.model`, else the default policy.
   */
  policyOf(request: SelectRequest): Policy {
    const leg = legOf(request);
    if (leg !== undefined) return leg === 'prefill' ? this.#o.prefillPolicy : this.#o.decodePolicy;
    const model = typeof request.model === 'string' ? request.model : undefined;
    return (model === undefined ? undefined : this.#o.policies.get(model)) ?? this.#o.policy;
  }

  /**
   * Why no worker was available for `request`: `unknown_model` when no registered worker (of
   * its leg's type, for a leg) serves its model (wildcard workers serve every model), else
   * `unavailable`. O(1).
   */
  noWorkerReason(request: SelectRequest): NoWorkerReason {
    const model = typeof request.model === 'string' ? request.model : undefined;
    const leg = legOf(request);
    const workers = this.#o.registry.getByModel(model, leg);
    return workers.length === 0 ? 'unknown_model' : 'unavailable';
  }

  /** Every policy of the router, each once: the default, the models', prefill and decode. */
  all(): Policy[] {
    const o = this.#o;
    return [...new Set([o.policy, ...o.policies.values(), o.prefillPolicy, o.decodePolicy])];
  }

  /**
   * A leg's pick: among the model's workers of the leg's type, without the tried ones, and
   * without a ring (the registry's covers every type; a leg's policy keeps its own).
   */
  #pickLeg(
    policy: Policy,
    model: string | undefined,
    workers: readonly Worker[],
    request: SelectRequest,
    exclude: ReadonlySet<Worker> | undefined,
    attempt: number,
  ): Worker | undefined {
    const candidates =
      exclude !== undefined && exclude.size > 0 ? workers.filter((w) => !exclude.has(w)) : workers;
    const req = request.ring === undefined ? request : withoutRing(request);
    const events = this.#events;
    if (events.listening.decision === 0) return policy.select(candidates, req);
    return events.decide(policy, candidates, req, model, attempt);
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

/** The leg of a `prefill` / `decode` request; `undefined` for a single request (any other). */
function legOf(request: SelectRequest): 'prefill' | 'decode' | undefined {
  const leg = request.leg;
  return leg === 'prefill' || leg === 'decode' ? leg : undefined;
}

function withoutRing(request: SelectRequest): SelectRequest {
  const { ring: _ring, ...rest } = request;
  return rest;
}
