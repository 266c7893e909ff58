/**
 * Registry races on one URL (mutations are serialised per URL):
 * mutations started without awaiting, in both orders, and forced interleavings that park a
 * mutation before or inside the URL's lock. Every row ends with the cross-index invariants.
 */
import { describe, expect, it } from 'vitest';
import { loadHasher } from '../../src/core/hash.js';
import type { Worker, WorkerEvent } from '../../src/index.js';
import type { LockHooks } from '../../src/registry/url-locks.js';
import { createRegistryWithHooks } from '../../src/registry/worker-registry.js';
import { expectConsistent, expectFleetError, recordedRegistry } from '../support/fixtures.js';

const U = 'http://h:8000';

/** A promise the test resolves by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/**
 * A registry whose URL locks consult two queues: the n-th `beforeLock` call awaits `before[n]`
 * and the n-th lock holder awaits `inside[n]` before it reads any state (undefined: no wait).
 */
async function choreographed() {
  const before: (Promise<void> | undefined)[] = [];
  const inside: (Promise<void> | undefined)[] = [];
  const hooks: LockHooks = {
    beforeLock: async () => {
      await before.shift();
    },
    insideLock: async () => {
      await inside.shift();
    },
  };
  const registry = createRegistryWithHooks(await loadHasher(), { defaultStatus: 'ready' }, hooks);
  const events: WorkerEvent[] = [];
  registry.on('event', (e) => {
    events.push(e);
  });
  return { registry, events, before, inside };
}

function summary(events: readonly WorkerEvent[]): string[] {
  return events.map((e) => `${e.type}:${e.workerId}`);
}

describe('removeByUrl racing register of the same URL', { timeout: 5_000 }, () => {
  it('removeByUrl started first, register after: the new worker stays intact and findable by URL', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();

    // Act
    const [removed, registered] = await Promise.allSettled([
      registry.removeByUrl(U),
      registry.register({ url: U, models: ['m'] }),
    ]);

    // Assert
    expect(removed).toEqual({ status: 'fulfilled', value: undefined });
    expect(registered.status).toBe('fulfilled');
    const worker = (registered as PromiseFulfilledResult<Worker>).value;
    expect(worker.live).toBe(true);
    expect(registry.getByUrl(U)).toBe(worker);
    expect(registry.getIdByUrl(U)).toBe(worker.id);
    expect(registry.getByModel('m')).toEqual([worker]);
    expect(registry.getHashRing('m').has(U)).toBe(true);
    expect(summary(events)).toEqual([`registered:${worker.id}`]);
    expectConsistent(registry);
  });

  it('with an old worker live: removeByUrl removes the old one, register installs the new one', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const old = await registry.register({ url: U, models: ['old'] });
    events.length = 0;

    // Act
    const [removed, registered] = await Promise.allSettled([
      registry.removeByUrl(U),
      registry.register({ url: U, models: ['new'] }),
    ]);

    // Assert
    expect(removed).toEqual({ status: 'fulfilled', value: old });
    const worker = (registered as PromiseFulfilledResult<Worker>).value;
    expect(worker.id).not.toBe(old.id);
    expect(old.live).toBe(false);
    expect(registry.getByUrl(U)).toBe(worker);
    expect(registry.getModels()).toEqual(['new']);
    expect(summary(events)).toEqual([`removed:${old.id}`, `registered:${worker.id}`]);
    expectConsistent(registry);
  });

  it('register started first, removeByUrl after: the worker is registered then removed whole', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();

    // Act
    const [registered, removed] = await Promise.allSettled([
      registry.register({ url: U, models: ['m'] }),
      registry.removeByUrl(U),
    ]);

    // Assert
    const worker = (registered as PromiseFulfilledResult<Worker>).value;
    expect(removed).toEqual({ status: 'fulfilled', value: worker });
    expect(worker.live).toBe(false);
    expect(registry.getIdByUrl(U)).toBeUndefined();
    expect(registry.getModels()).toEqual([]);
    expect(registry.getHashRing().size).toBe(0);
    expect(summary(events)).toEqual([`registered:${worker.id}`, `removed:${worker.id}`]);
    expectConsistent(registry);
  });

  it('with an old worker live, register first: register fails DUPLICATE_URL, removeByUrl removes the old one', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const old = await registry.register({ url: U });
    events.length = 0;

    // Act
    const [registered, removed] = await Promise.allSettled([
      registry.register({ url: U }),
      registry.removeByUrl(U),
    ]);

    // Assert
    expect(registered.status).toBe('rejected');
    expectFleetError((registered as PromiseRejectedResult).reason, 'DUPLICATE_URL');
    expect(removed).toEqual({ status: 'fulfilled', value: old });
    expect(registry.size).toBe(0);
    expect(registry.getIdByUrl(U)).toBeUndefined();
    expect(summary(events)).toEqual([`removed:${old.id}`]);
  });

  it('removeByUrl parked inside the lock makes a register of the same URL wait, then the register wins', async () => {
    // Arrange
    const { registry, events, inside } = await choreographed();
    const old = await registry.register({ url: U, models: ['m'] });
    events.length = 0;
    const parked = gate();
    inside.push(parked.promise);

    // Act
    const removing = registry.removeByUrl(U);
    const registering = registry.register({ url: U, models: ['m'] });
    await settle();
    const whileParked = { size: registry.size, oldLive: old.live, events: events.length };
    parked.open();
    const [removed, registered] = await Promise.allSettled([removing, registering]);

    // Assert
    expect(whileParked).toEqual({ size: 1, oldLive: true, events: 0 });
    expect(removed).toEqual({ status: 'fulfilled', value: old });
    const worker = (registered as PromiseFulfilledResult<Worker>).value;
    expect(registry.getByUrl(U)).toBe(worker);
    expect(worker.live).toBe(true);
    expect(summary(events)).toEqual([`removed:${old.id}`, `registered:${worker.id}`]);
    expectConsistent(registry);
  });

  it('a removeByUrl that reaches the lock only after register completes removes that worker whole', async () => {
    // Arrange
    const { registry, events, before } = await choreographed();
    const late = gate();
    before.push(late.promise);

    // Act
    const removing = registry.removeByUrl(U);
    const worker = await registry.register({ url: U, models: ['m'] });
    const registeredAlone = registry.getByUrl(U);
    late.open();
    const removed = await removing;

    // Assert
    expect(registeredAlone).toBe(worker);
    expect(removed).toBe(worker);
    expect(registry.getIdByUrl(U)).toBeUndefined();
    expect(registry.getByModel('m')).toEqual([]);
    expect(summary(events)).toEqual([`registered:${worker.id}`, `removed:${worker.id}`]);
    expectConsistent(registry);
  });

  it('register parked inside the lock makes removeByUrl wait, which then removes the new worker', async () => {
    // Arrange
    const { registry, events, inside } = await choreographed();
    const parked = gate();
    inside.push(parked.promise);

    // Act
    const registering = registry.register({ url: U });
    const removing = registry.removeByUrl(U);
    await settle();
    const whileParked = registry.size;
    parked.open();
    const [registered, removed] = await Promise.allSettled([registering, removing]);

    // Assert
    expect(whileParked).toBe(0);
    const worker = (registered as PromiseFulfilledResult<Worker>).value;
    expect(removed).toEqual({ status: 'fulfilled', value: worker });
    expect(registry.size).toBe(0);
    expect(summary(events)).toEqual([`registered:${worker.id}`, `removed:${worker.id}`]);
    expectConsistent(registry);
  });
});

describe('register racing remove (by id) of the same URL', { timeout: 5_000 }, () => {
  it.each([
    ['remove first', true],
    ['register first', false],
  ])('%s leaves url → id consistent', async (_label, removeFirst) => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const old = await registry.register({ url: U, models: ['m'] });
    events.length = 0;

    // Act
    const remove = () => registry.remove(old.id);
    const register = () => registry.register({ url: U, models: ['m'] });
    const results = removeFirst
      ? await Promise.allSettled([remove(), register()])
      : (await Promise.allSettled([register(), remove()])).reverse();
    const [removed, registered] = results as [
      PromiseSettledResult<Worker | undefined>,
      PromiseSettledResult<Worker>,
    ];

    // Assert
    expect(removed).toEqual({ status: 'fulfilled', value: old });
    expect(old.live).toBe(false);
    if (removeFirst) {
      const worker = (registered as PromiseFulfilledResult<Worker>).value;
      expect(registry.getIdByUrl(U)).toBe(worker.id);
      expect(registry.get(worker.id)?.url).toBe(U);
      expect(summary(events)).toEqual([`removed:${old.id}`, `registered:${worker.id}`]);
    } else {
      expectFleetError((registered as PromiseRejectedResult).reason, 'DUPLICATE_URL');
      expect(registry.getIdByUrl(U)).toBeUndefined();
      expect(summary(events)).toEqual([`removed:${old.id}`]);
    }
    expectConsistent(registry);
  });

  it('remove parked inside the lock: the register waits and then maps the URL to its new id', async () => {
    // Arrange
    const { registry, events, inside } = await choreographed();
    const old = await registry.register({ url: U });
    events.length = 0;
    const parked = gate();
    inside.push(parked.promise);

    // Act
    const removing = registry.remove(old.id);
    const registering = registry.register({ url: U });
    await settle();
    parked.open();
    const [, registered] = await Promise.allSettled([removing, registering]);

    // Assert
    const worker = (registered as PromiseFulfilledResult<Worker>).value;
    expect(registry.getIdByUrl(U)).toBe(worker.id);
    expect(registry.get(old.id)).toBeUndefined();
    expect(summary(events)).toEqual([`removed:${old.id}`, `registered:${worker.id}`]);
    expectConsistent(registry);
  });
});

describe('other same-URL races', { timeout: 5_000 }, () => {
  it('five concurrent registers of one URL: exactly one wins, the rest fail DUPLICATE_URL', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const spellings = ['h:8000', 'http://h:8000', 'HTTP://H:8000/', 'http://h:8000/', 'H:8000'];

    // Act
    const results = await Promise.allSettled(spellings.map((url) => registry.register({ url })));

    // Assert
    expect(results.map((r) => r.status)).toEqual([
      'fulfilled',
      'rejected',
      'rejected',
      'rejected',
      'rejected',
    ]);
    for (const r of results.slice(1)) {
      expectFleetError((r as PromiseRejectedResult).reason, 'DUPLICATE_URL');
    }
    expect(events).toHaveLength(1);
    expectConsistent(registry);
  });

  it('three concurrent registerOrReplace of one URL: one registered, then two replaces of that id', async () => {
    const { registry, events } = await recordedRegistry();

    const results = await Promise.all(
      [1, 2, 3].map((v) => registry.registerOrReplace({ url: U, labels: { v: String(v) } })),
    );

    expect(results.map((r) => [r.replaced, r.worker.revision])).toEqual([
      [false, 0],
      [true, 1],
      [true, 2],
    ]);
    expect(new Set(results.map((r) => r.worker.id)).size).toBe(1);
    expect(events.map((e) => e.type)).toEqual(['registered', 'replaced', 'replaced']);
    expect(registry.getByUrl(U)?.labels).toEqual({ v: '3' });
  });

  it('two replaces expecting the same revision: the first wins, the second is stale and changes nothing', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: U, models: ['a'] });
    events.length = 0;

    // Act
    const [first, second] = await Promise.allSettled([
      registry.replace(worker.id, { url: U, models: ['b'] }, { expectedRevision: 0 }),
      registry.replace(worker.id, { url: U, models: ['c'] }, { expectedRevision: 0 }),
    ]);

    // Assert
    expect(first.status).toBe('fulfilled');
    expectFleetError((second as PromiseRejectedResult).reason, 'STALE_REVISION');
    expect(registry.getModels()).toEqual(['b']);
    expect(registry.get(worker.id)?.revision).toBe(1);
    expect(events.map((e) => e.type)).toEqual(['replaced']);
  });

  it('a transition expecting revision 0 after a concurrent replace is stale; before it, both succeed', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1' });
    const b = await registry.register({ url: 'h:2' });

    // Act
    const [, staleTransition] = await Promise.allSettled([
      registry.replace(a.id, { url: 'h:1' }, { expectedRevision: 0 }),
      registry.transitionStatus(a.id, 'draining', { expectedRevision: 0 }),
    ]);
    const [okTransition, okReplace] = await Promise.allSettled([
      registry.transitionStatus(b.id, 'draining', { expectedRevision: 0 }),
      registry.replace(b.id, { url: 'h:2' }, { expectedRevision: 0 }),
    ]);

    // Assert
    expectFleetError((staleTransition as PromiseRejectedResult).reason, 'STALE_REVISION');
    expect(registry.get(a.id)?.status).toBe('ready');
    expect(okTransition).toEqual({ status: 'fulfilled', value: { from: 'ready', to: 'draining' } });
    expect(okReplace.status).toBe('fulfilled');
    expect(registry.get(b.id)?.status).toBe('draining');
  });

  it('a replace queued behind a remove of the same worker fails NOT_FOUND and emits nothing', async () => {
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: U });
    events.length = 0;

    const [removed, replaced] = await Promise.allSettled([
      registry.remove(worker.id),
      registry.replace(worker.id, { url: U, labels: { v: '1' } }),
    ]);

    expect(removed).toEqual({ status: 'fulfilled', value: worker });
    expectFleetError((replaced as PromiseRejectedResult).reason, 'NOT_FOUND');
    expect(events.map((e) => e.type)).toEqual(['removed']);
  });

  it('a remove queued behind a replace removes the new revision, and removed is the last event', async () => {
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: U });

    const [replaced, removed] = await Promise.all([
      registry.replace(worker.id, { url: U, labels: { v: '1' } }),
      registry.remove(worker.id),
    ]);

    expect(removed).toBe(replaced);
    expect(replaced.revision).toBe(1);
    expect(events.map((e) => e.type)).toEqual(['registered', 'replaced', 'removed']);
    expectConsistent(registry);
  });

  it('a transitionStatus queued behind a remove fails NOT_FOUND: no status change after removed', async () => {
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: U });

    const [, transitioned] = await Promise.allSettled([
      registry.remove(worker.id),
      registry.transitionStatus(worker.id, 'failed'),
    ]);

    expectFleetError((transitioned as PromiseRejectedResult).reason, 'NOT_FOUND');
    expect(events.at(-1)?.type).toBe('removed');
    expect(worker.status).toBe('ready');
  });

  it.each([
    ['reserve first', true],
    ['register first', false],
  ])(
    'reserveIdForUrl racing register (%s): the URL ends up with exactly one id',
    async (_l, reserveFirst) => {
      // Arrange
      const { registry } = await recordedRegistry();

      // Act
      const reserve = () => registry.reserveIdForUrl(U);
      const register = () => registry.register({ url: U });
      const [id, worker] = reserveFirst
        ? await Promise.all([reserve(), register()])
        : ((await Promise.all([register(), reserve()])).reverse() as [string, Worker]);

      // Assert
      expect(worker.id).toBe(id);
      expect(registry.getIdByUrl(U)).toBe(id);
      expect(registry.stats().reservations).toBe(0);
      expectConsistent(registry);
    },
  );

  it('mutations on different URLs interleave: a parked register does not block another URL', async () => {
    // Arrange
    const { registry, inside } = await choreographed();
    const parked = gate();
    inside.push(parked.promise);

    // Act
    const slow = registry.register({ url: 'h:1' });
    const fast = await registry.register({ url: 'h:2' });
    const sizeWhileParked = registry.size;
    parked.open();
    await slow;

    // Assert
    expect(sizeWhileParked).toBe(1);
    expect(registry.getAll().map((w) => w.url)).toEqual([fast.url, 'http://h:1']);
    expectConsistent(registry);
  });

  it('many concurrent mutations over a few URLs keep every index consistent', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const urls = ['h:1', 'h:2', 'h:3'];
    const calls: Promise<unknown>[] = [];

    // Act
    for (let round = 0; round < 20; round++) {
      for (const [i, url] of urls.entries()) {
        const models = round % 2 === 0 ? [`m${i}`] : [`m${i}`, 'shared'];
        calls.push(registry.registerOrReplace({ url, models }));
        if ((round + i) % 3 === 0) calls.push(registry.removeByUrl(url));
        if ((round + i) % 5 === 0) calls.push(registry.reserveIdForUrl(url));
      }
    }
    const results = await Promise.allSettled(calls);

    // Assert
    expect(results.every((r) => r.status === 'fulfilled')).toBe(true);
    expectConsistent(registry);
  });
});

describe('listeners that mutate the registry', { timeout: 5_000 }, () => {
  it('a listener that removes the worker it was told about does not deadlock; removed follows registered', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const pending: Promise<unknown>[] = [];
    registry.on('registered', (e) => {
      pending.push(registry.remove(e.workerId));
    });

    // Act
    const worker = await registry.register({ url: U });
    await Promise.all(pending);

    // Assert
    expect(summary(events)).toEqual([`registered:${worker.id}`, `removed:${worker.id}`]);
    expect(registry.size).toBe(0);
    expectConsistent(registry);
  });
});
