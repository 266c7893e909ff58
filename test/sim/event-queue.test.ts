import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventQueue } from '../../src/sim/event-queue.js';
import { runs } from '../helpers/fc-settings.js';

describe('EventQueue', () => {
  it('pops in time order, ties in insertion order (a stable sort)', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 20 }), { maxLength: 200 }), (times) => {
        const queue = new EventQueue();
        for (const [i, t] of times.entries()) queue.push(t, 0, i);
        const popped: number[] = [];
        for (let e = queue.pop(); e !== undefined; e = queue.pop()) popped.push(e.target);
        const expected = times.map((t, i) => ({ t, i })).sort((a, b) => a.t - b.t || a.i - b.i);
        expect(popped).toEqual(expected.map((e) => e.i));
      }),
      runs(300, 2_000),
    );
  });
});
