import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/core/errors.js';
import {
  prefillsLocally,
  resolveDisaggregationRule,
} from '../../src/policies/conditional-disaggregation.js';

const rule = resolveDisaggregationRule(undefined);

describe('conditional disaggregation', () => {
  it('defaults to 2,048 uncached tokens and a 0.7 share, as Dynamo', () => {
    expect(rule).toEqual({ localPrefillTokens: 2048, localPrefillShare: 0.7 });
  });

  it('skips the prefill leg only when the uncached part is small in tokens and in share', () => {
    // 10,000 tokens, 9,000 cached: 1,000 uncached (< 2,048) and 10 % (< 70 %).
    expect(prefillsLocally(rule, 10_000, 9_000)).toBe(true);
    // 10,000 tokens, 5,000 cached: 5,000 uncached is too many tokens.
    expect(prefillsLocally(rule, 10_000, 5_000)).toBe(false);
    // 1,000 tokens, nothing cached: few tokens, but all of the prompt.
    expect(prefillsLocally(rule, 1_000, 0)).toBe(false);
    // 1,000 tokens, 400 cached: 600 uncached = 60 %.
    expect(prefillsLocally(rule, 1_000, 400)).toBe(true);
    expect(prefillsLocally(rule, 0, 0)).toBe(true);
  });

  it('a zero threshold never skips; a share of 1 keys on tokens alone', () => {
    const never = resolveDisaggregationRule({ localPrefillTokens: 0 });
    expect(prefillsLocally(never, 10_000, 9_999)).toBe(false);
    const tokensOnly = resolveDisaggregationRule({ localPrefillShare: 1 });
    expect(prefillsLocally(tokensOnly, 1_000, 0)).toBe(true);
  });

  it('refuses unknown and out-of-range options', () => {
    expect(() => resolveDisaggregationRule({ localPrefillShare: 2 })).toThrow(FleetRouteError);
    expect(() => resolveDisaggregationRule({ localPrefilTokens: 1 } as unknown as object)).toThrow(
      /localPrefilTokens is not an option/,
    );
  });

  it('is monotone: more cached tokens never turn a local prefill into a remote one', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 100_000 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (prompt, a, b) => {
          const [lo, hi] = a < b ? [a, b] : [b, a];
          if (prefillsLocally(rule, prompt, Math.floor(lo * prompt)))
            return prefillsLocally(rule, prompt, Math.floor(hi * prompt));
          return true;
        },
      ),
    );
  });
});
