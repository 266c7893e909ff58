/**
 * Test-wide setup. Workers keep their state in private fields, which `toEqual` cannot see, so
 * any two workers would compare equal: two workers are compared by identity instead.
 */
import { expect } from 'vitest';
import { Worker } from '../src/index.js';

expect.addEqualityTesters([
  (a: unknown, b: unknown) => (a instanceof Worker && b instanceof Worker ? a === b : undefined),
]);
