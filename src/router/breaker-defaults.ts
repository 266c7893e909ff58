/**
 * Whether a router may write its `circuitBreaker` option as its registry's breaker defaults.
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';
import { registryInternals, type WorkerRegistry } from '../registry/worker-registry.js';
import {
  type ResolvedCircuitBreakerConfig,
  resolveCircuitBreakerConfig,
  sameCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';

/**
 * @internal Checks that a router may write `config` as `registry`'s breaker defaults: breakers
 * belong to the workers, so every router on a registry shares them, and a router asking for
 * defaults other than those the registry holds while another open router claims them is a
 * conflict to report, not a silent last-writer-wins. The comparison is with the registry's
 * current defaults (a direct `setCircuitBreakerDefaults` counts), so nothing here can drift.
 * The router claims the returned config with `registryInternals.claimBreakerDefaults` once it
 * exists, and releases it when it closes.
 *
 * @returns the resolved config, to be written as is (not resolved again).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `circuitBreaker` for a bad field, or
 *   when another open router holds different defaults on this registry. Cost: O(options).
 */
export function checkBreakerDefaults(
  registry: WorkerRegistry,
  config: unknown,
): ResolvedCircuitBreakerConfig {
  const resolved = resolveCircuitBreakerConfig(config, 'circuitBreaker');
  const claimed = registryInternals.claimedBreakerDefaults(registry);
  if (claimed !== undefined && !sameCircuitBreakerConfig(claimed, resolved)) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      'circuitBreaker differs from the defaults another open router set on this registry; ' +
        'breakers belong to the workers and are shared by every router: set the defaults once ' +
        '(WorkerRegistry.create({ circuitBreaker }) or the first router) and leave this option out',
    );
  }
  return resolved;
}
