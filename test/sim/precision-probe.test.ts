/**
 * `PrecisionProbe`: the longest cached prefix over the fleet, capped below the last prompt token,
 * and the share of requests sent to a worker holding it.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PrecisionProbe } from '../../src/sim/precision-probe.js';
import { PrefixCache } from '../../src/sim/prefix-cache.js';
import { runs } from '../helpers/fc-settings.js';

const keys = (...values: number[]) => Float64Array.from(values);

/** A worker whose cache holds `held` as published blocks. */
function holding(...held: Float64Array[]): { cache: PrefixCache } {
  const cache = new PrefixCache(1_000);
  for (const k of held) {
    cache.admit(k, 0, k.length, false);
    cache.publish(k, 0, k.length, []);
  }
  return { cache };
}

describe('PrecisionProbe', () => {
  it('counts a request as precise only when its worker held the longest match', () => {
    const fleet = [holding(keys(1, 2)), holding(keys(1, 2, 3)), holding()];
    const probe = new PrecisionProbe(3, 4, true);
    const request = keys(1, 2, 3, 4);
    const best = probe.measure(request, 4 * 4 + 1, fleet);
    expect(best).toBe(3);
    probe.record(best, 1);
    expect(probe.value).toBe(1);
    probe.record(probe.measure(request, 17, fleet), 0);
    expect(probe.value).toBe(0.5);
  });

  it('never counts the block holding the last prompt token', () => {
    const fleet = [holding(keys(1, 2, 3))];
    const probe = new PrecisionProbe(1, 4, true);
    // 12 tokens: the third block ends with the last token, which is always computed.
    expect(probe.measure(keys(1, 2, 3), 12, fleet)).toBe(2);
    expect(probe.measure(keys(1, 2, 3), 13, fleet)).toBe(3);
  });

  it('leaves out requests no worker holds any block of, and is undefined until one counts', () => {
    const probe = new PrecisionProbe(2, 4, true);
    const fleet = [holding(), holding(keys(7))];
    probe.record(probe.measure(keys(1, 2), 9, fleet), 0);
    expect(probe.value).toBeUndefined();
    probe.record(probe.measure(keys(7, 8), 9, fleet), 1);
    expect(probe.value).toBe(1);
  });

  it('measures nothing when off', () => {
    const probe = new PrecisionProbe(1, 4, false);
    expect(probe.measure(keys(1), 9, [holding(keys(1))])).toBe(0);
    probe.record(0, 0);
    expect(probe.value).toBeUndefined();
  });

  it('equals the share computed from each worker’s match directly', () => {
    fc.assert(
      fc.property(
        fc.array(fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 5 }), {
          minLength: 1,
          maxLength: 4,
        }),
        fc.array(
          fc.record({
            prompt: fc.array(fc.integer({ min: 1, max: 3 }), { maxLength: 6 }),
            choice: fc.nat(),
          }),
          { maxLength: 20 },
        ),
        (held, requests) => {
          const fleet = held.map((k) => holding(Float64Array.from(k)));
          const probe = new PrecisionProbe(fleet.length, 1, true);
          let considered = 0;
          let precise = 0;
          for (const { prompt, choice } of requests) {
            const k = Float64Array.from(prompt);
            const length = prompt.length + 1;
            const matches = fleet.map((w) => w.cache.match(k, prompt.length));
            const longest = Math.max(...matches);
            const worker = choice % fleet.length;
            probe.record(probe.measure(k, length, fleet), worker);
            if (longest > 0) {
              considered++;
              if (matches[worker] === longest) precise++;
            }
          }
          expect(probe.value).toBe(considered === 0 ? undefined : precise / considered);
        },
      ),
      runs(300, 2_000),
    );
  });
});
