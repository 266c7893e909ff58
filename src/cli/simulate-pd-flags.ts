/**
 * The flags of `fleetroute simulate` for a prefill/decode-disaggregated fleet, with the defaults
 * and bounds of the simulator's own option tables.
 *
 * @module
 * @internal
 */
import type { BoundedSpec } from '../core/option-table.js';
import { DISAGGREGATION_RULE_OPTIONS } from '../policies/conditional-disaggregation.js';
import { POLICY_NAMES } from '../policies/create-policy.js';
import type { PolicyName } from '../policies/policy.js';
import { SIM_DISAGGREGATION_OPTIONS } from '../sim/disaggregation.js';
import { decimal, flag, integer, oneOf } from './flags.js';

/** @internal What `--disaggregation` takes: a mode, or `both` to compare them. */
export const PD_MODES = ['always', 'conditional', 'both'] as const;
/** @internal One of {@link PD_MODES}. */
export type PdModeName = (typeof PD_MODES)[number];

const PD_DEFAULTS = SIM_DISAGGREGATION_OPTIONS.read(undefined);
const SPECS = SIM_DISAGGREGATION_OPTIONS.specs;
const RULE = DISAGGREGATION_RULE_OPTIONS.specs;

function integerOf(spec: BoundedSpec): (text: string, flag: string) => number {
  return integer(spec.min, spec.max);
}

function decimalOf(spec: BoundedSpec): (text: string, flag: string) => number {
  return decimal(spec.min, spec.max);
}

/** @internal The flags of a disaggregated fleet; each but `--disaggregation` needs it. */
export const PD_FLAGS = {
  disaggregation: flag<PdModeName | undefined>({
    section: 'Prefill/decode',
    value: '<mode>',
    help: `run a prefill pool and a decode pool: always (every request runs both legs), conditional (a decode worker prefills a mostly cached prompt itself) or both (each policy twice, rows +always and +conditional); the policies route the prefill leg`,
    fallback: undefined,
    shown: 'off: regular workers',
    read: oneOf(PD_MODES),
  }),
  'prefill-workers': flag({
    section: 'Prefill/decode',
    value: '<n>',
    help: 'workers of the prefill pool (in place of --workers)',
    fallback: PD_DEFAULTS.prefillWorkers,
    read: integerOf(SPECS.prefillWorkers),
  }),
  'decode-workers': flag({
    section: 'Prefill/decode',
    value: '<n>',
    help: 'workers of the decode pool',
    fallback: PD_DEFAULTS.decodeWorkers,
    read: integerOf(SPECS.decodeWorkers),
  }),
  'transfer-ms': flag({
    section: 'Prefill/decode',
    value: '<ms>',
    help: 'fixed cost of one KV transfer from a prefill worker to a decode worker',
    fallback: PD_DEFAULTS.transferMs,
    read: decimalOf(SPECS.transferMs),
  }),
  'transfer-ms-per-1k': flag({
    section: 'Prefill/decode',
    value: '<ms>',
    help: 'added cost of a KV transfer per 1,000 tokens moved; the default is 128 KB of KV per token at about 25 GB/s',
    fallback: PD_DEFAULTS.transferMsPerThousandTokens,
    read: decimalOf(SPECS.transferMsPerThousandTokens),
  }),
  'decode-policy': flag<PolicyName | undefined>({
    section: 'Prefill/decode',
    value: '<name>',
    help: "the decode leg's policy; with cache_aware the conditional rule reads what it believes the decode worker holds",
    fallback: undefined,
    shown: 'always: power_of_two; conditional: cache_aware',
    read: oneOf(POLICY_NAMES),
  }),
  'local-prefill-tokens': flag({
    section: 'Prefill/decode',
    value: '<n>',
    help: 'conditional: the decode worker prefills when fewer prompt tokens than this are uncached there…',
    fallback: PD_DEFAULTS.rule.localPrefillTokens,
    read: integerOf(RULE.localPrefillTokens),
  }),
  'local-prefill-share': flag({
    section: 'Prefill/decode',
    value: '<p>',
    help: '…and less than this share of the prompt',
    fallback: PD_DEFAULTS.rule.localPrefillShare,
    read: decimalOf(RULE.localPrefillShare),
  }),
} as const;
