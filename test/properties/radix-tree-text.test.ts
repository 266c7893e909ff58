/**
 * The radix tree's properties (radix-tree-properties.ts) for text keys with surrogate pairs, lone surrogates and pairs cut in half.
 */
import fc from 'fast-check';
import { describe, it } from 'vitest';
import { runs } from '../helpers/fc-settings.js';
import { checkNoSplitPairs, opsArb, properties, replay, TEXT } from './radix-tree-properties.js';

describe('RadixTree properties', () => {
  properties(TEXT);

  it('text splits never fall inside a surrogate pair', () => {
    fc.assert(
      fc.property(opsArb(TEXT, { route: 1 }), (ops) => {
        replay(TEXT, ops, checkNoSplitPairs);
      }),
      runs(300, 2000),
    );
  });
});
