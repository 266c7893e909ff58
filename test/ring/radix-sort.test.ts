import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { radixSort64 } from '../../src/ring/radix-sort.js';

interface Row {
  readonly key: bigint;
  readonly slot: number;
}

function toArrays(
  keys: readonly bigint[],
  SlotArray: Uint16ArrayConstructor | Uint32ArrayConstructor,
) {
  const hi = new Uint32Array(keys.length);
  const lo = new Uint32Array(keys.length);
  const slot = new SlotArray(keys.length);
  keys.forEach((key, i) => {
    hi[i] = Number(key >> 32n);
    lo[i] = Number(key & 0xffff_ffffn);
    slot[i] = i;
  });
  return { hi, lo, slot };
}

function rowsOf(hi: Uint32Array, lo: Uint32Array, slot: Uint16Array | Uint32Array): Row[] {
  return Array.from(hi, (h, i) => ({ key: (BigInt(h) << 32n) | BigInt(lo[i]!), slot: slot[i]! }));
}

/** What the radix sort must produce: a stable comparator sort on the BigInt key. */
function referenceSort(keys: readonly bigint[]): Row[] {
  return keys
    .map((key, slot) => ({ key, slot }))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.slot - b.slot));
}

const u64 = fc.bigInt({ min: 0n, max: 0xffff_ffff_ffff_ffffn });

describe('radixSort64', () => {
  it.each([
    ['Uint16Array', Uint16Array],
    ['Uint32Array', Uint32Array],
  ] as const)(
    'sorts random 64-bit (hi, lo) pairs like a BigInt comparator sort, carrying %s slots',
    (_label, SlotArray) => {
      fc.assert(
        fc.property(fc.array(u64, { maxLength: 300 }), (keys) => {
          // Arrange
          const { hi, lo, slot } = toArrays(keys, SlotArray);

          // Act
          radixSort64(hi, lo, slot);

          // Assert
          expect(rowsOf(hi, lo, slot)).toEqual(referenceSort(keys));
        }),
        { numRuns: 200 },
      );
    },
  );

  it('is stable: equal keys keep their input order', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom(0n, 1n, 0xffff_ffffn, 1n << 32n, 0xffff_ffff_ffff_ffffn), {
          maxLength: 200,
        }),
        (keys) => {
          const { hi, lo, slot } = toArrays(keys, Uint16Array);
          radixSort64(hi, lo, slot);
          expect(rowsOf(hi, lo, slot)).toEqual(referenceSort(keys));
        },
      ),
      { numRuns: 200 },
    );
  });

  it('orders by the high word before the low word, across every 16-bit digit', () => {
    // Arrange: each key differs from its neighbour in exactly one 16-bit digit.
    const keys = [
      0x0001_0000_0000_0000n,
      0x0000_0001_0000_0000n,
      0x0000_0000_0001_0000n,
      0x0000_0000_0000_0001n,
      0x0000_0000_0000_0000n,
      0xffff_0000_0000_0000n,
      0x0000_0000_ffff_ffffn,
    ];
    const { hi, lo, slot } = toArrays(keys, Uint32Array);

    // Act
    radixSort64(hi, lo, slot);

    // Assert
    expect(Array.from(slot)).toEqual([4, 3, 2, 6, 1, 0, 5]);
  });

  it('leaves arrays of length 0 and 1 untouched', () => {
    const empty = toArrays([], Uint16Array);
    radixSort64(empty.hi, empty.lo, empty.slot);
    expect(empty.hi.length).toBe(0);

    const one = toArrays([123n << 40n], Uint16Array);
    radixSort64(one.hi, one.lo, one.slot);
    expect(rowsOf(one.hi, one.lo, one.slot)).toEqual([{ key: 123n << 40n, slot: 0 }]);
  });

  it('sorts in place: the caller arrays hold the result', () => {
    // Arrange
    const { hi, lo, slot } = toArrays([5n, 3n, 4n], Uint16Array);
    const [hiBefore, loBefore, slotBefore] = [hi, lo, slot];

    // Act
    radixSort64(hi, lo, slot);

    // Assert
    expect(hi).toBe(hiBefore);
    expect(lo).toBe(loBefore);
    expect(slot).toBe(slotBefore);
    expect(Array.from(lo)).toEqual([3, 4, 5]);
    expect(Array.from(slot)).toEqual([1, 2, 0]);
  });
});
