/**
 * The simulated prefill/decode-disaggregated fleet: a prefill pool, a decode pool, the cost of
 * moving a prompt's KV cache from one to the other, and when a request skips the prefill leg.
 *
 * @module
 */
import {
  custom,
  derived,
  integer,
  number,
  OptionTable,
  oneOf,
  type Resolved,
} from '../core/option-table.js';
import { fail } from '../core/options.js';
import {
  type DisaggregationRule,
  type ResolvedDisaggregationRule,
  resolveDisaggregationRule,
} from '../policies/conditional-disaggregation.js';
import { POLICY_NAMES } from '../policies/create-policy.js';
import type { PolicyName } from '../policies/policy.js';

/** How a disaggregated fleet runs its requests. @public */
export type DisaggregationMode = 'always' | 'conditional';

/**
 * A prefill/decode-disaggregated fleet (`SimulationOptions.disaggregation`). The fleet then has
 * `prefillWorkers` + `decodeWorkers` workers, registered with the routers as `type: 'prefill'`
 * and `'decode'`; every one has the fleet model's cache and speeds, and its own prefix cache.
 *
 * A request that runs both legs is prefilled on its prefill worker (the prompt's part that
 * worker's cache does not hold), its KV cache is then moved to its decode worker — the part the
 * decode worker does not hold already, which costs `transferMs` + `transferMsPerThousandTokens`
 * per 1,000 tokens — and the decode worker generates the answer; its first token comes out of
 * the decode worker's first step. A request prefilled locally skips the prefill leg: its decode
 * worker computes the uncached part itself, in its own batch, as a regular worker does.
 *
 * @public
 */
export interface SimDisaggregation {
  /**
   * `'always'`: every request runs both legs, each selected by its router (`select` with `leg`
   * `'decode'`, then `'prefill'`). `'conditional'`: once the decode worker is chosen, when the
   * rule (`rule`) says the prompt's part it does not hold is small, it prefills the request
   * itself and no prefill leg runs.
   * @defaultValue 'always'
   */
  readonly mode?: DisaggregationMode;
  /** Workers of the prefill pool (1 … 4,096). @defaultValue 4 */
  readonly prefillWorkers?: number;
  /** Workers of the decode pool (1 … 4,096). @defaultValue 4 */
  readonly decodeWorkers?: number;
  /**
   * Fixed cost of one KV transfer, ms: the hand-off between the legs and the decode worker's
   * setup of the pull. @defaultValue 2
   */
  readonly transferMs?: number;
  /**
   * Added cost of a KV transfer per 1,000 tokens moved, ms. The default assumes an 8 B-class
   * model (128 KB of fp16 KV per token, so 1,000 tokens are 128 MB) moved by NIXL over RDMA at
   * about 25 GB/s, one 200–400 Gb/s NIC per GPU. @defaultValue 5
   */
  readonly transferMsPerThousandTokens?: number;
  /**
   * The decode leg's policy (each router builds its own instance; the policy under test routes
   * the prefill leg). With `cache_aware`, the conditional rule reads the share of the prompt it
   * matched (`explain().held`), as `fleetroute/openai` does; with another policy, which keeps
   * no such belief, the decode worker's actual cache.
   * @defaultValue 'power_of_two' with `mode: 'always'` (the router's own decode-leg default),
   * 'cache_aware' with `mode: 'conditional'`
   */
  readonly decodePolicy?: PolicyName;
  /** When a request skips its prefill leg, with `mode: 'conditional'`. @defaultValue the rule's defaults */
  readonly rule?: DisaggregationRule;
}

/** @internal The options of {@link SimDisaggregation}. */
export const SIM_DISAGGREGATION_OPTIONS = new OptionTable('disaggregation', 'SimDisaggregation', {
  mode: oneOf(['always', 'conditional'] as const, 'always'),
  prefillWorkers: integer(4, 1, 4_096),
  decodeWorkers: integer(4, 1, 4_096),
  transferMs: number(2, 0, 1e6),
  transferMsPerThousandTokens: number(5, 0, 1e6),
  decodePolicy: custom<PolicyName>(
    derived((resolved) => (resolved.mode === 'conditional' ? 'cache_aware' : 'power_of_two')),
    (field, value) => readPolicyName(field, value),
    "'power_of_two' with `mode: 'always'`",
  ),
  rule: custom<ResolvedDisaggregationRule>(
    resolveDisaggregationRule(undefined),
    (field, value) => resolveDisaggregationRule(value as DisaggregationRule, field),
    "the rule's defaults",
  ),
});

/** @internal {@link SimDisaggregation} with every field filled in, frozen. */
export type ResolvedSimDisaggregation = Resolved<(typeof SIM_DISAGGREGATION_OPTIONS)['specs']>;

/**
 * @internal Checks `value` as a {@link SimDisaggregation}.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the bad or unknown field.
 */
export function resolveSimDisaggregation(value: unknown): ResolvedSimDisaggregation {
  return SIM_DISAGGREGATION_OPTIONS.read(value);
}

function readPolicyName(field: string, value: unknown): PolicyName {
  if (!(POLICY_NAMES as readonly unknown[]).includes(value))
    fail(field, `one of ${POLICY_NAMES.join(', ')}`, value);
  return value as PolicyName;
}

/** @internal How long moving `tokens` tokens of KV cache takes, ms (0 tokens: no transfer). */
export function transferTimeMs(d: ResolvedSimDisaggregation, tokens: number): number {
  return tokens <= 0 ? 0 : d.transferMs + (d.transferMsPerThousandTokens * tokens) / 1000;
}

/**
 * What the legs of a disaggregated run did (`PolicyRun.disaggregation`). The run's `hitRate` is
 * then the share of prompt tokens no worker computed (cached on the worker that prefilled them),
 * and its `ttftMs` runs from sending a request to its first token on the decode worker.
 *
 * @public
 */
export interface DisaggregationRun {
  readonly mode: DisaggregationMode;
  readonly prefillWorkers: number;
  readonly decodeWorkers: number;
  /** Requests that ran both legs (a prefill leg, a KV transfer, the decode leg). */
  readonly disaggregated: number;
  /** Requests whose decode worker prefilled them itself: no prefill leg, no transfer. */
  readonly prefillSkipped: number;
  /** `prefillSkipped` over the requests routed, 0 … 1. */
  readonly skippedShare: number;
  /** KV transfers from a prefill worker to a decode worker (one per disaggregated request). */
  readonly transfers: number;
  /** Prompt tokens moved: of each prompt, the part its decode worker did not hold. */
  readonly tokensTransferred: number;
  /** Mean time of one transfer, ms. */
  readonly transferMsMean: number;
  /** Prompt tokens the prefill legs found in their prefill worker's cache, over their prompts. */
  readonly prefillHitRate: number;
  /**
   * Prompt tokens found in the decode worker's cache at admission, over the prompts of every
   * request that reached a decode worker: for a local prefill the tokens not computed, for a
   * transferred one the tokens not moved.
   */
  readonly decodeHitRate: number;
  /**
   * Conditional mode: decisions taken on the decode policy's belief of what its pick holds
   * (`cache_aware`'s `explain().held`); the others used the decode worker's actual cache.
   */
  readonly decisionsByPolicy: number;
  /** Of those, the decisions the decode worker's actual cache would have taken the other way. */
  readonly misjudged: number;
}
