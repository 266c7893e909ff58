/**
 * Model discovery: a worker registered without models is asked for them once it is ready (and
 * again after a replace), through `transport.models`, and the answer reaches the registry as a
 * `replaced` event; workers registered with models are never asked.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Router, type Transport, type WorkerEvent, WorkerRegistry } from '../../src/index.js';
import { httpTransport } from '../../src/transport/http/index.js';
import {
  type FakeWorker,
  json,
  reply,
  startFakeWorker,
} from '../transport/http/support/fake-worker.js';

const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 10));

async function until(condition: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A transport answering `models` from a table (a function to throw or hang), counting calls. */
function modelsFrom(table: Record<string, unknown>) {
  const calls: string[] = [];
  const transport: Transport = {
    probe: async () => true,
    models: async (worker) => {
      calls.push(worker.url);
      const answer = table[worker.url];
      if (typeof answer === 'function') return (answer as () => Promise<string[]>)();
      return answer as string[];
    },
  };
  return { transport, calls };
}

async function recorded() {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const events: WorkerEvent[] = [];
  registry.on('event', (e) => {
    events.push(e);
  });
  return { registry, events };
}

describe('Router model discovery', () => {
  const routers: Router[] = [];
  afterEach(async () => {
    for (const router of routers.splice(0)) await router.close();
  });
  function router(registry: WorkerRegistry, transport: Transport, extra: object = {}): Router {
    const r = new Router({ registry, transport, health: false, loadPolling: false, ...extra });
    routers.push(r);
    r.start();
    return r;
  }

  it('a ready wildcard worker gets the models it serves, with a replaced event; routing follows', async () => {
    const { registry, events } = await recorded();
    const worker = await registry.register({ url: 'http://a:1' });
    const { transport, calls } = modelsFrom({ 'http://a:1': ['llama', 'qwen'] });
    const r = router(registry, transport);

    await until(() => registry.get(worker.id)!.models.length > 0);

    expect(registry.get(worker.id)!.models).toEqual(['llama', 'qwen']);
    expect(registry.getModels()).toEqual(expect.arrayContaining(['llama', 'qwen']));
    expect(events.map((e) => e.type)).toEqual(['registered', 'replaced']);
    expect(calls).toEqual(['http://a:1']);
    expect(r.select({ model: 'llama' })?.worker.url).toBe('http://a:1');
    expect(r.select({ model: 'mistral' })).toBeUndefined(); // no longer a wildcard
    expect(r.stats().models).toEqual({ calls: 1, discovered: 1, failures: 0 });
  });

  it('never asks a worker registered with models', async () => {
    const { registry } = await recorded();
    await registry.register({ url: 'http://a:1', models: ['m'] });
    const { transport, calls } = modelsFrom({ 'http://a:1': ['other'] });
    router(registry, transport);
    await settle();
    expect(calls).toEqual([]);
    expect(registry.getByUrl('http://a:1')!.models).toEqual(['m']);
  });

  it('asks only once a worker is ready, and again after a replace that makes it a wildcard', async () => {
    const registry = await WorkerRegistry.create();
    const worker = await registry.register({ url: 'http://a:1' });
    const { transport, calls } = modelsFrom({ 'http://a:1': ['m'] });
    router(registry, transport);
    await settle();
    expect(calls).toEqual([]); // pending

    await registry.transitionStatus(worker.id, 'ready');
    await until(() => registry.get(worker.id)!.models.length === 1);
    const discovered = registry.get(worker.id)!;
    await registry.replace(worker.id, { url: 'http://a:1' }); // a wildcard again
    await until(() => calls.length === 2 && registry.get(worker.id)!.models.length === 1);
    expect(registry.get(worker.id)!.revision).toBe(discovered.revision + 2);
  });

  it('keeps only valid ids, without duplicates; an answer with none leaves a wildcard', async () => {
    const { registry } = await recorded();
    await registry.register({ url: 'http://a:1' });
    await registry.register({ url: 'http://b:1' });
    const long = 'x'.repeat(10_000);
    const { transport } = modelsFrom({
      'http://a:1': ['m', '', 'm', '*', 42, null, long, 'lone\uD800', 'n'],
      'http://b:1': ['', '*'],
    });
    const r = router(registry, transport);
    await until(() => r.stats().models.calls === 2);
    await settle();
    expect(registry.getByUrl('http://a:1')!.models).toEqual(['m', 'n']);
    expect(registry.getByUrl('http://b:1')!.models).toEqual([]);
    expect(r.stats().models).toMatchObject({ discovered: 1, failures: 1 });
  });

  it('a transport that throws, rejects or answers garbage changes nothing and is asked again at the next chance', async () => {
    const { registry } = await recorded();
    const worker = await registry.register({ url: 'http://a:1' });
    let answer: () => Promise<unknown> = () => Promise.reject(new Error('500'));
    const { transport, calls } = modelsFrom({ 'http://a:1': () => answer() });
    const r = router(registry, transport);
    await until(() => r.stats().models.failures === 1);
    expect(registry.get(worker.id)!.models).toEqual([]);

    answer = () => Promise.resolve({ data: 'not a list' });
    await registry.transitionStatus(worker.id, 'not_ready');
    await registry.transitionStatus(worker.id, 'ready'); // the next chance
    await until(() => r.stats().models.failures === 2);

    answer = () => Promise.resolve(['m']);
    await registry.transitionStatus(worker.id, 'not_ready');
    await registry.transitionStatus(worker.id, 'ready');
    await until(() => registry.get(worker.id)!.models.length === 1);
    expect(calls).toHaveLength(3);
  });

  it('an answer about a revision replaced meanwhile is dropped', async () => {
    const { registry } = await recorded();
    const worker = await registry.register({ url: 'http://a:1' });
    let release!: (ids: string[]) => void;
    const { transport } = modelsFrom({
      'http://a:1': () =>
        new Promise<string[]>((resolve) => {
          release = resolve;
        }),
    });
    router(registry, transport);
    await until(() => release !== undefined);
    await registry.replace(worker.id, { url: 'http://a:1', models: ['chosen'] });
    release(['stale']);
    await settle();
    expect(registry.get(worker.id)!.models).toEqual(['chosen']);
  });

  it('discoverModels: false turns it off; close() aborts a call in flight', async () => {
    const { registry } = await recorded();
    await registry.register({ url: 'http://a:1' });
    const off = modelsFrom({ 'http://a:1': ['m'] });
    router(registry, off.transport, { discoverModels: false });
    await settle();
    expect(off.calls).toEqual([]);

    let seen: AbortSignal | undefined;
    const hanging: Transport = {
      probe: async () => true,
      models: (_worker, signal) => {
        seen = signal;
        return new Promise<string[]>(() => {});
      },
    };
    const r = new Router({ registry, transport: hanging, health: false, loadPolling: false });
    r.start();
    await until(() => seen !== undefined);
    await r.close();
    expect(seen!.aborted).toBe(true);
  });
});

describe('Router model discovery over HTTP', () => {
  let server: FakeWorker | undefined;
  afterEach(async () => {
    await server?.close();
  });

  it('a vLLM-style worker registered by URL alone serves the ids of its /v1/models once ready', async () => {
    server = await startFakeWorker({
      '/health': reply(200, ''),
      '/v1/models': json({ object: 'list', data: [{ id: 'llama-3.1-8b', object: 'model' }] }),
    });
    const registry = await WorkerRegistry.create();
    await registry.register({ url: server.url });
    const router = new Router({ registry, transport: httpTransport(), loadPolling: false });
    router.start();
    await router.ready({ signal: AbortSignal.timeout(5_000) });
    await until(() => registry.getModels().includes('llama-3.1-8b'));
    expect(router.select({ model: 'llama-3.1-8b' })?.worker.url).toBe(server.url);
    await router.close();
  });
});
