/**
 * Per-model retry overrides: the fields a caller gave for a model, kept while some live worker
 * names the model.
 *
 * @module
 * @internal
 */
import { givenFields } from '../core/options.js';
import { type RetryConfig, resolveRetryConfig } from '../resilience/retry-config.js';

/** @internal */
export class ModelRetryConfigs {
  readonly #configs = new Map<string, RetryConfig>();

  /** The override for `model` (the fields given, frozen), or `undefined`. O(1). */
  get(model: string): RetryConfig | undefined {
    return typeof model === 'string' ? this.#configs.get(model) : undefined;
  }

  /** Validates `config` completely, then keeps the fields given. @throws `INVALID_ARGUMENT`. */
  set(model: string, config: RetryConfig): void {
    resolveRetryConfig(config, 'config');
    this.#configs.set(model, givenFields(config));
  }

  /** Drops the overrides of the models no live worker names any more. */
  dropOrphans(models: readonly string[], served: (model: string) => boolean): void {
    for (const model of models) if (!served(model)) this.#configs.delete(model);
  }

  /** Every override, as a plain object (for snapshots). */
  toObject(): Record<string, RetryConfig> {
    return Object.fromEntries(this.#configs);
  }
}
