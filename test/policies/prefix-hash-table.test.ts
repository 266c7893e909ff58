import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  BRANCH,
  NO_NEXT,
  OTHER_NEXT,
  PROBES,
  PrefixTable,
  SAME_NEXT,
} from '../../src/policies/prefix-hash/prefix-table.js';
import { runs } from '../helpers/fc-settings.js';

describe('PrefixTable', () => {
  it('rounds its capacity up to 4 × a power of two', () => {
    expect(new PrefixTable(1).capacity).toBe(4);
    expect(new PrefixTable(16_384).capacity).toBe(16_384);
    expect(new PrefixTable(16_385).capacity).toBe(32_768);
  });

  it('marks a prefix as a branch point only when a different continuation follows it, at the shortest probe that differs', () => {
    const table = new PrefixTable(64);
    table.insert(1, 2);
    const slot = table.find(1, 2);

    expect(table.compare(slot, 40)).toBe(NO_NEXT);
    table.setNext(slot, 40, Uint32Array.of(10, 20, 30));
    expect(table.compare(slot, 40)).toBe(SAME_NEXT); // the same block again: a longer turn
    expect(table.branchDepth(slot)).toBe(-1);
    expect(table.compare(slot, 41)).toBe(OTHER_NEXT);
    expect(table.setBranch(slot, Uint32Array.of(10, 21, 31))).toBe(1); // the ¼ probe differs
    expect(table.branchDepth(slot)).toBe(1);
    expect(table.compare(slot, 40)).toBe(BRANCH); // for good
  });

  it('a branch that only the whole block tells apart has depth PROBES', () => {
    const table = new PrefixTable(8);
    table.insert(1, 2);
    const slot = table.find(1, 2);
    table.setNext(slot, 40, Uint32Array.of(10, 20, 30));

    expect(table.setBranch(slot, Uint32Array.of(10, 20, 30))).toBe(PROBES);
  });

  it('a prefix leads to a branch point once it is one or is flagged above one, until its slot is replaced', () => {
    const table = new PrefixTable(4); // one bucket of 4 slots
    table.insert(1, 4);
    table.insert(2, 8);
    const above = table.find(1, 4);
    const branch = table.find(2, 8);

    expect(table.leadsToBranch(above)).toBe(false);
    table.setAboveBranch(above);
    expect(table.leadsToBranch(above)).toBe(true);
    expect(table.branchDepth(above)).toBe(-1); // not a branch point itself
    table.setNext(branch, 40, Uint32Array.of(10, 20, 30));
    expect(table.leadsToBranch(branch)).toBe(false);
    table.setBranch(branch, Uint32Array.of(11, 20, 30));
    expect(table.leadsToBranch(branch)).toBe(true);
    for (let lo = 12; lo <= 24; lo += 4) table.insert(lo, lo); // four newer hashes replace both
    table.insert(1, 4);
    expect(table.leadsToBranch(table.find(1, 4))).toBe(false);
  });

  it('never holds more than its capacity, and keeps a hash used since the others of its bucket were', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 2 ** 32 - 1 }), { maxLength: 400 }), (los) => {
        const table = new PrefixTable(16);
        // 0x7 lands in bucket 7 & 3 = 3; touched before every insert, it is never the oldest.
        table.insert(0xdead, 0x7);
        for (const lo of los) {
          expect(table.find(0xdead, 0x7)).toBeGreaterThanOrEqual(0);
          if (table.find(lo, lo) < 0) table.insert(lo, lo);
        }
        let held = 0;
        for (const lo of new Set(los)) if (table.find(lo, lo) >= 0) held++;
        expect(held).toBeLessThanOrEqual(table.capacity - 1);
        expect(table.find(0xdead, 0x7)).toBeGreaterThanOrEqual(0);
      }),
      runs(50, 200),
    );
  });

  it('clear() forgets every hash', () => {
    const table = new PrefixTable(8);
    table.insert(1, 2);
    table.clear();

    expect(table.find(1, 2)).toBe(-1);
  });
});
