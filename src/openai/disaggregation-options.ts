/**
 * The `disaggregation` option of the OpenAI front: how a request for a model served by prefill
 * and decode workers runs its two legs.
 *
 * @module
 */
import {
  custom,
  duration,
  integer,
  OptionTable,
  oneOf,
  type Resolved,
} from '../core/option-table.js';
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
   * to the decode leg. A longer answer fails that prefill attempt. Also the most read of an SGLang
   * prefill leg's answer, which nobody uses: past it the handler stops reading and cancels that
   * answer once no hand-off is open.
   * @defaultValue 1048576
   */
  readonly maxPrefillAnswerBytes?: number;
  /**
   * How long (ms) a decode leg is kept, at most, after its client went away during the hand-off
   * (before the decode leg's first byte). The decode leg is normally kept until that byte — an
   * engine that loses a decode leg mid-transfer can leak the transfer's blocks — but a decode
   * engine that never answers would otherwise keep the connection forever. Also how long, at
   * most, an SGLang prefill leg's answer is still read after the call ended.
   *
   * The default covers a slow KV pull: one token of a 70B model with grouped-query attention (80
   * layers, 8 KV heads of 128, 16-bit) is 320 KiB of cache, so a 32k-token prompt moves 10 GiB —
   * about a second over 100 Gb/s RDMA, about nine over a 10 Gb/s TCP fallback — plus the time the
   * decode leg waits in its engine's queue for room to receive it. 30 s leaves room for that,
   * and still lets a stuck decode engine go within half a minute of the client.
   * @defaultValue 30000
   */
  readonly handoffTimeoutMs?: number;
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
    handoffTimeoutMs: duration(30_000),
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
