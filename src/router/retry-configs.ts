/**
 * `RetryConfigs`: the retry settings of each `Router.execute` call — the router's, under the
 * override of the request's model (`registry.setModelRetryConfig`).
 *
 * @module
 * @internal
 */
import type { SelectRequest } from '../policies/policy.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import {
  type ResolvedRetryConfig,
  type RetryConfig,
  resolveRetryConfig,
} from '../resilience/retry-config.js';

/**
 * @internal A model's override (as stored by the registry, frozen) → it resolved over the
 * router's `retry`: resolved once per override object, so a new `setModelRetryConfig` (a new
 * object) is picked up by itself.
 */
export class RetryConfigs {
  readonly #registry: WorkerRegistry;
  readonly #base: ResolvedRetryConfig;
  readonly #overrides = new WeakMap<RetryConfig, ResolvedRetryConfig>();

  /** @param base - the router's resolved `retry` option. */
  constructor(registry: WorkerRegistry, base: ResolvedRetryConfig) {
    this.#registry = registry;
    this.#base = base;
  }

  /**
   * The retry settings of a call: the router's, under the override of the request's model. The
   * override holds only the fields given for it (validated and frozen by the registry); the
   * router's config fills the rest. Cost: O(1) after the first call per override.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when the override does not fit over the
   *   router's settings (then on every call: nothing is cached).
   */
  of(request: SelectRequest): ResolvedRetryConfig {
    const model = typeof request.model === 'string' ? request.model : undefined;
    const override = model === undefined ? undefined : this.#registry.getRetryConfig(model);
    if (override === undefined) return this.#base;
    let resolved = this.#overrides.get(override);
    if (resolved === undefined) {
      resolved = resolveRetryConfig(override, 'retry', this.#base);
      this.#overrides.set(override, resolved);
    }
    return resolved;
  }
}
