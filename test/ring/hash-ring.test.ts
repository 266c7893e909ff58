import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { DEFAULT_VIRTUAL_NODES, HashRing } from '../../src/index.js';
import { rejectsCode, throwsCode } from '../support/fixtures.js';

type H64 = (input: string) => bigint;
let h64: H64;

beforeAll(async () => {
  h64 = (await xxhash()).h64;
});

interface Point {
  readonly hash: bigint;
  readonly url: string;
}

/**
 * An independent model of the documented placement: every URL owns xxh64(`${url}#${i}`), keys go
 * to the first point at or after xxh64(key), wrapping. Built with BigInt and a comparator sort.
 */
class ReferenceRing {
  readonly points: Point[];

  constructor(urls: readonly string[], virtualNodes: number) {
    const unique = [...new Set(urls)].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    this.points = unique.flatMap((url) =>
      Array.from({ length: virtualNodes }, (_, i) => ({ hash: h64(`${url}#${i}`), url })),
    );
    this.points.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
  }

  /** Distinct owners in clockwise order starting at the point that owns `hash`. */
  walk(hash: bigint): string[] {
    const points = this.points;
    let lo = 0;
    let hi = points.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (points[mid]!.hash < hash) lo = mid + 1;
      else hi = mid;
    }
    const seen = new Set<string>();
    for (let k = 0; k < points.length; k++) seen.add(points[(lo + k) % points.length]!.url);
    return [...seen];
  }

  owner(key: string): string | undefined {
    return this.walk(h64(key))[0];
  }
}

const THREE = ['http://10.0.0.1:8000', 'http://10.0.0.2:8000', 'http://10.0.0.3:8000'] as const;

describe('HashRing: empty ring', () => {
  it('returns undefined (or -1) from every lookup', async () => {
    // Arrange
    const ring = await HashRing.create([]);

    // Act / Assert
    expect(ring.find('k')).toBeUndefined();
    expect(ring.find('k', () => true)).toBeUndefined();
    expect(ring.findIndex('k')).toBe(-1);
    expect(ring.findByHash(0n)).toBeUndefined();
    expect(ring.findBounded('k', () => 0, 1.25)).toBeUndefined();
    expect(ring.size).toBe(0);
    expect(ring.workerCount).toBe(0);
    expect(ring.urls).toEqual([]);
  });
});

describe('HashRing: placement', () => {
  it('find is deterministic: the same key maps to the same URL on every call and every build', async () => {
    // Arrange
    const a = await HashRing.create(THREE);
    const b = await HashRing.create(THREE);

    // Act / Assert
    for (let i = 0; i < 1000; i++) {
      const key = `key-${i}`;
      const first = a.find(key);
      expect(a.find(key)).toBe(first);
      expect(b.find(key)).toBe(first);
    }
  });

  it('two rings from the same URLs in different order (and with duplicates) agree on 10,000 keys', async () => {
    // Arrange
    const urls = Array.from({ length: 8 }, (_, i) => `http://worker-${i}:8000`);
    const forward = await HashRing.create(urls);
    const shuffled = await HashRing.create([...urls].reverse().concat(urls[3]!, urls[0]!));

    // Act
    let disagreements = 0;
    for (let i = 0; i < 10_000; i++) {
      if (forward.find(`k${i}`) !== shuffled.find(`k${i}`)) disagreements++;
    }

    // Assert
    expect(disagreements).toBe(0);
    expect(shuffled.urls).toEqual(forward.urls);
  });

  it('golden vector: each URL owns the points xxh64(url#i), found at the point and just below it', async () => {
    // Arrange
    const ring = await HashRing.create(THREE);
    const reference = new ReferenceRing(THREE, DEFAULT_VIRTUAL_NODES);

    for (const url of THREE) {
      for (const i of [0, 1, 2, 149]) {
        // Act
        const point = h64(`${url}#${i}`);

        // Assert
        expect(ring.findByHash(point)).toBe(url);
        expect(ring.findByHash(point - 1n)).toBe(url);
        expect(ring.findByHash(point + 1n)).toBe(reference.walk(point + 1n)[0]);
      }
    }
  });

  it('golden vector: a hash above the highest point wraps to the owner of the lowest point', async () => {
    // Arrange
    const ring = await HashRing.create(THREE);
    const reference = new ReferenceRing(THREE, DEFAULT_VIRTUAL_NODES);
    const lowest = reference.points[0]!;
    const highest = reference.points.at(-1)!;

    // Act / Assert
    expect(ring.findByHash(0n)).toBe(lowest.url);
    expect(ring.findByHash(highest.hash + 1n)).toBe(lowest.url);
    expect(ring.findByHash(0xffff_ffff_ffff_ffffn)).toBe(lowest.url);
    expect(ring.findByHash(highest.hash)).toBe(highest.url);
  });

  it.each([
    // Recorded once from the implementation; pins placement against future changes.
    ['session-1', 'http://10.0.0.1:8000'],
    ['user:42', 'http://10.0.0.3:8000'],
    ['k8', 'http://10.0.0.2:8000'],
    ['prefix/abc', 'http://10.0.0.1:8000'],
    ['llama-3-8b|hello world', 'http://10.0.0.3:8000'],
  ])('golden table: key %j routes to %s on the fixed three-URL ring', async (key, url) => {
    const ring = await HashRing.create(THREE);
    expect(ring.find(key)).toBe(url);
    expect(new ReferenceRing(THREE, DEFAULT_VIRTUAL_NODES).owner(key)).toBe(url);
  });

  it('agrees with an independent BigInt model of the placement on 5,000 keys', async () => {
    // Arrange
    const urls = [...THREE, 'grpc://10.0.0.4:50051', 'http://[::1]:8000@1'];
    const ring = await HashRing.create(urls, { virtualNodes: 40 });
    const reference = new ReferenceRing(urls, 40);

    // Act
    const mismatches: string[] = [];
    for (let i = 0; i < 5000; i++) {
      const key = `req-${i}-${'x'.repeat(i % 7)}`;
      if (ring.find(key) !== reference.owner(key)) mismatches.push(key);
    }

    // Assert
    expect(mismatches).toEqual([]);
  });

  it('uses 32-bit worker slots above 65,535 workers and still places keys like the model', async () => {
    // Arrange
    const urls = Array.from({ length: 65_537 }, (_, i) => `http://w${i}:1`);
    const ring = await HashRing.create(urls, { virtualNodes: 1 });
    const reference = new ReferenceRing(urls, 1);

    // Act / Assert
    expect(ring.workerCount).toBe(65_537);
    for (let i = 0; i < 200; i++) expect(ring.find(`k${i}`)).toBe(reference.owner(`k${i}`));
    const last = urls.at(-1)!;
    expect(ring.findByHash(h64(`${last}#0`))).toBe(last);
  });

  it('spreads 20,000 keys over 4 workers with no worker below 15 % or above 35 %', async () => {
    // Arrange (deterministic: placement is fixed by the contract)
    const ring = await HashRing.create(['http://a:1', 'http://b:1', 'http://c:1', 'http://d:1']);
    const counts = new Map<string, number>();

    // Act
    for (let i = 0; i < 20_000; i++) {
      const url = ring.find(`k${i}`)!;
      counts.set(url, (counts.get(url) ?? 0) + 1);
    }

    // Assert
    expect(counts.size).toBe(4);
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan(3000);
      expect(count).toBeLessThan(7000);
    }
  });
});

describe('HashRing: find with accept', () => {
  it('offers each physical worker to accept at most once, clockwise, with its index', async () => {
    // Arrange
    const urls = Array.from({ length: 6 }, (_, i) => `http://w${i}:1`);
    const ring = await HashRing.create(urls, { virtualNodes: 50 });
    const reference = new ReferenceRing(urls, 50);
    const offered: [string, number][] = [];

    // Act
    const found = ring.find('key', (url, index) => {
      offered.push([url, index]);
      return false;
    });

    // Assert
    expect(found).toBeUndefined();
    expect(offered.map(([url]) => url)).toEqual(reference.walk(h64('key')));
    for (const [url, index] of offered) expect(ring.urls[index]).toBe(url);
  });

  it('fails over clockwise to the next distinct worker when the owner is rejected', async () => {
    // Arrange
    const ring = await HashRing.create(THREE);
    const reference = new ReferenceRing(THREE, DEFAULT_VIRTUAL_NODES);

    for (let i = 0; i < 200; i++) {
      const key = `s${i}`;
      const [owner, second, third] = reference.walk(h64(key));

      // Act / Assert
      expect(ring.find(key, (url) => url !== owner)).toBe(second);
      expect(ring.find(key, (url) => url === third)).toBe(third);
      expect(ring.findIndex(key, (url) => url !== owner)).toBe(ring.indexOf(second!));
    }
  });

  it('a re-entrant lookup from inside accept still offers each worker at most once, on both walks', async () => {
    // Arrange
    const ring = await HashRing.create(THREE, { virtualNodes: 20 });
    const outer: string[] = [];
    const inner: string[] = [];

    // Act
    const found = ring.find('outer', (url) => {
      outer.push(url);
      ring.find('inner', (innerUrl) => {
        inner.push(innerUrl);
        return false;
      });
      return false;
    });

    // Assert
    expect(found).toBeUndefined();
    expect(new Set(outer).size).toBe(outer.length);
    expect(outer).toHaveLength(3);
    expect(inner).toHaveLength(9);
    expect(new Set(inner.slice(0, 3)).size).toBe(3);
  });

  it('findByHash applies accept like find', async () => {
    const ring = await HashRing.create(THREE);
    const hash = h64('some key');
    const owner = ring.findByHash(hash)!;
    expect(owner).toBe(ring.find('some key'));
    expect(ring.findByHash(hash, (url) => url !== owner)).toBe(
      ring.find('some key', (url) => url !== owner),
    );
    expect(ring.findByHash(hash, () => false)).toBeUndefined();
  });
});

describe('HashRing: findBounded', () => {
  it('returns the plain owner when every load is equal and factor allows one more', async () => {
    const ring = await HashRing.create(THREE);
    for (let i = 0; i < 100; i++) {
      expect(ring.findBounded(`k${i}`, () => 4, 1.25)).toBe(ring.find(`k${i}`));
    }
  });

  it('skips an owner whose load, counting the incoming request, exceeds factor × the mean', async () => {
    // Arrange
    const ring = await HashRing.create(THREE);
    const reference = new ReferenceRing(THREE, DEFAULT_VIRTUAL_NODES);
    const key = 'hot-session';
    const [owner, second] = reference.walk(h64(key));
    const loads = new Map([
      [owner, 10],
      [second, 0],
    ]);

    // Act: total 10, cap = ceil(1.25 × 11 / 3) = 5.
    const pick = ring.findBounded(key, (url) => loads.get(url) ?? 0, 1.25);

    // Assert
    expect(pick).toBe(second);
  });

  it('never returns a worker above the cap while one under it exists (random loads)', async () => {
    // Arrange
    const urls = Array.from({ length: 7 }, (_, i) => `http://w${i}:1`);
    const ring = await HashRing.create(urls, { virtualNodes: 30 });
    const reference = new ReferenceRing(urls, 30);

    fc.assert(
      fc.property(
        fc.array(fc.nat(50), { minLength: 7, maxLength: 7 }),
        fc.double({ min: 1, max: 4, noNaN: true }),
        fc.string(),
        fc.boolean(),
        (loads, factor, key, passTotal) => {
          const total = loads.reduce((a, b) => a + b, 0);
          const cap = Math.ceil((factor * (total + 1)) / urls.length);
          const loadOf = (url: string) => loads[urls.indexOf(url)]!;

          // Act
          const pick = passTotal
            ? ring.findBounded(key, loadOf, factor, total)
            : ring.findBounded(key, loadOf, factor);

          // Assert: the first worker clockwise that is under the cap.
          const expected = reference.walk(h64(key)).find((url) => loadOf(url) + 1 <= cap);
          expect(expected).toBeDefined();
          expect(pick).toBe(expected);
          expect(loadOf(pick!) + 1).toBeLessThanOrEqual(cap);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('treats a negative or non-finite load as ineligible, and returns undefined when none is eligible', async () => {
    // Arrange
    const ring = await HashRing.create(THREE);
    const loads = new Map<string, number>([
      [THREE[0], -1],
      [THREE[1], Number.NaN],
      [THREE[2], 3],
    ]);

    // Act / Assert
    for (let i = 0; i < 50; i++) {
      expect(ring.findBounded(`k${i}`, (url) => loads.get(url)!, 1)).toBe(THREE[2]);
    }
    expect(ring.findBounded('k', () => Number.POSITIVE_INFINITY, 2)).toBeUndefined();
    expect(ring.findBounded('k', () => -5, 2)).toBeUndefined();
  });

  it('falls back to the least-loaded eligible worker when a stale totalLoad leaves none under the cap', async () => {
    // Arrange
    const ring = await HashRing.create(THREE);
    const loads = new Map<string, number>([
      [THREE[0], 9],
      [THREE[1], 7],
      [THREE[2], 8],
    ]);

    // Act: a claimed total of 0 gives cap = ceil(1 × 1 / 3) = 1, which nobody meets.
    const pick = ring.findBounded('any', (url) => loads.get(url)!, 1, 0);

    // Assert
    expect(pick).toBe(THREE[1]);
  });

  it.each([
    ['below 1', 0.99],
    ['zero', 0],
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['a string', '1.25'],
  ])('rejects a factor %s with INVALID_ARGUMENT', async (_label, factor) => {
    const ring = await HashRing.create(THREE);
    const error = throwsCode(
      () => ring.findBounded('k', () => 0, factor as unknown as number),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toMatch(/factor must be a finite number >= 1/);
  });

  it('rejects a loadOf that is not a function with INVALID_ARGUMENT', async () => {
    const ring = await HashRing.create(THREE);
    throwsCode(() => ring.findBounded('k', 3 as unknown as () => number, 1.25), 'INVALID_ARGUMENT');
  });
});

describe('HashRing: membership accessors', () => {
  it('urls are distinct, sorted by code unit, frozen, and the same array on every call', async () => {
    // Arrange
    const ring = await HashRing.create(['http://b:1', 'http://a:1', 'http://b:1', 'http://C:1']);

    // Assert
    expect(ring.urls).toEqual(['http://C:1', 'http://a:1', 'http://b:1']);
    expect(ring.urls).toBe(ring.urls);
    expect(Object.isFrozen(ring.urls)).toBe(true);
    expect(ring.workerCount).toBe(3);
    expect(ring.virtualNodes).toBe(DEFAULT_VIRTUAL_NODES);
    expect(ring.size).toBe(3 * DEFAULT_VIRTUAL_NODES);
  });

  it('has and indexOf agree with urls, and miss with false and -1', async () => {
    const ring = await HashRing.create(THREE);
    THREE.forEach((url, i) => {
      expect(ring.has(url)).toBe(true);
      expect(ring.indexOf(url)).toBe(i);
    });
    expect(ring.has('http://10.0.0.9:8000')).toBe(false);
    expect(ring.indexOf('http://10.0.0.9:8000')).toBe(-1);
  });

  it('size is workerCount × virtualNodes for a custom virtualNodes', async () => {
    const ring = await HashRing.create(THREE, { virtualNodes: 7 });
    expect(ring.virtualNodes).toBe(7);
    expect(ring.size).toBe(21);
  });

  it('DEFAULT_VIRTUAL_NODES is 150', () => {
    expect(DEFAULT_VIRTUAL_NODES).toBe(150);
  });
});

describe('HashRing: validation', () => {
  it.each([
    ['0', 0],
    ['negative', -1],
    ['a fraction', 1.5],
    ['above 10,000', 10_001],
    ['NaN', Number.NaN],
    ['a string', '150'],
  ])('rejects virtualNodes %s with INVALID_ARGUMENT', async (_label, virtualNodes) => {
    const error = await rejectsCode(
      HashRing.create(THREE, { virtualNodes: virtualNodes as unknown as number }),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toMatch(/virtualNodes must be an integer between 1 and 10000/);
  });

  it('accepts virtualNodes at both bounds, 1 and 10,000', async () => {
    expect((await HashRing.create(['http://a:1'], { virtualNodes: 1 })).size).toBe(1);
    expect((await HashRing.create(['http://a:1'], { virtualNodes: 10_000 })).size).toBe(10_000);
  });

  it.each([
    ['a string instead of a list', 'http://a:1'],
    ['null', null],
    ['a number', 3],
    ['a list with an empty URL', ['http://a:1', '']],
    ['a list with a number', ['http://a:1', 42]],
  ])('rejects urls given as %s with INVALID_ARGUMENT', async (_label, urls) => {
    await rejectsCode(HashRing.create(urls as unknown as string[]), 'INVALID_ARGUMENT');
  });

  it('rejects null options with INVALID_ARGUMENT', async () => {
    await rejectsCode(
      HashRing.create(THREE, null as unknown as { virtualNodes?: number }),
      'INVALID_ARGUMENT',
    );
  });

  it('rejects a non-string key on a non-empty ring with INVALID_ARGUMENT', async () => {
    const ring = await HashRing.create(THREE);
    throwsCode(() => ring.find(42 as unknown as string), 'INVALID_ARGUMENT');
    throwsCode(() => ring.findIndex(undefined as unknown as string), 'INVALID_ARGUMENT');
  });

  it.each([
    ['a number', 3],
    ['a string', 'yes'],
    ['null', null],
    ['an object', {}],
  ])(
    'rejects an accept that is %s with INVALID_ARGUMENT, on full and empty rings',
    async (_label, accept) => {
      const bad = accept as unknown as () => boolean;
      for (const ring of [await HashRing.create(THREE), await HashRing.create([])]) {
        throwsCode(() => ring.find('k', bad), 'INVALID_ARGUMENT');
        throwsCode(() => ring.findIndex('k', bad), 'INVALID_ARGUMENT');
        throwsCode(() => ring.findByHash(7n, bad), 'INVALID_ARGUMENT');
      }
    },
  );

  it.each([
    ['negative', -1n],
    ['above 2^64 - 1', 1n << 64n],
    ['a number', 5],
  ])('rejects a %s hash in findByHash with INVALID_ARGUMENT', async (_label, hash) => {
    const ring = await HashRing.create(THREE);
    throwsCode(() => ring.findByHash(hash as bigint), 'INVALID_ARGUMENT');
  });

  it('finds keys with lone surrogates and huge keys without throwing', async () => {
    const ring = await HashRing.create(THREE);
    expect(THREE).toContain(ring.find('a\uD800b'));
    expect(THREE).toContain(ring.find('k'.repeat(1_000_000)));
    expect(THREE).toContain(ring.find(''));
  });
});
