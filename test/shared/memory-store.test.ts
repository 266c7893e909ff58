/**
 * `MemorySharedStore` (src/shared/memory-store.ts): the in-process store, with the semantics the
 * Redis store has. Time comes from an injected clock the tests move by hand.
 */
import { describe, expect, it } from 'vitest';
import { MemorySharedStore } from '../../src/index.js';
import type { LoadEntry, LoadSync } from '../../src/shared/shared-store.js';
import { fakeClock, throwsCode } from '../support/fixtures.js';

const LIVE_MS = 1000;

function sync(
  routerId: string,
  epoch: string,
  full: boolean,
  entries: readonly LoadEntry[] = [],
): LoadSync {
  return { routerId, epoch, full, entries, liveMs: LIVE_MS };
}

const entry = (url: string, load: number, prefilling = 0): LoadEntry => ({ url, load, prefilling });

/** The answer's loads by URL, for comparisons that do not depend on order. */
function byUrl(loads: readonly LoadEntry[]): Record<string, [number, number]> {
  const out: Record<string, [number, number]> = {};
  for (const e of loads) out[e.url] = [e.load, e.prefilling];
  return out;
}

function storeWithClock(options: { maxBlocks?: number; maxSessions?: number } = {}) {
  const clock = fakeClock(10_000);
  return { clock, store: new MemorySharedStore({ clock: clock.read, ...options }) };
}

describe('MemorySharedStore options', () => {
  it.each([
    [{ maxBlocks: 0 }],
    [{ maxBlocks: 1.5 }],
    [{ maxBlocks: '10' }],
    [{ maxBlocks: 2 ** 31 }],
    [{ maxSessions: -1 }],
    [{ maxSessions: Number.NaN }],
    [{ clock: 5 }],
    [{ capacity: 10 }],
  ])('rejects %o with INVALID_ARGUMENT', (options) => {
    throwsCode(() => new MemorySharedStore(options as never), 'INVALID_ARGUMENT');
  });

  it('names the bad option in the message', () => {
    const error = throwsCode(() => new MemorySharedStore({ maxBlocks: 0 }), 'INVALID_ARGUMENT');
    expect(error.message).toContain('maxBlocks');
  });

  it('accepts no options at all, and reports itself as the memory kind', () => {
    const store = new MemorySharedStore();
    expect(store.kind).toBe('memory');
    expect([store.routerCount, store.blockCount, store.sessionCount]).toEqual([0, 0, 0]);
  });

  it('answers on a later microtask, like a remote store', async () => {
    const { store } = storeWithClock();
    await store.syncLoads(sync('a', 'a#1', true));
    const leaving = store.leave('a');
    expect(store.routerCount).toBe(1);
    await leaving;
    expect(store.routerCount).toBe(0);
  });
});

describe('MemorySharedStore loads', () => {
  it('accepts a full sync, then partial syncs naming the same epoch', async () => {
    const { store } = storeWithClock();
    const first = await store.syncLoads(sync('a', 'a#1', true, [entry('http://w0', 2, 1)]));
    expect(first).toEqual({ accepted: true, routers: 0, loads: [] });
    const partial = await store.syncLoads(sync('a', 'a#1', false, [entry('http://w1', 1)]));
    expect(partial.accepted).toBe(true);
    const seen = await store.syncLoads(sync('b', 'b#1', true));
    expect(seen.routers).toBe(1);
    expect(byUrl(seen.loads)).toEqual({ 'http://w0': [2, 1], 'http://w1': [1, 0] });
  });

  it('refuses a partial sync from a router it holds nothing for, and keeps its heartbeat', async () => {
    const { store } = storeWithClock();
    const reply = await store.syncLoads(sync('a', 'a#1', false, [entry('http://w0', 3)]));
    expect(reply.accepted).toBe(false);
    expect(store.routerCount).toBe(1);
    // The router is live (it synced) but none of its counts were taken.
    const seen = await store.syncLoads(sync('b', 'b#1', true));
    expect(seen).toEqual({ accepted: true, routers: 1, loads: [] });
  });

  it('refuses a partial sync naming another epoch, and leaves the stored counts as they were', async () => {
    const { store } = storeWithClock();
    await store.syncLoads(sync('a', 'a#1', true, [entry('http://w0', 2)]));
    const stale = await store.syncLoads(sync('a', 'a#0', false, [entry('http://w0', 9)]));
    expect(stale.accepted).toBe(false);
    const seen = await store.syncLoads(sync('b', 'b#1', true));
    expect(byUrl(seen.loads)).toEqual({ 'http://w0': [2, 0] });
  });

  it('replaces everything a router held on a full sync', async () => {
    const { store } = storeWithClock();
    await store.syncLoads(sync('a', 'a#1', true, [entry('http://w0', 2), entry('http://w1', 1)]));
    await store.syncLoads(sync('a', 'a#2', true, [entry('http://w2', 4, 4)]));
    const seen = await store.syncLoads(sync('b', 'b#1', true));
    expect(byUrl(seen.loads)).toEqual({ 'http://w2': [4, 4] });
    // The new epoch is the one partial syncs must name now.
    expect((await store.syncLoads(sync('a', 'a#1', false))).accepted).toBe(false);
    expect((await store.syncLoads(sync('a', 'a#2', false))).accepted).toBe(true);
  });

  it('removes an entry whose load and prefilling are both zero', async () => {
    const { store } = storeWithClock();
    await store.syncLoads(sync('a', 'a#1', true, [entry('http://w0', 2), entry('http://w1', 1)]));
    await store.syncLoads(sync('a', 'a#1', false, [entry('http://w0', 0), entry('http://w1', 1)]));
    const seen = await store.syncLoads(sync('b', 'b#1', true));
    expect(seen.loads).toEqual([entry('http://w1', 1)]);
  });

  it("sums the other live routers' counts per worker, never the caller's own", async () => {
    const { store } = storeWithClock();
    await store.syncLoads(
      sync('a', 'a#1', true, [entry('http://w0', 2, 1), entry('http://w1', 1)]),
    );
    await store.syncLoads(sync('b', 'b#1', true, [entry('http://w0', 3, 2)]));
    const c = await store.syncLoads(sync('c', 'c#1', true, [entry('http://w0', 100)]));
    expect(c.routers).toBe(2);
    expect(byUrl(c.loads)).toEqual({ 'http://w0': [5, 3], 'http://w1': [1, 0] });
    const a = await store.syncLoads(sync('a', 'a#1', false));
    expect(a.routers).toBe(2);
    expect(byUrl(a.loads)).toEqual({ 'http://w0': [103, 2] });
  });

  it('leaves out a router whose last sync is older than liveMs, and counts it again once it syncs', async () => {
    const { clock, store } = storeWithClock();
    await store.syncLoads(sync('a', 'a#1', true, [entry('http://w0', 2)]));
    clock.now += LIVE_MS; // exactly liveMs old: still live
    const atEdge = await store.syncLoads(sync('b', 'b#1', true));
    expect(atEdge.routers).toBe(1);
    expect(byUrl(atEdge.loads)).toEqual({ 'http://w0': [2, 0] });
    clock.now += 1;
    const dead = await store.syncLoads(sync('b', 'b#1', false));
    expect(dead).toEqual({ accepted: true, routers: 0, loads: [] });
    expect(store.routerCount).toBe(2); // dead, but held until 10 × liveMs
    // A heartbeat brings its counts back: a stall is not a loss.
    expect((await store.syncLoads(sync('a', 'a#1', false))).accepted).toBe(true);
    const back = await store.syncLoads(sync('b', 'b#1', false));
    expect(byUrl(back.loads)).toEqual({ 'http://w0': [2, 0] });
  });

  it('drops a router older than 10 × liveMs: its next partial sync is refused', async () => {
    const { clock, store } = storeWithClock();
    await store.syncLoads(sync('a', 'a#1', true, [entry('http://w0', 2)]));
    await store.syncLoads(sync('b', 'b#1', true));
    clock.now += 10 * LIVE_MS;
    await store.syncLoads(sync('b', 'b#1', false));
    expect(store.routerCount).toBe(2); // exactly 10 × liveMs: kept
    clock.now += 1;
    await store.syncLoads(sync('b', 'b#1', false));
    expect(store.routerCount).toBe(1);
    const a = await store.syncLoads(sync('a', 'a#1', false, [entry('http://w0', 2)]));
    expect(a.accepted).toBe(false);
  });

  it('forgets a router that leaves, and ignores a leave from one it never saw', async () => {
    const { store } = storeWithClock();
    await store.syncLoads(sync('a', 'a#1', true, [entry('http://w0', 2)]));
    await store.leave('nobody');
    await store.leave('a');
    expect(store.routerCount).toBe(0);
    const seen = await store.syncLoads(sync('b', 'b#1', true));
    expect(seen).toEqual({ accepted: true, routers: 0, loads: [] });
    expect((await store.syncLoads(sync('a', 'a#1', false))).accepted).toBe(false);
  });
});

describe('MemorySharedStore sessions', () => {
  it('returns what was put, with the time left, and no secondary when none was given', async () => {
    const { clock, store } = storeWithClock();
    await store.putSession('k1', 'http://w0', undefined, 500);
    await store.putSession('k2', 'http://w0', 'http://w1', 500);
    clock.now += 200;
    const one = await store.getSession('k1');
    expect(one).toEqual({ primary: 'http://w0', ttlLeftMs: 300 });
    expect(one !== undefined && 'secondary' in one).toBe(false);
    expect(await store.getSession('k2')).toEqual({
      primary: 'http://w0',
      secondary: 'http://w1',
      ttlLeftMs: 300,
    });
    expect(await store.getSession('k3')).toBeUndefined();
  });

  it('forgets a session once its TTL has run out, and drops it when read', async () => {
    const { clock, store } = storeWithClock();
    await store.putSession('k', 'http://w0', undefined, 500);
    clock.now += 499;
    expect((await store.getSession('k'))?.ttlLeftMs).toBe(1);
    clock.now += 1;
    expect(store.sessionCount).toBe(1);
    expect(await store.getSession('k')).toBeUndefined();
    expect(store.sessionCount).toBe(0);
  });

  it('restarts the TTL on every put, and replaces the workers', async () => {
    const { clock, store } = storeWithClock();
    await store.putSession('k', 'http://w0', undefined, 500);
    clock.now += 400;
    await store.putSession('k', 'http://w1', 'http://w0', 500);
    clock.now += 400;
    expect(await store.getSession('k')).toEqual({
      primary: 'http://w1',
      secondary: 'http://w0',
      ttlLeftMs: 100,
    });
    expect(store.sessionCount).toBe(1);
  });

  it('holds at most maxSessions, evicting the least recently stored', async () => {
    const { store } = storeWithClock({ maxSessions: 2 });
    await store.putSession('a', 'http://w0', undefined, 1000);
    await store.putSession('b', 'http://w0', undefined, 1000);
    await store.putSession('a', 'http://w1', undefined, 1000); // a is now the most recent
    await store.putSession('c', 'http://w0', undefined, 1000);
    expect(store.sessionCount).toBe(2);
    expect(await store.getSession('b')).toBeUndefined();
    expect((await store.getSession('a'))?.primary).toBe('http://w1');
    expect((await store.getSession('c'))?.primary).toBe('http://w0');
  });
});

describe('MemorySharedStore prefix index', () => {
  const chain = (n: number): string[] => Array.from({ length: n }, (_, i) => `b${i}`);

  it('answers nothing for no blocks, or a first block it never saw', async () => {
    const { store } = storeWithClock();
    await store.recordPrefix(chain(3), 'http://w0', 60_000, 16);
    expect(await store.matchPrefix([], 60_000, 16)).toEqual([]);
    expect(await store.matchPrefix(['x', 'b1', 'b2'], 60_000, 16)).toEqual([]);
  });

  it('answers the holders of the longest run of leading blocks, at every depth of the request', async () => {
    const { clock, store } = storeWithClock();
    await store.recordPrefix(chain(7), 'http://a', 60_000, 16);
    await store.recordPrefix(chain(2), 'http://b', 60_000, 16);
    await store.recordPrefix(chain(1), 'http://c', 60_000, 16);
    clock.now += 5;
    for (let asked = 1; asked <= 9; asked++) {
      const holders = await store.matchPrefix(chain(asked), 60_000, 16);
      const depth = Object.fromEntries(holders.map((h) => [h.url, h.blocks]));
      const expected: Record<string, number> =
        asked === 1
          ? { 'http://a': 1, 'http://b': 1, 'http://c': 1 }
          : asked === 2
            ? { 'http://a': 2, 'http://b': 2 }
            : { 'http://a': Math.min(asked, 7) };
      expect(depth, `a request of ${asked} blocks`).toEqual(expected);
      for (const h of holders) expect(h.ageMs).toBe(5);
    }
  });

  it('counts only blocks recorded within ttlMs, for the holders and for their depth', async () => {
    const { clock, store } = storeWithClock();
    await store.recordPrefix(chain(6), 'http://a', 60_000, 16);
    await store.recordPrefix(chain(6), 'http://old', 60_000, 16);
    clock.now += 100;
    await store.recordPrefix(chain(3), 'http://a', 60_000, 16); // renews the first three only
    clock.now += 20;
    // ttl 50: the blocks recorded 120 ms ago are out, those 20 ms ago are in.
    expect(await store.matchPrefix(chain(6), 50, 16)).toEqual([
      { url: 'http://a', blocks: 3, ageMs: 20 },
    ]);
    // Exactly at the cutoff still counts.
    expect(await store.matchPrefix(chain(6), 120, 16)).toEqual([
      { url: 'http://a', blocks: 6, ageMs: 20 },
      { url: 'http://old', blocks: 6, ageMs: 120 },
    ]);
    expect(await store.matchPrefix(chain(6), 119, 16)).toHaveLength(1);
  });

  it('answers at most maxHolders, the most recently recorded first', async () => {
    const { clock, store } = storeWithClock();
    for (const url of ['http://a', 'http://b', 'http://c', 'http://d']) {
      await store.recordPrefix(chain(2), url, 60_000, 16);
      clock.now += 10;
    }
    await store.recordPrefix(chain(1), 'http://a', 60_000, 16); // a renewed: the newest now
    const holders = await store.matchPrefix(chain(2), 60_000, 3);
    expect(holders.map((h) => [h.url, h.ageMs])).toEqual([
      ['http://a', 0],
      ['http://d', 10],
      ['http://c', 20],
    ]);
  });

  it('keeps at most maxHolders per block, forgetting the least recently recorded', async () => {
    const { clock, store } = storeWithClock();
    await store.recordPrefix(chain(2), 'http://a', 60_000, 2);
    clock.now += 1;
    await store.recordPrefix(chain(2), 'http://b', 60_000, 2);
    clock.now += 1;
    await store.recordPrefix(chain(2), 'http://a', 60_000, 2); // renews a: b is now the oldest
    clock.now += 1;
    await store.recordPrefix(chain(2), 'http://c', 60_000, 2);
    const holders = await store.matchPrefix(chain(2), 60_000, 16);
    expect(holders.map((h) => h.url)).toEqual(['http://c', 'http://a']);
  });

  it('holds at most maxBlocks, forgetting the least recently recorded block', async () => {
    const { clock, store } = storeWithClock({ maxBlocks: 3 });
    await store.recordPrefix(['x0', 'x1'], 'http://a', 60_000, 16);
    clock.now += 1;
    await store.recordPrefix(['y0'], 'http://a', 60_000, 16);
    clock.now += 1;
    await store.recordPrefix(['x0'], 'http://b', 60_000, 16); // x0 recorded again: x1 is oldest
    clock.now += 1;
    await store.recordPrefix(['z0'], 'http://a', 60_000, 16);
    expect(store.blockCount).toBe(3);
    expect(await store.matchPrefix(['x1'], 60_000, 16)).toEqual([]);
    for (const kept of ['x0', 'y0', 'z0'])
      expect((await store.matchPrefix([kept], 60_000, 16)).length, kept).toBeGreaterThan(0);
    // The chain x0 → x1 lost its second block: a holder of x0 holds one block now.
    const x = await store.matchPrefix(['x0', 'x1'], 60_000, 16);
    expect(x.map((h) => [h.url, h.blocks])).toEqual([
      ['http://b', 1],
      ['http://a', 1],
    ]);
  });
});
