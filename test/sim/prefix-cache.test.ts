/**
 * One worker's prefix cache: matching, pinning, publishing after prefill, LRU eviction of idle
 * blocks only, and capacity — with a model-based property test over random operation sequences.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { PrefixCache } from '../../src/sim/prefix-cache.js';
import { runs } from '../helpers/fc-settings.js';

const keys = (...values: number[]) => Float64Array.from(values);

/**
 * The reference: a `Map` of pin counts and a `Set` of idle blocks whose insertion order is the
 * LRU order — the straightforward implementation `PrefixCache` must behave exactly like.
 */
class ReferenceCache {
  readonly #capacity: number;
  readonly #refs = new Map<number, number>();
  readonly #idle = new Set<number>();
  #private = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  get used(): number {
    return this.#refs.size + this.#private;
  }

  match(k: Float64Array, limit: number = k.length): number {
    let n = 0;
    while (n < limit && this.#refs.has(k[n]!)) n++;
    return n;
  }

  admit(k: Float64Array, matched: number, fresh: number, force: boolean): boolean {
    if (!force && this.#capacity !== Number.POSITIVE_INFINITY) {
      let idlePinned = 0;
      for (let i = 0; i < matched; i++) if (this.#refs.get(k[i]!) === 0) idlePinned++;
      if (this.#capacity - this.used + this.#idle.size - idlePinned < fresh) return false;
    }
    for (let i = 0; i < matched; i++) {
      const refs = this.#refs.get(k[i]!)!;
      if (refs === 0) this.#idle.delete(k[i]!);
      this.#refs.set(k[i]!, refs + 1);
    }
    this.#private += fresh;
    this.#evict();
    return true;
  }

  publish(k: Float64Array, from: number, to: number, pinned: number[]): number {
    let published = 0;
    for (let i = from; i < to; i++) {
      if (this.#refs.has(k[i]!)) continue;
      this.#refs.set(k[i]!, 1);
      this.#private--;
      pinned.push(k[i]!);
      published++;
    }
    return published;
  }

  keep(k: Float64Array, from: number, to: number): number {
    let kept = 0;
    for (let i = from; i < to; i++) {
      if (this.#refs.has(k[i]!)) continue;
      this.#refs.set(k[i]!, 0);
      this.#idle.add(k[i]!);
      this.#private--;
      kept++;
    }
    this.#evict();
    return kept;
  }

  release(pinned: readonly number[], privateBlocks: number): void {
    for (const key of pinned) {
      const refs = this.#refs.get(key)! - 1;
      this.#refs.set(key, refs);
      if (refs === 0) this.#idle.add(key);
    }
    this.#private -= privateBlocks;
  }

  #evict(): void {
    for (const key of this.#idle) {
      if (this.used <= this.#capacity) break;
      this.#idle.delete(key);
      this.#refs.delete(key);
    }
  }
}

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
  it('behaves exactly like the Map/Set reference: same results, same LRU order, same contents', () => {
    type Op =
      | { kind: 'run'; prefix: number[]; fresh: number; force: boolean }
      | { kind: 'publish'; job: number }
      | { kind: 'finish'; job: number; answer: number[] };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.record({
        kind: fc.constant('run' as const),
        prefix: fc.array(fc.integer({ min: 1, max: 6 }), { minLength: 1, maxLength: 8 }),
        fresh: fc.integer({ min: 0, max: 4 }),
        force: fc.boolean(),
      }),
      fc.record({ kind: fc.constant('publish' as const), job: fc.nat(30) }),
      fc.record({
        kind: fc.constant('finish' as const),
        job: fc.nat(30),
        answer: fc.array(fc.integer({ min: 1, max: 6 }), { maxLength: 3 }),
      }),
    );
    fc.assert(
      fc.property(
        fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(Number.POSITIVE_INFINITY)),
        fc.array(op, { maxLength: 120 }),
        (capacity, ops) => {
          const cache = new PrefixCache(capacity);
          const model = new ReferenceCache(capacity);
          interface Job {
            keys: Float64Array;
            promptBlocks: number;
            pinned: number[];
            modelPinned: number[];
            private: number;
            published: boolean;
          }
          const running: Job[] = [];
          const seen = new Set<number>();
          const chain = (values: number[], from = 0): number[] => {
            let h = from;
            // Chained like block keys, large enough to be spread over the 53-bit range.
            return values.map((v) => (h = (h * 131 + v * 7_919) % 2 ** 52));
          };
          for (const o of ops) {
            if (o.kind === 'run') {
              const k = Float64Array.from(chain(o.prefix));
              for (const key of k) seen.add(key);
              const matched = cache.match(k);
              expect(matched).toBe(model.match(k));
              const fresh = k.length - matched + o.fresh;
              const admitted = cache.admit(k, matched, fresh, o.force);
              expect(admitted).toBe(model.admit(k, matched, fresh, o.force));
              if (admitted) {
                const pinned = Array.from(k.subarray(0, matched));
                running.push({
                  keys: k,
                  promptBlocks: k.length,
                  pinned,
                  modelPinned: [...pinned],
                  private: fresh,
                  published: false,
                });
              }
            } else if (running.length > 0) {
              const index = o.job % running.length;
              const job = running[index]!;
              if (o.kind === 'publish' && !job.published) {
                job.published = true;
                const n = cache.publish(job.keys, job.pinned.length, job.promptBlocks, job.pinned);
                expect(n).toBe(
                  model.publish(
                    job.keys,
                    job.modelPinned.length,
                    job.promptBlocks,
                    job.modelPinned,
                  ),
                );
                expect(job.pinned).toEqual(job.modelPinned);
                job.private -= n;
              } else if (o.kind === 'finish' && job.published) {
                const all = Float64Array.from([
                  ...job.keys,
                  ...chain(o.answer, job.keys[job.keys.length - 1]!),
                ]);
                for (const key of all) seen.add(key);
                const kept = cache.keep(all, job.promptBlocks, all.length);
                expect(kept).toBe(model.keep(all, job.promptBlocks, all.length));
                cache.release(job.pinned, job.private - kept);
                model.release(job.modelPinned, job.private - kept);
                running.splice(index, 1);
              }
            }
            expect(cache.used).toBe(model.used);
            // Same contents: every key ever used is held by both or by neither.
            for (const key of seen) {
              expect(cache.match(Float64Array.of(key))).toBe(model.match(Float64Array.of(key)));
            }
          }
        },
      ),
      runs(300, 3_000),
    );
  });
});
