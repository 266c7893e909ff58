/**
 * `loadMsgpackDecode` with the optional peer installed (this repository's dev dependency): the
 * decode it returns reads 64-bit hashes as bigints and feeds `decodeKvEventBatch`. Without the
 * package, the packed-tarball consumer check (`scripts/check-consumers.mjs`) sees it reject
 * with `MISSING_DEPENDENCY` naming the package.
 */
import { encode } from '@msgpack/msgpack';
import { describe, expect, it } from 'vitest';
import { blockHashes } from '../../src/index.js';
import {
  decodeKvEventBatch,
  KvEventTranslator,
  loadMsgpackDecode,
} from '../../src/kv-events/index.js';

describe('loadMsgpackDecode', () => {
  it('returns one decode that reads 64-bit integers exactly, for decodeKvEventBatch', async () => {
    const decode = await loadMsgpackDecode();
    expect(await loadMsgpackDecode()).toBe(decode);
    const hash = 15_760_518_052_499_183_552n; // above 2^63
    const payload = encode(
      [1.5, [['BlockStored', [hash], null, [1, 2, 3, 4], 4, null, 'GPU']], 0],
      { useBigInt64: true },
    );
    const batch = decodeKvEventBatch(payload, decode);
    expect(batch.events).toMatchObject([{ type: 'stored', hashes: [hash], blockSize: 4 }]);

    // And the translator built with create() files it under blockHashes' keys.
    const translator = await KvEventTranslator.create({ pageSize: 4 });
    expect(translator.translate(batch.events)).toEqual([
      { type: 'stored', hashes: blockHashes([1, 2, 3, 4], { pageSize: 4 }) },
    ]);
  });
});
