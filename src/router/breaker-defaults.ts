/**
 * Who owns a registry's circuit-breaker defaults when routers set them.
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import {
  type ResolvedCircuitBreakerConfig,
  resolveCircuitBreakerConfig,
  sameCircuitBreakerConfig,
} from '../resilience/circuit-breaker-config.js';

interface Claim {
  readonly owners: Set<object>;
  readonly config: ResolvedCircuitBreakerConfig;
}

/** The open routers that asked for each registry's breaker defaults, and what they asked for. */
const claims = new WeakMap<WorkerRegistry, Claim>();

/**
 * @internal Checks that a router may write `config` as `registry`'s breaker defaults: breakers
 * belong to the workers, so every router on a registry shares them, and two open routers asking
 * for different defaults is a conflict to report, not a silent last-writer-wins.
 *
 * @returns the resolved config.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `circuitBreaker` for a bad field, or
 *   when another open router on this registry set different defaults.
 */
export function checkBreakerDefaults(
  registry: WorkerRegistry,
  config: unknown,
): ResolvedCircuitBreakerConfig {
  const resolved = resolveCircuitBreakerConfig(config, 'circuitBreaker');
  const claim = claims.get(registry);
  if (claim !== undefined && !sameCircuitBreakerConfig(claim.config, resolved)) {
    throw new FleetRouteError(
      'INVALID_ARGUMENT',
      'circuitBreaker differs from the defaults another open router set on this registry; ' +
        'breakers belong to the workers and are shared by every router: set the defaults once ' +
        '(WorkerRegistry.create({ circuitBreaker }) or the first router) and leave this option out',
    );
  }
  return resolved;
}

/**
 * @internal Writes the defaults (checked by {@link checkBreakerDefaults}) and records `owner` as
 * a router that asked for them.
 */
export function claimBreakerDefaults(
  registry: WorkerRegistry,
  owner: object,
  config: ResolvedCircuitBreakerConfig,
): void {
  const claim = claims.get(registry);
  if (claim === undefined) claims.set(registry, { owners: new Set([owner]), config });
  else claim.owners.add(owner);
  registry.setCircuitBreakerDefaults(config);
}

/** @internal A closed router gives up its claim (the defaults stay as they are). */
export function releaseBreakerDefaults(registry: WorkerRegistry, owner: object): void {
  const claim = claims.get(registry);
  if (claim === undefined || !claim.owners.delete(owner)) return;
  if (claim.owners.size === 0) claims.delete(registry);
}
