/**
 * Properties of HashRing: determinism, minimal movement on membership change, balance,
 * at-most-once probing on the walk, and the bounded-load guarantee.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HashRing } from '../../src/ring/hash-ring.js';
import { runs } from '../helpers/fc-settings.js';

const host = fc.stringMatching(/^[a-z][a-z0-9-]{0,12}$/);
const urlArb = fc
  .tuple(host, fc.integer({ min: 1, max: 65535 }))
  .map(([h, p]) => `http://${h}:${p}`);
const urlsArb = fc.uniqueArray(urlArb, { minLength: 1, maxLength: 24 });
const keysArb = fc.array(fc.string({ unit: 'grapheme', maxLength: 40 }), {
  minLength: 1,
  maxLength: 60,
});
const VN = 40;

function fleet(n: number): string[] {
  return Array.from({ length: n }, (_, i) => `http://10.0.${i >> 8}.${i & 255}:8000`);
}

function ownership(ring: HashRing, keys: number): Map<string, number> {
  const counts = new Map<string, number>(ring.urls.map((u) => [u, 0]));
  for (let k = 0; k < keys; k++) {
    const url = ring.find(`key-${k}`)!;
    counts.set(url, counts.get(url)! + 1);
  }
  return counts;
}

function balance(counts: Map<string, number>): { maxOverMean: number; cv: number } {
  const values = [...counts.values()];
  const mean = values.reduce((a, b) => a + b, 0) / values.length;
  const variance = values.reduce((a, v) => a + (v - mean) ** 2, 0) / values.length;
  return { maxOverMean: Math.max(...values) / mean, cv: Math.sqrt(variance) / mean };
}

describe('HashRing properties', () => {
  it('two independently built rings agree on every key, whatever the URL order', async () => {
    await fc.assert(
      fc.asyncProperty(urlsArb, keysArb, fc.infiniteStream(fc.nat()), async (urls, keys, noise) => {
        const shuffled = [...urls].sort(() => (noise.next().value % 3) - 1);
        const a = await HashRing.create(urls, { virtualNodes: VN });
        const b = await HashRing.create([...shuffled, ...shuffled], { virtualNodes: VN });
        for (const key of keys) expect(b.find(key)).toBe(a.find(key));
      }),
      runs(100, 500),
    );
  });

  it('adding a worker moves keys only onto the new worker', async () => {
    await fc.assert(
      fc.asyncProperty(urlsArb, urlArb, keysArb, async (urls, extra, keys) => {
        fc.pre(!urls.includes(extra));
        const before = await HashRing.create(urls, { virtualNodes: VN });
        const after = await HashRing.create([...urls, extra], { virtualNodes: VN });
        for (const key of keys) {
          const now = after.find(key);
          if (now !== before.find(key)) expect(now).toBe(extra);
        }
      }),
      runs(100, 500),
    );
  });

  it('removing a worker moves only the keys it owned', async () => {
    await fc.assert(
      fc.asyncProperty(urlsArb, fc.nat(), keysArb, async (urls, pick, keys) => {
        fc.pre(urls.length >= 2);
        const gone = urls[pick % urls.length]!;
        const before = await HashRing.create(urls, { virtualNodes: VN });
        const after = await HashRing.create(
          urls.filter((u) => u !== gone),
          { virtualNodes: VN },
        );
        for (const key of keys) {
          const was = before.find(key);
          if (was !== gone) expect(after.find(key)).toBe(was);
        }
      }),
      runs(100, 500),
    );
  });

  it('adding a worker to n moves about 1/(n+1) of the keys', async () => {
    for (const n of [8, 64]) {
      const urls = fleet(n + 1);
      const before = await HashRing.create(urls.slice(0, n));
      const after = await HashRing.create(urls);
      const keys = 50_000;
      let moved = 0;
      for (let k = 0; k < keys; k++)
        if (before.find(`key-${k}`) !== after.find(`key-${k}`)) moved++;
      const expected = keys / (n + 1);
      expect(moved).toBeGreaterThan(expected * 0.6);
      expect(moved).toBeLessThan(expected * 1.4);
    }
  });

  it('find offers each physical worker to accept at most once, and finds any accepted worker', async () => {
    await fc.assert(
      fc.asyncProperty(urlsArb, keysArb, fc.func(fc.boolean()), async (urls, keys, acceptRule) => {
        const ring = await HashRing.create(urls, { virtualNodes: VN });
        for (const key of keys) {
          const offered = new Map<string, number>();
          const found = ring.find(key, (url, index) => {
            expect(ring.urls[index]).toBe(url);
            offered.set(url, (offered.get(url) ?? 0) + 1);
            return acceptRule(url);
          });
          for (const count of offered.values()) expect(count).toBe(1);
          const anyAccepted = urls.some((u) => acceptRule(u));
          if (anyAccepted) expect(found !== undefined && acceptRule(found)).toBe(true);
          else {
            expect(found).toBeUndefined();
            expect(offered.size).toBe(urls.length);
          }
        }
      }),
      runs(100, 500),
    );
  });

  it('the walk is clockwise: the first accepted worker is the owner once rejected ones are removed', async () => {
    await fc.assert(
      fc.asyncProperty(urlsArb, keysArb, fc.func(fc.boolean()), async (urls, keys, acceptRule) => {
        const accepted = urls.filter((u) => acceptRule(u));
        fc.pre(accepted.length > 0);
        const ring = await HashRing.create(urls, { virtualNodes: VN });
        const survivors = await HashRing.create(accepted, { virtualNodes: VN });
        for (const key of keys)
          expect(ring.find(key, (u) => acceptRule(u))).toBe(survivors.find(key));
      }),
      runs(100, 500),
    );
  });

  it('findBounded never returns a worker above the bound while one under it exists', async () => {
    await fc.assert(
      fc.asyncProperty(
        urlsArb,
        keysArb,
        fc.array(fc.oneof(fc.nat({ max: 50 }), fc.constant(-1), fc.constant(Number.NaN)), {
          minLength: 24,
          maxLength: 24,
        }),
        fc.double({ min: 1, max: 3, noNaN: true }),
        async (urls, keys, loads, factor) => {
          const ring = await HashRing.create(urls, { virtualNodes: VN });
          const loadOf = (_url: string, index: number): number => loads[index]!;
          const eligible = ring.urls
            .map((_, i) => loads[i]!)
            .filter((l) => l >= 0 && Number.isFinite(l));
          const total = eligible.reduce((a, b) => a + b, 0);
          const cap = Math.ceil((factor * (total + 1)) / eligible.length);
          const anyUnder = eligible.some((l) => l + 1 <= cap);
          for (const key of keys) {
            const url = ring.findBounded(key, loadOf, factor);
            if (eligible.length === 0) {
              expect(url).toBeUndefined();
              continue;
            }
            expect(anyUnder).toBe(true); // CHWBL: a worker under the bound always exists
            const load = loads[ring.indexOf(url!)]!;
            expect(load + 1).toBeLessThanOrEqual(cap);
          }
        },
      ),
      runs(200, 1000),
    );
  });

  it('findBounded keeps every in-flight count within ceil(factor × mean + 1) over 10,000 requests', async () => {
    const urls = fleet(16);
    const ring = await HashRing.create(urls);
    const load = new Array<number>(urls.length).fill(0);
    const inFlight: number[] = [];
    let total = 0;
    let seed = 7;
    const random = (): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648;
      return seed / 2_147_483_648;
    };
    for (let r = 0; r < 10_000; r++) {
      // Hot keys: a few sessions dominate, the worst case for plain consistent hashing.
      const key = `session-${Math.floor(random() ** 3 * 50)}`;
      const url = ring.findBounded(key, (_u, i) => load[i]!, 1.25, total)!;
      const i = ring.indexOf(url);
      const mean = (total + 1) / urls.length;
      expect(load[i]! + 1).toBeLessThanOrEqual(Math.ceil(1.25 * mean + 1));
      load[i]!++;
      total++;
      inFlight.push(i);
      while (inFlight.length > 0 && random() < 0.5) {
        const done = inFlight.splice(Math.floor(random() * inFlight.length), 1)[0]!;
        load[done]!--;
        total--;
      }
    }
  });

  it.each([
    [8, 1.25, 0.1],
    [64, 1.25, 0.1],
    [512, 1.5, 0.13],
  ])(
    'spreads 100,000 keys over %i workers (150 virtual nodes): max/mean ≤ %d, CV ≤ %d',
    async (n, maxOverMean, cv) => {
      const ring = await HashRing.create(fleet(n));
      const result = balance(ownership(ring, 100_000));
      expect(result.maxOverMean).toBeLessThanOrEqual(maxOverMean);
      expect(result.cv).toBeLessThanOrEqual(cv);
    },
  );

  it('spreads 1,000,000 keys over 512 workers with CV ≤ 0.10 (sampling noise no longer dominates)', async () => {
    const ring = await HashRing.create(fleet(512));
    const result = balance(ownership(ring, 1_000_000));
    expect(result.cv).toBeLessThanOrEqual(0.1);
    expect(result.maxOverMean).toBeLessThanOrEqual(1.5);
  });
});
