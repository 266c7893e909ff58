/**
 * Conditional disaggregation: whether a request whose prompt is mostly cached on its decode worker
 * should skip the prefill leg and be prefilled by the decode worker itself.
 *
 * @module
 */
import { integer, number, OptionTable, type Resolved } from '../core/option-table.js';

/**
 * When a disaggregated request skips its prefill leg. The decode worker prefills the prompt
 * itself when the part of the prompt it does not hold is small both in tokens and as a share of
 * the prompt: a remote prefill then costs more (a second request, a KV transfer) than it saves.
 * Both thresholds must hold, as in Dynamo's `isl_bounding` rule.
 *
 * @public
 */
export interface DisaggregationRule {
  /**
   * The decode worker prefills locally only when the prompt's uncached part is below this many
   * tokens (integer ≥ 0 and ≤ 1,000,000,000; 0 never skips the prefill leg).
   *
   * @defaultValue 2048
   */
  readonly localPrefillTokens?: number;
  /**
   * …and below this share of the prompt (0 … 1; 1 drops the share condition, 0 never skips the
   * prefill leg).
   *
   * @defaultValue 0.7
   */
  readonly localPrefillShare?: number;
}

/** @internal The options of {@link DisaggregationRule}. */
export const DISAGGREGATION_RULE_OPTIONS = new OptionTable('disaggregation', 'DisaggregationRule', {
  localPrefillTokens: integer(2048, 0, 1_000_000_000),
  localPrefillShare: number(0.7, 0, 1),
});

/** @internal A rule with every threshold filled in, frozen. */
export type ResolvedDisaggregationRule = Resolved<(typeof DISAGGREGATION_RULE_OPTIONS)['specs']>;

/**
 * @internal Validates a rule.
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the bad or unknown option.
 */
export function resolveDisaggregationRule(
  rule: DisaggregationRule | undefined,
  field?: string,
): ResolvedDisaggregationRule {
  return DISAGGREGATION_RULE_OPTIONS.read(rule ?? {}, undefined, field);
}

/**
 * @internal Whether a request whose prompt has `promptTokens` tokens, of which the decode worker
 * holds the first `cachedTokens`, is prefilled on the decode worker (no prefill leg).
 *
 * A prompt of 0 tokens is prefilled locally; `cachedTokens` is clamped to `0 … promptTokens`
 * (a non-finite or negative value counts as 0). O(1), allocates nothing.
 */
export function prefillsLocally(
  rule: ResolvedDisaggregationRule,
  promptTokens: number,
  cachedTokens: number,
): boolean {
  const prompt = promptTokens > 0 && Number.isFinite(promptTokens) ? promptTokens : 0;
  if (prompt === 0) return true;
  const cached = cachedTokens > 0 ? Math.min(cachedTokens, prompt) : 0;
  const uncached = prompt - cached;
  if (uncached >= rule.localPrefillTokens) return false;
  const share = rule.localPrefillShare;
  return share >= 1 || uncached < share * prompt;
}
