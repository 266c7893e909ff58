/**
 * The radix tree's properties (radix-tree-properties.ts) for text keys over the BMP.
 */
import { describe } from 'vitest';
import { BMP, properties } from './radix-tree-properties.js';

describe('RadixTree properties', () => {
  properties(BMP);
});
