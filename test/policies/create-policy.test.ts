import { describe, expect, it } from 'vitest';
import { createPolicy, FleetRouteError, POLICY_NAMES, type PolicyName } from '../../src/index.js';

function invalid(fn: () => unknown): FleetRouteError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(FleetRouteError);
    expect((error as FleetRouteError).code).toBe('INVALID_ARGUMENT');
    return error as FleetRouteError;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

describe('createPolicy', () => {
  it('an unknown option is a compile-time error and a runtime INVALID_ARGUMENT naming the key', () => {
    // `tsc --noEmit` (CI's type-check) fails if any of these lines compiles.
    // @ts-expect-error loadFactr is not an option of prefix_hash
    const typo = () => createPolicy('prefix_hash', { loadFactr: 2 });
    // @ts-expect-error prefixTokens belongs to prefix_hash, not round_robin
    const misplaced = () => createPolicy('round_robin', { prefixTokens: 128 });
    const name: PolicyName = 'least_load';
    // @ts-expect-error a name typed as the union still rejects keys no policy has
    const viaUnion = () => createPolicy(name, { nonsense: true });

    expect(invalid(typo).message).toMatch(
      /^prefix_hash\.loadFactr is not an option of prefix_hash/,
    );
    expect(invalid(misplaced).message).toMatch(/^round_robin\.prefixTokens is not an option/);
    expect(invalid(viaUnion).message).toMatch(/^least_load\.nonsense is not an option/);
  });

  it('builds every policy by name, each a new instance with that name', () => {
    for (const name of POLICY_NAMES) {
      const a = createPolicy(name);
      const b = createPolicy(name);
      expect(a.name).toBe(name);
      expect(a).not.toBe(b);
    }
  });

  it.each([
    ['an unknown name', () => createPolicy('fastest' as PolicyName), /policy must be one of/],
    ['a non-string name', () => createPolicy(42 as unknown as PolicyName), /policy must be one of/],
    [
      'a cacheThreshold above 1',
      () => createPolicy('cache_aware', { cacheThreshold: 2 }),
      /cache_aware\.cacheThreshold/,
    ],
    [
      'an unknown option',
      () => createPolicy('random', { sede: 1 } as never),
      /random\.sede is not an option/,
    ],
    ['a bad seed', () => createPolicy('round_robin', { seed: -1 }), /round_robin\.seed must be/],
    [
      'a bad random',
      () => createPolicy('random', { random: 0.5 } as never),
      /random\.random must be/,
    ],
    [
      'a bad clock',
      () => createPolicy('power_of_two', { clock: 'now' } as never),
      /power_of_two\.clock must be/,
    ],
    [
      'a bad staleAfterMs',
      () => createPolicy('power_of_two', { staleAfterMs: 0 }),
      /power_of_two\.staleAfterMs/,
    ],
    [
      'a load factor below 1',
      () => createPolicy('prefix_hash', { loadFactor: 0.5 }),
      /prefix_hash\.loadFactor/,
    ],
    [
      'a cache_aware load factor below 1',
      () => createPolicy('cache_aware', { loadFactor: 0.9 }),
      /cache_aware\.loadFactor/,
    ],
    [
      'a negative cache_aware load slack',
      () => createPolicy('cache_aware', { loadSlack: -1 }),
      /cache_aware\.loadSlack/,
    ],
    [
      'a zero prefix',
      () => createPolicy('prefix_hash', { prefixTokens: 0 }),
      /prefix_hash\.prefixTokens/,
    ],
    [
      'NaN virtual nodes',
      () => createPolicy('consistent_hashing', { virtualNodes: Number.NaN }),
      /consistent_hashing\.virtualNodes/,
    ],
    [
      'a config that is not an object',
      () => createPolicy('random', 7 as never),
      /random must be an object/,
    ],
  ])('rejects %s with INVALID_ARGUMENT naming it', (_label, fn, message) => {
    expect(invalid(fn).message).toMatch(message);
  });
});
