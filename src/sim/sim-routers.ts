/**
 * The routing side of a simulation: K real `Router`s, each over its own `WorkerRegistry` of the
 * simulated workers and its own policy, and the guarantee that all of them are closed however
 * the run ends.
 *
 * @module
 * @internal
 */
import { adapterAware } from '../policies/adapter-aware.js';
import { createPolicy } from '../policies/create-policy.js';
import type { Policy } from '../policies/policy.js';
import { RedisSharedStore } from '../redis/redis-store.js';
import { WorkerRegistry } from '../registry/worker-registry.js';
import { Router } from '../router/router.js';
import { SharedState } from '../shared/shared-state.js';
import type { SharedStore } from '../shared/shared-store.js';
import { openSimStore } from './sim-store.js';
import {
  decodePolicyConfigOf,
  policyConfigOf,
  type ResolvedSimulationOptions,
} from './simulation-options.js';

/** How long a simulated router waits on its store (real ms): long enough never to be missed. */
const SIM_STORE_WAIT_MS = 120_000;

/** Router `k`'s policy: `o.policy`, wrapped in `adapterAware` when the options say so. */
function policyOfRouter(o: ResolvedSimulationOptions, k: number, clock: () => number): Policy {
  const policy = createPolicy(o.policy, policyConfigOf(o, k, clock) as never) as Policy;
  return o.adapterAware === undefined ? policy : adapterAware(policy, { ...o.adapterAware, clock });
}

/**
 * @internal The routers of one run. Everything {@link SimRouters.open} builds is recorded as soon
 * as it exists, so {@link SimRouters.close} closes it even when `open` failed halfway.
 */
export class SimRouters {
  readonly #routers: Router[] = [];
  readonly #registries: WorkerRegistry[] = [];
  readonly #policies: Policy[] = [];
  readonly #decodePolicies: Policy[] = [];
  readonly #shared: SharedState[] = [];
  #store: SharedStore | undefined;

  /** The routers built so far, in order (requests go to them round-robin). */
  get routers(): readonly Router[] {
    return this.#routers;
  }

  /** Every router's shared state, in router order (empty without `sharedState`). */
  get shared(): readonly SharedState[] {
    return this.#shared;
  }

  /** Every router's policy, in router order (`policies[k]` is `routers[k]`'s). */
  get policies(): readonly Policy[] {
    return this.#policies;
  }

  /**
   * With `disaggregation`: every router's decode-leg policy, in router order (its prefill leg's
   * is `policies[k]`); empty otherwise.
   */
  get decodePolicies(): readonly Policy[] {
    return this.#decodePolicies;
  }

  /**
   * Builds `o.routers` routers, each over a registry of `urls` (every worker `ready`, health
   * checks and load polling off), with the policy `o.policy` reading `clock`, or the one
   * `policyOf(k)` returns for router `k` when given (the oracle run's).
   *
   * @throws what a registry, policy or router constructor throws; `TRANSPORT_FAILED` when the
   *   shared store is a Redis nobody answers on; what was built stays recorded for
   *   {@link SimRouters.close}. Cost: O(routers × workers).
   */
  async open(
    o: ResolvedSimulationOptions,
    urls: readonly string[],
    clock: () => number,
    policyOf?: (k: number) => Policy,
  ): Promise<void> {
    const target = policyOf === undefined ? o.sharedState : undefined;
    if (target !== undefined) {
      this.#store = await openSimStore(
        target,
        `fleetroute-sim-${o.seed}-${process.pid}-${Math.random().toString(36).slice(2, 10)}`,
        clock,
      );
    }
    for (let k = 0; k < o.routers; k++) {
      const registry = await WorkerRegistry.create({ defaultStatus: 'ready', clock });
      this.#registries.push(registry);
      const d = o.disaggregation;
      for (let i = 0; i < urls.length; i++) {
        const url = urls[i]!;
        // With disaggregation, the prefill pool first, then the decode pool.
        await registry.register(
          d === undefined ? { url } : { url, type: i < d.prefillWorkers ? 'prefill' : 'decode' },
        );
      }
      const policy = policyOf?.(k) ?? policyOfRouter(o, k, clock);
      const decodePolicy =
        d === undefined
          ? undefined
          : (createPolicy(d.decodePolicy, decodePolicyConfigOf(o, k, clock) as never) as Policy);
      if (decodePolicy !== undefined) this.#decodePolicies.push(decodePolicy);
      const store = this.#store;
      const shared =
        store === undefined
          ? undefined
          : new SharedState({
              store,
              routerId: `router-${k}`,
              // Simulated time stands still while a router waits on the store: waiting costs
              // the run nothing, so no deadline may cut a lookup short (a missed one would make
              // the run depend on the machine's speed).
              loads: { refreshMs: 0, timeoutMs: SIM_STORE_WAIT_MS },
              sessions: { deadlineMs: SIM_STORE_WAIT_MS },
              prefixIndex: { deadlineMs: SIM_STORE_WAIT_MS },
            });
      if (shared !== undefined) this.#shared.push(shared);
      let router: Router;
      try {
        router = new Router({
          ...(shared === undefined ? {} : { shared }),
          registry,
          transport: { probe: async () => true },
          policy,
          // The policy under test routes the prefill leg.
          ...(decodePolicy === undefined ? {} : { prefillPolicy: policy, decodePolicy }),
          health: false,
          loadPolling: false,
          reportLeakedLeases: false,
          // On simulated time: its waits, deadlines and report ages read the run's clock.
          ...(o.admission === undefined ? {} : { admission: { ...o.admission, clock } }),
        });
      } catch (error) {
        policy.close?.();
        decodePolicy?.close?.();
        throw error;
      }
      this.#routers.push(router);
      this.#policies.push(policy);
      router.start();
    }
  }

  /**
   * Closes every router (and with it its policy), then every registry, even when one of them
   * fails to close.
   *
   * @throws the first error a close threw, once all have been tried. Cost: O(routers).
   */
  async close(): Promise<void> {
    let failure: { readonly error: unknown } | undefined;
    for (const router of this.#routers) {
      try {
        await router.close();
      } catch (error) {
        failure ??= { error };
      }
    }
    for (const registry of this.#registries) {
      try {
        registry.close();
      } catch (error) {
        failure ??= { error };
      }
    }
    const store = this.#store;
    if (store instanceof RedisSharedStore) {
      try {
        await store.clear();
      } catch {
        // The run's keys expire by themselves.
      }
      await store.close();
    }
    if (failure !== undefined) throw failure.error;
  }
}
