/**
 * One worker's prefix cache: matching, pinning, publishing after prefill, LRU eviction of idle
 * blocks only, and capacity — with a model-based property test over random operation sequences.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PrefixCache } from '../../src/sim/prefix-cache.js';
import { runs } from '../helpers/fc-settings.js';

const keys = (...values: number[]) => Float64Array.from(values);

describe('PrefixCache', () => {
  it('matches only published blocks, as a prefix', () => {
    const cache = new PrefixCache(100);
    const a = keys(1, 2, 3);
    expect(cache.admit(a, 0, 3, false)).toBe(true);
    expect(cache.match(a)).toBe(0); // allocated, not yet reusable
    const pinned: number[] = [];
    expect(cache.publish(a, 0, 3, pinned)).toBe(3);
    expect(cache.match(a)).toBe(3);
    expect(cache.match(keys(1, 2, 9))).toBe(2);
    expect(cache.match(keys(9, 2, 3))).toBe(0);
    expect(cache.match(a, 1)).toBe(1);
  });

  it('evicts idle blocks least recently used first, never pinned ones', () => {
    const cache = new PrefixCache(4);
    const old = keys(1, 2);
    const recent = keys(3, 4);
    for (const k of [old, recent]) {
      const pinned: number[] = [];
      cache.admit(k, 0, 2, false);
      cache.publish(k, 0, 2, pinned);
      cache.release(pinned, 0);
    }
    expect(cache.used).toBe(4);
    // Two fresh blocks: the two oldest idle ones go.
    expect(cache.admit(keys(5, 6), 0, 2, false)).toBe(true);
    expect(cache.match(old)).toBe(0);
    expect(cache.match(recent)).toBe(2);
    expect(cache.used).toBe(4);
  });

  it('refuses an admission that does not fit, changing nothing, unless forced', () => {
    const cache = new PrefixCache(3);
    const pinned: number[] = [];
    cache.admit(keys(1, 2), 0, 2, false);
    cache.publish(keys(1, 2), 0, 2, pinned); // pinned by a running request
    expect(cache.admit(keys(7, 8), 0, 2, false)).toBe(false);
    expect(cache.used).toBe(2);
    expect(cache.admit(keys(7, 8), 0, 2, true)).toBe(true);
    expect(cache.used).toBe(4);
    expect(cache.match(keys(1, 2))).toBe(2); // pinned blocks survive even then
  });

  it('a block published twice is stored once; the second copy stays private to its request', () => {
    const cache = new PrefixCache(100);
    const a: number[] = [];
    const b: number[] = [];
    cache.admit(keys(1, 2), 0, 2, false);
    cache.admit(keys(1, 2), 0, 2, false);
    expect(cache.publish(keys(1, 2), 0, 2, a)).toBe(2);
    expect(cache.publish(keys(1, 2), 0, 2, b)).toBe(0);
    expect(cache.used).toBe(4);
    cache.release(b, 2);
    cache.release(a, 0);
    expect(cache.used).toBe(2);
  });

  it('keeps a finished answer as idle reusable blocks', () => {
    const cache = new PrefixCache(100);
    cache.admit(keys(1, 2, 3), 0, 3, false);
    const pinned: number[] = [];
    cache.publish(keys(1, 2, 3), 0, 2, pinned); // the prompt: blocks 0 and 1
    expect(cache.keep(keys(1, 2, 3), 2, 3)).toBe(1); // the answer: block 2
    cache.release(pinned, 0);
    expect(cache.match(keys(1, 2, 3))).toBe(3);
    expect(cache.used).toBe(3);
  });

  it('model check: capacity holds without force, pinned blocks are never lost, counts stay exact', () => {
    type Op =
      | { kind: 'run'; prefix: number[]; fresh: number }
      | { kind: 'publish'; job: number }
      | { kind: 'finish'; job: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constant('run' as const),
        prefix: fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 5 }),
        fresh: fc.integer({ min: 0, max: 3 }),
      }),
      fc.record({ kind: fc.constant('publish' as const), job: fc.nat(20) }),
      fc.record({ kind: fc.constant('finish' as const), job: fc.nat(20) }),
    );
    fc.assert(
      fc.property(
        fc.integer({ min: 4, max: 24 }),
        fc.array(op, { maxLength: 60 }),
        (capacity, ops) => {
          const cache = new PrefixCache(capacity);
          interface Job {
            keys: Float64Array;
            pinned: number[];
            private: number;
            published: boolean;
          }
          const jobs: Job[] = [];
          const live = (): Job[] => jobs.filter((j) => j.private >= 0);
          for (const o of ops) {
            if (o.kind === 'run') {
              // Chain the prefix so keys name whole prefixes.
              let h = 0;
              const k = Float64Array.from(o.prefix, (v) => (h = h * 31 + v));
              const matched = cache.match(k);
              const fresh = k.length - matched + o.fresh;
              if (!cache.admit(k, matched, fresh, false)) continue;
              jobs.push({
                keys: k,
                pinned: Array.from(k.subarray(0, matched)),
                private: fresh,
                published: false,
              });
            } else {
              const running = live();
              const job = running[o.job % Math.max(1, running.length)];
              if (job === undefined) continue;
              if (o.kind === 'publish' && !job.published) {
                job.published = true;
                job.private -= cache.publish(
                  job.keys,
                  job.pinned.length,
                  job.keys.length,
                  job.pinned,
                );
              } else if (o.kind === 'finish') {
                cache.release(job.pinned, job.private);
                job.private = -1;
              }
            }
            // Every pinned block of a running job is still reusable.
            for (const job of live()) {
              for (const key of job.pinned) expect(cache.match(Float64Array.of(key))).toBe(1);
            }
            const privateHeld = live().reduce((sum, j) => sum + j.private, 0);
            expect(cache.used).toBeGreaterThanOrEqual(privateHeld);
            expect(cache.used).toBeLessThanOrEqual(capacity);
          }
        },
      ),
      runs(300, 3_000),
    );
  });
});
