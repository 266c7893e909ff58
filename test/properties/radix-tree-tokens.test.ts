/**
 * The radix tree's properties (radix-tree-properties.ts) for token keys (page-aligned, sibling chains, partial pages).
 */
import { describe } from 'vitest';
import { properties, TOKENS } from './radix-tree-properties.js';

describe('RadixTree properties', () => {
  properties(TOKENS);
});
