/**
 * The `disaggregation` option of the OpenAI front: how a request for a model served by prefill
 * and decode workers runs its two legs.
 *
 * @module
 */
import { custom, integer, OptionTable, oneOf, type Resolved } from '../core/option-table.js';
import {
  type DisaggregationRule,
  type ResolvedDisaggregationRule,
  resolveDisaggregationRule,
} from '../policies/conditional-disaggregation.js';

/**
 * How {@link OpenAIHandlerOptions.disaggregation} runs a prefill/decode-disaggregated request
 * (see docs/openai.md, "Prefill/decode disaggregation").
 *
 * @public
 */
export interface DisaggregationOptions {
  /**
   * What a request does when its model has no prefill worker available (none ready, every one's
   * breaker open): `'fail'` answers 503 (`code: 'no_prefill_worker'`); `'decode_only'` sends it to
   * its decode worker alone, which prefills the prompt itself. Either way a
   * `FLEETROUTE_DISAGG_FALLBACK` warning is logged.
   * @defaultValue 'fail'
   */
  readonly fallback?: 'fail' | 'decode_only';
  /**
   * Conditional disaggregation: when the decode worker picked for a request holds most of its
   * prompt, the prefill leg is skipped and the decode worker prefills the rest itself. `false`:
   * every request runs both legs. Only a decode policy that knows the engines' caches
   * (`decodePolicy: 'cache_aware'`) ever reports a match; with another one every request runs
   * both legs.
   * @defaultValue the rule's defaults (2,048 tokens and 0.7 of the prompt)
   */
  readonly rule?: DisaggregationRule | false;
  /**
   * The bootstrap port sent to SGLang for a prefill worker registered without `bootstrapPort`
   * (SGLang's own default, `--disaggregation-bootstrap-port`).
   * @defaultValue 8998
   */
  readonly bootstrapPort?: number;
  /**
   * Largest answer read from a vLLM prefill leg (bytes), whose `kv_transfer_params` are relayed
   * to the decode leg. A longer answer fails that prefill attempt.
   * @defaultValue 1048576
   */
  readonly maxPrefillAnswerBytes?: number;
}

/** @internal The options of {@link DisaggregationOptions}. */
export const DISAGGREGATION_OPTIONS = new OptionTable(
  'createOpenAIHandler.disaggregation',
  'DisaggregationOptions',
  {
    fallback: oneOf<'fail' | 'decode_only'>(['fail', 'decode_only'], 'fail'),
    rule: custom<ResolvedDisaggregationRule | false>(
      resolveDisaggregationRule(undefined),
      (field, value) =>
        value === false ? false : resolveDisaggregationRule(value as DisaggregationRule, field),
      "the rule's defaults",
    ),
    bootstrapPort: integer(8998, 1, 65_535),
    maxPrefillAnswerBytes: integer(1_048_576, 1_024, 67_108_864),
  },
);

/** @internal The options resolved. */
export type ResolvedDisaggregationOptions = Resolved<(typeof DISAGGREGATION_OPTIONS)['specs']>;

/**
 * @internal Validates the options and fills in the defaults.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 */
export function resolveDisaggregationOptions(input: unknown): ResolvedDisaggregationOptions {
  return DISAGGREGATION_OPTIONS.read(input ?? {});
}
