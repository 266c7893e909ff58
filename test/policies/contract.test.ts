/**
 * The shared policy contract (test/support/policy-contract.ts), run against every policy.
 */
import { describe } from 'vitest';
import { adapterAware, createPolicy, type PolicyConfigMap } from '../../src/index.js';
import { policyContract } from '../support/policy-contract.js';

const names: (keyof PolicyConfigMap)[] = [
  'random',
  'round_robin',
  'power_of_two',
  'least_load',
  'consistent_hashing',
  'prefix_hash',
  'bucket',
  'cache_aware',
  'manual',
  'passthrough',
];

for (const name of names) {
  describe(`${name} policy`, () => {
    policyContract(() => createPolicy(name, { seed: 7 } as never));
  });
}

// Base-model requests (the contract's have no model) go to the inner policy untouched: the
// wrapper keeps its contract.
describe('adapterAware(cache_aware)', () => {
  policyContract(() => adapterAware(createPolicy('cache_aware', { seed: 7 })));
});
