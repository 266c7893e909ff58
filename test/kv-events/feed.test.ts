/**
 * `KvEventFeed`: a subscriber per registry worker, opened, reopened and closed with the
 * registry's events, over real sockets on 127.0.0.1, feeding a real `cache_aware` policy.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy, type Worker, WorkerRegistry } from '../../src/index.js';
import { KvEventFeed } from '../../src/kv-events/feed.js';
import type { KvSubscriberEvent } from '../../src/kv-events/index.js';
import { rejectsCode } from '../support/fixtures.js';
import { FakeEngine, RecordingTarget, until } from './support/fake-engine.js';

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);
const prompt = range(64, 3_000);

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function engine() {
  const e = await FakeEngine.start();
  open.push(e);
  return e;
}

async function registryOf(engines: FakeEngine[]) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  open.push(registry);
  for (const [i, e] of engines.entries()) {
    await registry.register({
      url: `http://127.0.0.1:${8100 + i}`,
      models: ['m'],
      labels: { kv: e.endpoint },
    });
  }
  return registry;
}

/** The engine's endpoint rides on a label, as a deployment's discovery might carry it. */
const source = (w: Worker) => ({ endpoint: w.labels.kv!, model: 'm' });

async function feedOf(
  registry: WorkerRegistry,
  target: RecordingTarget | ReturnType<typeof createPolicy>,
) {
  const feed = await KvEventFeed.start({
    registry,
    target: target as never,
    source,
    reconnectIntervalMs: 20,
    reconnectMaxIntervalMs: 100,
  });
  open.push(feed);
  return feed;
}

/** Sends empty batches until every subscriber of `feed` has applied one. */
async function joined(feed: KvEventFeed, engines: FakeEngine[]) {
  await until(() => {
    for (const e of engines) void e.send([]);
    const workers = Object.values(feed.stats().workers);
    return workers.length === engines.length && workers.every((s) => s.batches > 0);
  });
}

describe('KvEventFeed', () => {
  it('routes a prompt to the worker whose engine reported holding it', async () => {
    const engines = [await engine(), await engine(), await engine()];
    const registry = await registryOf(engines);
    const policy = createPolicy('cache_aware');
    open.push(policy as { close(): unknown });
    const feed = await feedOf(registry, policy);
    expect(feed.size).toBe(3);
    await joined(feed, engines);

    const stored = engines[2]!.stored(prompt);
    await engines[2]!.send([stored.event]);
    const url = registry.getAll()[2]!.url;
    await until(() => feed.stats().workers[url]!.translator.storedBlocks === 4);

    const workers = registry.getByModel('m');
    expect(policy.select(workers, { model: 'm', tokens: prompt })?.url).toBe(url);
    expect(policy.stats().reasons.event_overlap).toBe(1);
  });

  it('two feeds over the same engines hold the same view: routers agree', async () => {
    const engines = [await engine(), await engine()];
    const registryA = await registryOf(engines);
    const registryB = await registryOf(engines);
    const a = new RecordingTarget();
    const b = new RecordingTarget();
    const feedA = await feedOf(registryA, a);
    const feedB = await feedOf(registryB, b);
    await joined(feedA, engines);
    await joined(feedB, engines);

    for (const [i, e] of engines.entries())
      await e.send([e.stored(range(32 * (i + 1), 10 * i)).event]);
    const last = engines.map((e) => e.seq - 1n);
    const done = (feed: KvEventFeed) =>
      Object.values(feed.stats().workers).every((s, i) => s.lastSeq === last[i]);
    await until(() => done(feedA) && done(feedB));

    for (const [i, e] of engines.entries()) {
      const url = registryA.getAll()[i]!.url;
      expect(a.keys(url)).toEqual(e.truth());
      expect(b.keys(url)).toEqual(e.truth());
    }
  });

  it('follows a worker registered later, and clears a removed worker’s blocks', async () => {
    const first = await engine();
    const registry = await registryOf([first]);
    const target = new RecordingTarget();
    const feed = await feedOf(registry, target);
    const late = await engine();
    const worker = await registry.register({
      url: 'http://127.0.0.1:8200',
      models: ['m'],
      labels: { kv: late.endpoint },
    });
    await until(() => feed.stats().workers[worker.url] !== undefined);
    await joined(feed, [first, late]);
    await late.send([late.stored(range(32)).event]);
    await until(() => target.keys(worker.url).size === 2);

    await registry.remove(worker.id);
    await until(() => target.keys(worker.url).size === 0);
    expect(feed.size).toBe(1);
    expect(feed.stats().workers[worker.url]).toBeUndefined();
  });

  it('reopens a worker whose spec now names another publisher, clearing what the old one said', async () => {
    const [old, next] = [await engine(), await engine()];
    const registry = await registryOf([old]);
    const target = new RecordingTarget();
    const feed = await feedOf(registry, target);
    await joined(feed, [old]);
    await old.send([old.stored(range(32)).event]);
    const worker = registry.getAll()[0]!;
    await until(() => target.keys(worker.url).size === 2);

    await registry.replace(worker.id, {
      url: worker.url,
      models: ['m'],
      labels: { kv: next.endpoint },
    });
    await until(() => target.keys(worker.url).size === 0);
    await until(() => {
      void next.send([]);
      return (feed.stats().workers[worker.url]?.batches ?? 0) > 0;
    });
    await next.send([next.stored(range(16, 77)).event]);
    await until(() => target.keys(worker.url).size === 1);
    expect(target.keys(worker.url)).toEqual(next.truth());
  });

  it('a worker whose source fails is skipped and counted; bad options reject before anything opens', async () => {
    const registry = await registryOf([]);
    await registry.register({
      url: 'http://127.0.0.1:8300',
      models: ['m'],
      labels: { kv: 'not an endpoint' },
    });
    const target = new RecordingTarget();
    const feed = await feedOf(registry, target);
    expect(feed.stats()).toEqual({ workers: {}, failed: 1 });

    await rejectsCode(KvEventFeed.start({ registry, target, pageSize: 0 }), 'INVALID_ARGUMENT');
    await rejectsCode(
      KvEventFeed.start({ registry, target, replayTimeoutMs: -1 }),
      'INVALID_ARGUMENT',
    );
    await rejectsCode(
      KvEventFeed.start({ registry, target, typo: true } as never),
      'INVALID_ARGUMENT',
    );
    await rejectsCode(KvEventFeed.start({ registry, target: {} as never }), 'INVALID_ARGUMENT');
  });

  it('close() stops following: later registrations open nothing', async () => {
    const e = await engine();
    const registry = await registryOf([e]);
    const feed = await feedOf(registry, new RecordingTarget());
    await feed.close();
    await registry.register({
      url: 'http://127.0.0.1:8400',
      models: ['m'],
      labels: { kv: e.endpoint },
    });
    expect(feed.size).toBe(0);
    await feed.close(); // idempotent
  });

  it('a target that throws when a removed worker is cleared never takes the process down', async () => {
    const rejections: unknown[] = [];
    const listener = (reason: unknown) => void rejections.push(reason);
    process.on('unhandledRejection', listener);
    try {
      const e = await engine();
      const registry = await registryOf([e]);
      class ThrowsOnClear extends RecordingTarget {
        override applyKvEvents(url: string, events: readonly { type: string }[]): void {
          if (events.some((x) => x.type === 'cleared')) throw new Error('target failed');
          super.applyKvEvents(url, events);
        }
      }
      const events: KvSubscriberEvent[] = [];
      const feed = await KvEventFeed.start({
        registry,
        target: new ThrowsOnClear(),
        source,
        reconnectIntervalMs: 20,
        onEvent: (event) => void events.push(event),
      });
      open.push(feed);
      await joined(feed, [e]);
      const worker = registry.getAll()[0]!;
      await registry.remove(worker.id);
      expect(feed.size).toBe(0);
      await until(() => rejections.length > 0 || events.some((x) => x.type === 'targetError'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(rejections).toEqual([]);
      expect(events.filter((x) => x.type === 'targetError')).toMatchObject([
        { workerUrl: worker.url, endpoint: e.endpoint },
      ]);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });
});
