import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { type RoutingState, Worker, WorkerLease, WorkerRegistry } from '../../src/index.js';
import { recordedRegistry } from '../support/fixtures.js';

const SECRET = 'sk-very-secret-key-0123456789';

describe('Worker: fields', () => {
  it('exposes the resolved spec through its getters', async () => {
    // Arrange
    const { registry } = await recordedRegistry();

    // Act
    const worker = await registry.register({
      url: 'HTTP://Prefill-0:8000/@1',
      models: ['llama', 'qwen'],
      type: 'prefill',
      runtime: 'sglang',
      labels: { zone: 'eu' },
      bootstrapPort: 9000,
      dpSize: 2,
      apiKey: SECRET,
      health: { intervalMs: 500 },
      circuitBreaker: { failureThreshold: 3 },
    });

    // Assert
    expect(worker).toBeInstanceOf(Worker);
    expect(worker.id).toBe('worker-1');
    expect(worker.url).toBe('http://prefill-0:8000@1');
    expect(worker.baseUrl).toBe('http://prefill-0:8000');
    expect(worker.models).toEqual(['llama', 'qwen']);
    expect(worker.isWildcard).toBe(false);
    expect(worker.type).toBe('prefill');
    expect(worker.connection).toBe('http');
    expect(worker.runtime).toBe('sglang');
    expect(worker.labels).toEqual({ zone: 'eu' });
    expect(worker.bootstrapPort).toBe(9000);
    expect(worker.dpRank).toBe(1);
    expect(worker.dpSize).toBe(2);
    expect(worker.apiKey).toBe(SECRET);
    expect(worker.health).toEqual({ intervalMs: 500 });
    expect(worker.circuitBreakerConfig).toEqual({ failureThreshold: 3 });
    expect(worker.circuitBreaker.config.failureThreshold).toBe(3);
    expect(worker.revision).toBe(0);
    expect(worker.status).toBe('ready');
    expect(worker.load).toBe(0);
    expect(worker.processed).toBe(0);
    expect(worker.live).toBe(true);
  });

  it('a worker registered without models is a wildcard that serves any model', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const wildcard = await registry.register({ url: 'h:1' });
    const explicit = await registry.register({ url: 'h:2', models: ['llama'] });

    // Act / Assert
    expect(wildcard.isWildcard).toBe(true);
    expect(wildcard.serves('anything')).toBe(true);
    expect(explicit.serves('llama')).toBe(true);
    expect(explicit.serves('qwen')).toBe(false);
    expect(explicit.serves('')).toBe(false);
  });

  it('its models and labels cannot be mutated by callers', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', models: ['a'], labels: { k: 'v' } });
    expect(Object.isFrozen(worker.models)).toBe(true);
    expect(Object.isFrozen(worker.labels)).toBe(true);
  });
});

describe('Worker: availability', () => {
  it.each([
    ['ready', true],
    ['pending', false],
    ['not_ready', false],
    ['failed', false],
    ['draining', false],
  ] as const)('a live worker with status %s is available: %s', async (status, available) => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', status });
    expect(worker.isAvailable()).toBe(available);
  });

  it('a ready worker whose breaker is open is not available', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });

    worker.circuitBreaker.forceOpen();

    expect(worker.isAvailable()).toBe(false);
  });

  it('a removed worker is not available and no longer live', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });

    // Act
    await registry.remove(worker.id);

    // Assert
    expect(worker.live).toBe(false);
    expect(worker.status).toBe('ready');
    expect(worker.isAvailable()).toBe(false);
    expect(worker.routingState().healthy).toBe(false);
  });
});

describe('Worker: routingState', () => {
  it('fills the given object and returns that same object', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    worker.acquire();
    worker.incrementProcessed();
    worker.incrementProcessed();
    const into: RoutingState = { healthy: false, canExecute: false, load: -1, processed: -1 };

    // Act
    const state = worker.routingState(into);

    // Assert
    expect(state).toBe(into);
    expect(into).toEqual({ healthy: true, canExecute: true, load: 1, processed: 2, prefilling: 1 });
  });

  it('overwrites every field of a reused object on each call', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const ready = await registry.register({ url: 'h:1' });
    const broken = await registry.register({ url: 'h:2', status: 'not_ready' });
    broken.circuitBreaker.forceOpen();
    const into = ready.routingState();

    // Act
    broken.routingState(into);

    // Assert
    expect(into).toEqual({
      healthy: false,
      canExecute: false,
      load: 0,
      processed: 0,
      prefilling: 0,
    });
  });

  it('allocates a fresh object when none is given', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', status: 'pending' });
    expect(worker.routingState()).toEqual({
      healthy: false,
      canExecute: true,
      load: 0,
      processed: 0,
      prefilling: 0,
    });
    expect(worker.routingState()).not.toBe(worker.routingState());
  });
});

describe('Worker: counters', () => {
  it('acquire raises load by one per lease and returns a WorkerLease on this worker', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });

    // Act
    const a = worker.acquire();
    const b = worker.acquire();

    // Assert
    expect(a).toBeInstanceOf(WorkerLease);
    expect(a.worker).toBe(worker);
    expect(worker.load).toBe(2);
    b.release();
    expect(worker.load).toBe(1);
  });

  it('incrementProcessed counts selections and does not touch load', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });

    for (let i = 0; i < 3; i++) worker.incrementProcessed();

    expect(worker.processed).toBe(3);
    expect(worker.load).toBe(0);
  });

  it('load never goes below zero, whatever the order of releases', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    const leases = [worker.acquire(), worker.acquire()];

    // Act
    for (const lease of leases) {
      lease.release();
      lease.release({ ok: true });
    }

    // Assert
    expect(worker.load).toBe(0);
    expect(worker.toJSON().load).toBe(0);
  });

  it('counters carry over to the next revision after a replace', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', models: ['a'] });
    const lease = worker.acquire();
    worker.incrementProcessed();

    // Act
    const next = await registry.replace(worker.id, { url: 'h:1', models: ['b'] });
    lease.release();

    // Assert
    expect(next.processed).toBe(1);
    expect(next.load).toBe(0);
    expect(worker.load).toBe(0);
  });
});

describe('Worker: the API key never leaks', () => {
  it('is absent from JSON.stringify(worker), util.inspect(worker) and toJSON()', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', apiKey: SECRET, models: ['m'] });

    // Act
    const json = JSON.stringify(worker);
    const inspected = inspect(worker, { depth: 10, showHidden: true });
    const logged = `${inspect({ nested: { worker } }, { depth: 10 })}`;

    // Assert
    expect(json).not.toContain(SECRET);
    expect(inspected).not.toContain(SECRET);
    expect(logged).not.toContain(SECRET);
    expect(Object.keys(worker.toJSON())).not.toContain('apiKey');
    expect(inspected).toMatch(/^Worker \{/);
    expect(JSON.parse(json)).toMatchObject({ id: worker.id, url: 'http://h:1', models: ['m'] });
  });

  it('is absent from the JSON and inspection of every event type', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', apiKey: SECRET });
    await registry.replace(worker.id, { url: 'h:1', apiKey: SECRET, labels: { v: '1' } });
    await registry.transitionStatus(worker.id, 'draining');
    await registry.remove(worker.id);

    // Act
    const serialised = events.map((event) => JSON.stringify(event));
    const inspected = events.map((event) => inspect(event, { depth: 10 }));

    // Assert
    expect(events.map((e) => e.type)).toEqual([
      'registered',
      'replaced',
      'statusChanged',
      'removed',
    ]);
    for (const text of [...serialised, ...inspected]) expect(text).not.toContain(SECRET);
  });

  it('is absent from snapshot() and stats()', async () => {
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', apiKey: SECRET });

    expect(JSON.stringify(registry.snapshot())).not.toContain(SECRET);
    expect(inspect(registry.snapshot(), { depth: 10 })).not.toContain(SECRET);
    expect(JSON.stringify(registry.stats())).not.toContain(SECRET);
  });
});

describe('Worker: toJSON', () => {
  it('is a plain-data copy with optional fields only when set', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const plain = await registry.register({ url: 'h:1' });
    const ranked = await registry.register({ url: 'h:2@0', dpSize: 2, bootstrapPort: 7000 });

    // Act
    const info = plain.toJSON();
    const rankedInfo = ranked.toJSON();

    // Assert
    expect(info).toEqual({
      id: plain.id,
      url: 'http://h:1',
      baseUrl: 'http://h:1',
      models: [],
      type: 'regular',
      connection: 'http',
      runtime: 'unspecified',
      labels: {},
      status: 'ready',
      revision: 0,
      load: 0,
      processed: 0,
      live: true,
      circuitBreaker: {
        state: 'closed',
        consecutiveFailures: 0,
        trialsInFlight: 0,
        disabled: false,
        cooldownMs: 0,
      },
    });
    expect('dpRank' in info).toBe(false);
    expect(rankedInfo).toMatchObject({ dpRank: 0, dpSize: 2, bootstrapPort: 7000 });
    expect(structuredClone(info)).toEqual(info);
  });
});

describe('test equality of workers', () => {
  it('compares two workers by identity (their state is private, invisible to toEqual)', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const a = await registry.register({ url: 'http://eq-a:1' });
    const b = await registry.register({ url: 'http://eq-b:1' });

    expect([a, b]).toEqual([a, b]);
    expect([a]).not.toEqual([b]);
  });
});

describe('availability after a breaker swap', () => {
  it('a replaced breaker no longer affects the worker, the new one does', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const worker = await registry.register({
      url: 'http://swap:1',
      circuitBreaker: { failureThreshold: 1 },
    });
    const oldBreaker = worker.circuitBreaker;
    const next = await registry.replace(worker.id, {
      url: 'http://swap:1',
      circuitBreaker: { failureThreshold: 2 },
    });
    expect(next.circuitBreaker).not.toBe(oldBreaker);

    oldBreaker.recordFailure();
    expect(oldBreaker.state).toBe('open');
    expect(next.isAvailable()).toBe(true);

    next.circuitBreaker.forceOpen();
    expect(next.isAvailable()).toBe(false);
    next.circuitBreaker.reset();
    expect(next.isAvailable()).toBe(true);
  });
});
