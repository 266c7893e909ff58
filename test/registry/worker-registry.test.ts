import { describe, expect, it, vi } from 'vitest';
import { type WorkerEvent, WorkerRegistry, type WorkerRegistryOptions } from '../../src/index.js';
import {
  expectConsistent,
  recordedRegistry,
  rejectsCode,
  throwsCode,
} from '../support/fixtures.js';

describe('WorkerRegistry.create', () => {
  it('creates an empty, open registry whose workers start pending by default', async () => {
    // Act
    const registry = await WorkerRegistry.create();
    const worker = await registry.register({ url: 'h:1' });

    // Assert
    expect(worker.status).toBe('pending');
    expect(registry.stats()).toMatchObject({ workers: 1, closed: false, eventsEmitted: 1 });
  });

  it('applies defaultStatus, virtualNodes and the registry-wide breaker defaults', async () => {
    // Act
    const registry = await WorkerRegistry.create({
      defaultStatus: 'ready',
      virtualNodes: 10,
      circuitBreaker: { failureThreshold: 2 },
    });
    const plain = await registry.register({ url: 'h:1' });
    const overridden = await registry.register({ url: 'h:2', circuitBreaker: { openMs: 5 } });

    // Assert
    expect(plain.status).toBe('ready');
    expect(registry.getHashRing().virtualNodes).toBe(10);
    expect(plain.circuitBreaker.config.failureThreshold).toBe(2);
    expect(overridden.circuitBreaker.config).toMatchObject({ failureThreshold: 2, openMs: 5 });
  });

  it.each<[string, unknown]>([
    ['options', null],
    ['options', []],
    ['options.virtualNodes', { virtualNodes: 0 }],
    ['options.virtualNodes', { virtualNodes: 10_001 }],
    ['options.defaultStatus', { defaultStatus: 'up' }],
    ['options.circuitBreaker.failureThreshold', { circuitBreaker: { failureThreshold: -1 } }],
    ['options.eventBufferSize', { eventBufferSize: 0 }],
    ['options.clock', { clock: 5 }],
    ['options.onListenerError', { onListenerError: 'log' }],
  ])('rejects a bad %s with INVALID_ARGUMENT naming it', async (field, options) => {
    const error = await rejectsCode(
      WorkerRegistry.create(options as WorkerRegistryOptions),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(field)).toBe(true);
  });

  it('refuses an unknown option with INVALID_ARGUMENT naming it and listing the options', async () => {
    const error = await rejectsCode(
      WorkerRegistry.create({ defaultStatus: 'ready', virtualNode: 10 } as WorkerRegistryOptions),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toMatch(
      /^options\.virtualNode is not an option of WorkerRegistry \(options: virtualNodes, /,
    );
  });

  it.each<[string, unknown[]]>([
    ['no arguments', []],
    ['options in place of the hasher', [{ defaultStatus: 'ready' }]],
  ])('new WorkerRegistry() with %s is INVALID_ARGUMENT pointing at create()', (_label, args) => {
    const Ctor = WorkerRegistry as unknown as new (...a: unknown[]) => WorkerRegistry;
    const error = throwsCode(() => new Ctor(...args), 'INVALID_ARGUMENT');
    expect(error.message).toContain('WorkerRegistry.create');
  });
});

describe('WorkerRegistry.register', () => {
  it('returns a worker at revision 0 under a fresh id and emits one registered event', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();

    // Act
    const a = await registry.register({ url: 'h:1', models: ['m'] });
    const b = await registry.register({ url: 'h:2', status: 'not_ready' });

    // Assert
    expect([a.id, b.id]).toEqual(['worker-1', 'worker-2']);
    expect(a.revision).toBe(0);
    expect(b.status).toBe('not_ready');
    expect(events).toEqual([
      { type: 'registered', seq: 1, workerId: a.id, worker: a, status: 'ready' },
      { type: 'registered', seq: 2, workerId: b.id, worker: b, status: 'not_ready' },
    ]);
    expect(Object.isFrozen(events[0])).toBe(true);
    expect(registry.get(a.id)).toBe(a);
    expect(registry.getByUrl('http://h:1')).toBe(a);
    expectConsistent(registry);
  });

  it.each(['h:1', 'http://h:1', 'HTTP://H:1/', 'http://h:1/'])(
    'rejects a second live worker spelled %s with DUPLICATE_URL, no state change and no event',
    async (spelling) => {
      // Arrange
      const { registry, events } = await recordedRegistry();
      await registry.register({ url: 'http://h:1', models: ['m'] });
      const before = registry.snapshot();
      events.length = 0;

      // Act
      await rejectsCode(registry.register({ url: spelling, models: ['other'] }), 'DUPLICATE_URL');

      // Assert
      expect(registry.snapshot()).toEqual(before);
      expect(events).toEqual([]);
      expect(registry.getModels()).toEqual(['m']);
    },
  );

  it('treats different dp ranks of one base URL as different workers', async () => {
    const { registry } = await recordedRegistry();
    const r0 = await registry.register({ url: 'h:1@0' });
    const r1 = await registry.register({ url: 'h:1', dpRank: 1 });
    expect(r0.url).not.toBe(r1.url);
    expect(r0.baseUrl).toBe(r1.baseUrl);
    expect(registry.size).toBe(2);
  });

  it('frees the URL when the worker is removed: a new register gets a new id', async () => {
    const { registry } = await recordedRegistry();
    const first = await registry.register({ url: 'h:1' });
    await registry.remove(first.id);

    const second = await registry.register({ url: 'h:1' });

    expect(second.id).not.toBe(first.id);
    expect(registry.getIdByUrl('h:1')).toBe(second.id);
    expectConsistent(registry);
  });
});

describe('WorkerRegistry.registerOrReplace', () => {
  it('registers when no live worker has the URL: replaced is false and one registered event', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();

    // Act
    const result = await registry.registerOrReplace({ url: 'h:1', models: ['m'] });

    // Assert
    expect(result.replaced).toBe(false);
    expect(result.worker.revision).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['registered']);
  });

  it('replaces the live worker with that URL, keeping id and counters: replaced is true', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const first = await registry.register({ url: 'h:1', models: ['a'] });
    first.incrementProcessed();
    await registry.transitionStatus(first.id, 'draining');
    events.length = 0;

    // Act
    const result = await registry.registerOrReplace({ url: 'HTTP://H:1', models: ['b'] });

    // Assert
    expect(result.replaced).toBe(true);
    expect(result.worker.id).toBe(first.id);
    expect(result.worker.revision).toBe(1);
    expect(result.worker.status).toBe('draining');
    expect(result.worker.processed).toBe(1);
    expect(registry.getModels()).toEqual(['b']);
    expect(events).toEqual([
      { type: 'replaced', seq: 3, workerId: first.id, old: first, new: result.worker },
    ]);
  });
});

describe('WorkerRegistry.replace', () => {
  it('keeps id, status, load, processed and the breaker, bumps revision, emits replaced', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1', models: ['a'], labels: { v: '1' } });
    await registry.transitionStatus(old.id, 'not_ready');
    const lease = old.acquire();
    old.incrementProcessed();
    old.circuitBreaker.recordFailure();
    const breaker = old.circuitBreaker;
    events.length = 0;

    // Act
    const next = await registry.replace(old.id, { url: 'h:1', models: ['a'], labels: { v: '2' } });

    // Assert
    expect(next).not.toBe(old);
    expect(next.id).toBe(old.id);
    expect(next.revision).toBe(1);
    expect(next.status).toBe('not_ready');
    expect(next.load).toBe(1);
    expect(next.processed).toBe(1);
    expect(next.circuitBreaker).toBe(breaker);
    expect(next.circuitBreaker.snapshot().consecutiveFailures).toBe(1);
    expect(next.labels).toEqual({ v: '2' });
    expect(old.labels).toEqual({ v: '1' });
    expect(old.revision).toBe(0);
    expect(registry.get(old.id)).toBe(next);
    expect(events).toEqual([{ type: 'replaced', seq: 3, workerId: old.id, old, new: next }]);
    lease.release();
    expect(next.load).toBe(0);
  });

  it('bumps the revision by one on every replace', async () => {
    const { registry } = await recordedRegistry();
    let worker = await registry.register({ url: 'h:1' });
    for (let i = 1; i <= 3; i++) {
      worker = await registry.replace(worker.id, { url: 'h:1', labels: { v: String(i) } });
      expect(worker.revision).toBe(i);
    }
  });

  it('gives the worker a new breaker only when its breaker config changed', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1', circuitBreaker: { failureThreshold: 1 } });
    const original = old.circuitBreaker;
    original.recordFailure();

    // Act
    const sameConfig = await registry.replace(old.id, {
      url: 'h:1',
      circuitBreaker: { failureThreshold: 1 },
      labels: { v: '1' },
    });
    const keptBreaker = sameConfig.circuitBreaker;
    const changed = await registry.replace(old.id, {
      url: 'h:1',
      circuitBreaker: { failureThreshold: 2 },
    });

    // Assert
    expect(keptBreaker).toBe(original);
    expect(keptBreaker.state).toBe('open');
    expect(changed.circuitBreaker).not.toBe(original);
    expect(changed.circuitBreaker.state).toBe('closed');
    expect(changed.circuitBreaker.config.failureThreshold).toBe(2);
    // Every revision object reads the worker's current breaker.
    expect(old.circuitBreaker).toBe(changed.circuitBreaker);
  });

  it('keeps the breaker when an explicit override equals the registry default', async () => {
    const { registry } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1' });
    const next = await registry.replace(old.id, {
      url: 'h:1',
      circuitBreaker: { failureThreshold: 5 },
    });
    expect(next.circuitBreaker).toBe(old.circuitBreaker);
  });

  it('re-indexes models, type and connection', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1', models: ['a'], type: 'prefill' });
    await registry.register({ url: 'h:2', models: ['c'] });

    // Act
    const next = await registry.replace(old.id, { url: 'h:1', models: ['b'], type: 'decode' });

    // Assert
    expect(registry.getModels()).toEqual(['b', 'c']);
    expect(registry.getByModel('a')).toEqual([]);
    expect(registry.getByModel('b')).toEqual([next]);
    expect(registry.getPrefillWorkers()).toEqual([]);
    expect(registry.getDecodeWorkers()).toEqual([next]);
    expectConsistent(registry);
  });

  it('accepts any spelling of the same URL', async () => {
    const { registry } = await recordedRegistry();
    const old = await registry.register({ url: 'http://h:80/' });
    const next = await registry.replace(old.id, { url: 'H:80' });
    expect(next.url).toBe('http://h');
  });

  it('accepts a matching expectedRevision', async () => {
    const { registry } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1' });
    const next = await registry.replace(old.id, { url: 'h:1' }, { expectedRevision: 0 });
    await expect(
      registry.replace(old.id, { url: 'h:1' }, { expectedRevision: next.revision }),
    ).resolves.toMatchObject({ revision: 2 });
  });

  it('a stale expectedRevision is rejected with no state change and no event', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1', models: ['a'] });
    await registry.replace(old.id, { url: 'h:1', models: ['a'] });
    const before = registry.snapshot();
    events.length = 0;

    // Act
    const error = await rejectsCode(
      registry.replace(old.id, { url: 'h:1', models: ['b'] }, { expectedRevision: 0 }),
      'STALE_REVISION',
    );

    // Assert
    expect(error.message).toMatch(/at revision 1, expected 0/);
    expect(registry.snapshot()).toEqual(before);
    expect(registry.get(old.id)?.revision).toBe(1);
    expect(registry.getModels()).toEqual(['a']);
    expect(events).toEqual([]);
  });

  it('rejects a different URL with URL_CHANGED, no state change and no event', async () => {
    const { registry, events } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1' });
    const before = registry.snapshot();
    events.length = 0;

    await rejectsCode(registry.replace(old.id, { url: 'h:2' }), 'URL_CHANGED');
    await rejectsCode(registry.replace(old.id, { url: 'h:1@0' }), 'URL_CHANGED');

    expect(registry.snapshot()).toEqual(before);
    expect(events).toEqual([]);
  });

  it('rejects an unknown or removed id with NOT_FOUND', async () => {
    const { registry, events } = await recordedRegistry();
    const gone = await registry.register({ url: 'h:1' });
    await registry.remove(gone.id);
    events.length = 0;

    await rejectsCode(registry.replace('worker-404', { url: 'h:1' }), 'NOT_FOUND');
    await rejectsCode(registry.replace(gone.id, { url: 'h:1' }), 'NOT_FOUND');

    expect(events).toEqual([]);
  });
});

describe('WorkerRegistry.transitionStatus', () => {
  it('returns { from, to } and emits one statusChanged event', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', status: 'pending' });
    events.length = 0;

    // Act
    const result = await registry.transitionStatus(worker.id, 'ready');

    // Assert
    expect(result).toEqual({ from: 'pending', to: 'ready' });
    expect(worker.status).toBe('ready');
    expect(events).toEqual([
      { type: 'statusChanged', seq: 2, workerId: worker.id, worker, from: 'pending', to: 'ready' },
    ]);
  });

  it('transitioning to the same status returns undefined and emits nothing', async () => {
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    events.length = 0;

    const result = await registry.transitionStatus(worker.id, 'ready');

    expect(result).toBeUndefined();
    expect(events).toEqual([]);
    expect(registry.stats().eventsEmitted).toBe(1);
  });

  it('allows any transition (the caller owns the state machine)', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    for (const [from, to] of [
      ['ready', 'failed'],
      ['failed', 'draining'],
      ['draining', 'pending'],
      ['pending', 'not_ready'],
    ] as const) {
      expect(await registry.transitionStatus(worker.id, to)).toEqual({ from, to });
    }
  });

  it('a stale expectedRevision is rejected with no state change and no event', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    await registry.replace(worker.id, { url: 'h:1' });
    const before = registry.snapshot();
    events.length = 0;

    // Act
    await rejectsCode(
      registry.transitionStatus(worker.id, 'draining', { expectedRevision: 0 }),
      'STALE_REVISION',
    );

    // Assert
    expect(registry.get(worker.id)?.status).toBe('ready');
    expect(registry.snapshot()).toEqual(before);
    expect(events).toEqual([]);
  });

  it('checks the revision even when the status would not change', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    await rejectsCode(
      registry.transitionStatus(worker.id, 'ready', { expectedRevision: 9 }),
      'STALE_REVISION',
    );
    expect(await registry.transitionStatus(worker.id, 'draining', { expectedRevision: 0 })).toEqual(
      { from: 'ready', to: 'draining' },
    );
  });

  it('shows the new status through every revision object of the worker', async () => {
    const { registry } = await recordedRegistry();
    const old = await registry.register({ url: 'h:1' });
    const next = await registry.replace(old.id, { url: 'h:1', labels: { v: '1' } });

    await registry.transitionStatus(old.id, 'failed');

    expect(next.status).toBe('failed');
    expect(old.status).toBe('failed');
    expect(next.isAvailable()).toBe(false);
  });

  it('rejects an unknown id with NOT_FOUND and an unknown status with INVALID_ARGUMENT', async () => {
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    events.length = 0;

    await rejectsCode(registry.transitionStatus('nope', 'ready'), 'NOT_FOUND');
    const error = await rejectsCode(
      registry.transitionStatus(worker.id, 'up' as never),
      'INVALID_ARGUMENT',
    );

    expect(error.message).toMatch(/^status must be one of/);
    expect(events).toEqual([]);
  });
});

describe('WorkerRegistry.remove / removeByUrl', () => {
  it('remove returns the worker, marks it not live and emits removed as its last event', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', models: ['m'] });

    // Act
    const removed = await registry.remove(worker.id);

    // Assert
    expect(removed).toBe(worker);
    expect(worker.live).toBe(false);
    expect(events.at(-1)).toEqual({ type: 'removed', seq: 2, workerId: worker.id, worker });
    expect(registry.get(worker.id)).toBeUndefined();
    expect(registry.getByUrl('h:1')).toBeUndefined();
    expect(registry.getIdByUrl('h:1')).toBeUndefined();
    expect(registry.getModels()).toEqual([]);
    expectConsistent(registry);
  });

  it('remove of an unknown or already removed id returns undefined and emits nothing', async () => {
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });
    await registry.remove(worker.id);
    events.length = 0;

    expect(await registry.remove(worker.id)).toBeUndefined();
    expect(await registry.remove('worker-404')).toBeUndefined();
    expect(events).toEqual([]);
  });

  it('removeByUrl removes the worker under any spelling of its URL', async () => {
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://h:80/' });
    events.length = 0;

    const removed = await registry.removeByUrl('HTTP://H');

    expect(removed).toBe(worker);
    expect(events.map((e) => e.type)).toEqual(['removed']);
    expect(registry.size).toBe(0);
  });

  it('removeByUrl of an unknown URL returns undefined and emits nothing', async () => {
    const { registry, events } = await recordedRegistry();
    await registry.register({ url: 'h:1' });
    events.length = 0;

    expect(await registry.removeByUrl('h:2')).toBeUndefined();
    expect(events).toEqual([]);
    expect(registry.size).toBe(1);
  });

  it('a removed worker keeps its last state for holders of the object', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', models: ['m'] });
    const lease = worker.acquire();

    await registry.remove(worker.id);

    expect(worker.load).toBe(1);
    expect(lease.release()).toBe(true);
    expect(worker.load).toBe(0);
    expect(worker.toJSON()).toMatchObject({ live: false, models: ['m'] });
  });
});

describe('WorkerRegistry.reserveIdForUrl', () => {
  it('register uses the reserved id and consumes the reservation', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const reserved = await registry.reserveIdForUrl('h:1');
    expect(registry.stats().reservations).toBe(1);

    // Act
    const worker = await registry.register({ url: 'HTTP://H:1' });

    // Assert
    expect(worker.id).toBe(reserved);
    expect(registry.stats().reservations).toBe(0);
    expect(registry.getIdByUrl('h:1')).toBe(worker.id);
  });

  it('returns the same id for repeated reservations of one URL (any spelling)', async () => {
    const { registry } = await recordedRegistry();
    const a = await registry.reserveIdForUrl('h:1');
    const b = await registry.reserveIdForUrl('http://H:1/');
    expect(b).toBe(a);
    expect(registry.stats().reservations).toBe(1);
  });

  it('never shadows a live worker: for a live URL it returns the live id and reserves nothing', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1' });

    const id = await registry.reserveIdForUrl('h:1');

    expect(id).toBe(worker.id);
    expect(registry.stats().reservations).toBe(0);
    expect(registry.getByUrl('h:1')).toBe(worker);
  });

  it('a reserved URL resolves to its id but to no worker until it is registered', async () => {
    const { registry } = await recordedRegistry();
    const id = await registry.reserveIdForUrl('h:1');
    expect(registry.getIdByUrl('h:1')).toBe(id);
    expect(registry.getIdByUrl('http://h:1')).toBe(id);
    expect(registry.getByUrl('h:1')).toBeUndefined();
    expect(registry.get(id)).toBeUndefined();
    expect(registry.size).toBe(0);
  });

  it('reserved ids never collide with ids handed to other workers', async () => {
    const { registry } = await recordedRegistry();
    const reserved = await registry.reserveIdForUrl('h:9');
    const others = [];
    for (let i = 1; i <= 3; i++) others.push((await registry.register({ url: `h:${i}` })).id);
    expect(others).not.toContain(reserved);
    expect((await registry.register({ url: 'h:9' })).id).toBe(reserved);
  });

  it('removeByUrl drops a reservation without emitting anything', async () => {
    const { registry, events } = await recordedRegistry();
    const reserved = await registry.reserveIdForUrl('h:1');

    expect(await registry.removeByUrl('h:1')).toBeUndefined();
    const worker = await registry.register({ url: 'h:1' });

    expect(worker.id).not.toBe(reserved);
    expect(registry.stats().reservations).toBe(0);
    expect(events.map((e) => e.type)).toEqual(['registered']);
  });

  it('emits no event', async () => {
    const { registry, events } = await recordedRegistry();
    await registry.reserveIdForUrl('h:1');
    expect(events).toEqual([]);
    expect(registry.snapshot().seq).toBe(0);
  });

  it('rejects an invalid URL with INVALID_URL', async () => {
    const { registry } = await recordedRegistry();
    await rejectsCode(registry.reserveIdForUrl('ftp://h:1'), 'INVALID_URL');
    expect(registry.stats().reservations).toBe(0);
  });
});

describe('WorkerRegistry retry configs', () => {
  it('stores a resolved override for a served model and returns it', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    await registry.register({ url: 'h:1', models: ['m'] });
    events.length = 0;

    // Act
    registry.setModelRetryConfig('m', { maxAttempts: 5 });

    // Assert
    expect(registry.getRetryConfig('m')).toEqual({ maxAttempts: 5 });
    expect(Object.isFrozen(registry.getRetryConfig('m'))).toBe(true);
    expect(registry.snapshot().retryConfigs).toEqual({ m: registry.getRetryConfig('m') });
    expect(events).toEqual([]);
  });

  it('returns undefined for a model without an override', async () => {
    const { registry } = await recordedRegistry();
    expect(registry.getRetryConfig('m')).toBeUndefined();
  });

  it('rejects a model no live worker names with NOT_FOUND, even when wildcards serve it', async () => {
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1' });
    throwsCode(() => registry.setModelRetryConfig('m', {}), 'NOT_FOUND');
    expect(registry.getRetryConfig('m')).toBeUndefined();
  });

  it('rejects a bad config with INVALID_ARGUMENT and keeps the previous override', async () => {
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', models: ['m'] });
    registry.setModelRetryConfig('m', { maxAttempts: 2 });

    const error = throwsCode(
      () => registry.setModelRetryConfig('m', { maxAttempts: 0 }),
      'INVALID_ARGUMENT',
    );

    expect(error.message).toMatch(/^config\.maxAttempts/);
    expect(registry.getRetryConfig('m')?.maxAttempts).toBe(2);
  });

  it('keeps the override while another worker still names the model', async () => {
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['m'] });
    await registry.register({ url: 'h:2', models: ['m'] });
    registry.setModelRetryConfig('m', { maxAttempts: 4 });

    await registry.remove(a.id);

    expect(registry.getRetryConfig('m')?.maxAttempts).toBe(4);
  });

  it('drops the override when the model last worker is removed', async () => {
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['m', 'n'] });
    registry.setModelRetryConfig('m', { maxAttempts: 4 });

    await registry.removeByUrl(a.url);

    expect(registry.getRetryConfig('m')).toBeUndefined();
    expect(registry.snapshot().retryConfigs).toEqual({});
  });

  it('a replace that drops a model last worker clears that model retry config', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['m', 'keep'] });
    registry.setModelRetryConfig('m', { maxAttempts: 4 });
    registry.setModelRetryConfig('keep', { maxAttempts: 6 });

    // Act
    await registry.replace(a.id, { url: 'h:1', models: ['keep'] });

    // Assert
    expect(registry.getRetryConfig('m')).toBeUndefined();
    expect(registry.getRetryConfig('keep')?.maxAttempts).toBe(6);
  });
});

describe('WorkerRegistry reads', () => {
  it('get, getByUrl and getIdByUrl find live workers and miss with undefined', async () => {
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'http://Host:80/v1/' });

    expect(registry.get(worker.id)).toBe(worker);
    expect(registry.get('worker-999')).toBeUndefined();
    expect(registry.getByUrl('http://host/v1')).toBe(worker);
    expect(registry.getByUrl('HTTP://HOST:80/v1/')).toBe(worker);
    expect(registry.getIdByUrl('http://host/v1')).toBe(worker.id);
    expect(registry.getByUrl('http://host/v2')).toBeUndefined();
    expect(registry.getByUrl('not a url')).toBeUndefined();
  });

  it('getByModel returns the same array object until that model changes', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['b'] });
    const a1 = registry.getByModel('a');
    const b1 = registry.getByModel('b');

    // Act: change model b only.
    const b2worker = await registry.register({ url: 'h:3', models: ['b'] });

    // Assert
    expect(registry.getByModel('a')).toBe(a1);
    expect(registry.getByModel('b')).not.toBe(b1);
    expect(registry.getByModel('b')).toContain(b2worker);
    expect(registry.getByModel('b')).toBe(registry.getByModel('b'));
  });

  it('a status change keeps the model array; a replace gives that model a new array', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['b'] });
    const before = registry.getByModel('a');

    // Act
    await registry.transitionStatus(a.id, 'draining');
    const afterStatus = registry.getByModel('a');
    const next = await registry.replace(a.id, { url: 'h:1', models: ['a'], labels: { v: '1' } });

    // Assert
    expect(afterStatus).toBe(before);
    expect(registry.getByModel('a')).not.toBe(before);
    expect(registry.getByModel('a')).toEqual([next]);
  });

  it('a replace that keeps a worker models and URL leaves other models arrays and its own ring untouched', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['b'] });
    const beforeB = registry.getByModel('b');
    const ringA = registry.getHashRing('a');
    const built = registry.stats().ringsBuilt;

    // Act
    await registry.replace(a.id, { url: 'h:1', models: ['a'], labels: { v: '1' } });

    // Assert
    expect(registry.getByModel('b')).toBe(beforeB);
    expect(registry.getHashRing('a')).toBe(ringA);
    expect(registry.stats().ringsBuilt).toBe(built);
  });

  it('adding or removing a whole model leaves the arrays of other models correct', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    const b = await registry.register({ url: 'h:2', models: ['b'] });
    registry.getByModel('a');

    // Act / Assert
    await registry.remove(b.id);
    expect(registry.getByModel('a')).toEqual([a]);
    expect(registry.getByModel('a')).toBe(registry.getAll());
    const c = await registry.register({ url: 'h:3', models: ['c'] });
    expect(registry.getByModel('a')).toEqual([a]);
    expect(registry.getByModel('c')).toEqual([c]);
    expectConsistent(registry);
  });

  it('misses share one frozen empty array', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const empty = registry.getAll();
    await registry.register({ url: 'h:1', models: ['m'] });

    // Act
    const misses = [
      registry.getByModel('unknown'),
      registry.getByType('prefill'),
      registry.getByType('decode'),
      registry.getByConnection('grpc'),
      registry.getPrefillWorkers(),
      registry.getDecodeWorkers(),
    ];

    // Assert
    expect(empty).toEqual([]);
    expect(Object.isFrozen(empty)).toBe(true);
    for (const miss of misses) expect(miss).toBe(empty);
  });

  it.each([undefined, '', '*'])('getByModel(%j) returns every worker', async (model) => {
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    const b = await registry.register({ url: 'h:2', models: ['b'] });
    const w = await registry.register({ url: 'h:3' });

    expect(registry.getByModel(model)).toEqual([a, b, w]);
    expect(registry.getByModel(model)).toBe(registry.getAll());
  });

  it('wildcard workers serve every model: named workers first, then wildcards', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const wild = await registry.register({ url: 'h:10' });
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    const b = await registry.register({ url: 'h:2', models: ['b', 'a'] });

    // Act / Assert
    expect(registry.getByModel('a')).toEqual([a, b, wild]);
    expect(registry.getByModel('b')).toEqual([b, wild]);
    expect(registry.getByModel('unknown')).toEqual([wild]);
    expect(registry.getModels()).toEqual(['a', 'b']);
  });

  it('with only wildcard workers every model gets all of them', async () => {
    const { registry } = await recordedRegistry();
    const w1 = await registry.register({ url: 'h:1' });
    const w2 = await registry.register({ url: 'h:2' });
    expect(registry.getByModel('anything')).toEqual([w1, w2]);
    expect(registry.getModels()).toEqual([]);
  });

  it('getByType, getByConnection, getPrefillWorkers and getDecodeWorkers group workers', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const regular = await registry.register({ url: 'h:1' });
    const prefill = await registry.register({ url: 'h:2', type: 'prefill', bootstrapPort: 8998 });
    const decode = await registry.register({ url: 'grpc://h:3', type: 'decode' });

    // Act / Assert
    expect(registry.getByType('regular')).toEqual([regular]);
    expect(registry.getByType('prefill')).toEqual([prefill]);
    expect(registry.getPrefillWorkers()).toBe(registry.getByType('prefill'));
    expect(registry.getDecodeWorkers()).toEqual([decode]);
    expect(registry.getDecodeWorkers()).toBe(registry.getByType('decode'));
    expect(registry.getByConnection('http')).toEqual([regular, prefill]);
    expect(registry.getByConnection('grpc')).toEqual([decode]);
  });

  it('getByType and getByConnection reject an unknown value with INVALID_ARGUMENT', async () => {
    const { registry } = await recordedRegistry();
    throwsCode(() => registry.getByType('mixed' as never), 'INVALID_ARGUMENT');
    throwsCode(() => registry.getByConnection('ws' as never), 'INVALID_ARGUMENT');
  });

  it('getAll lists live workers in registration order; getModels is sorted and frozen', async () => {
    const { registry } = await recordedRegistry();
    const c = await registry.register({ url: 'h:3', models: ['zeta', 'alpha'] });
    const a = await registry.register({ url: 'h:1', models: ['Mid'] });
    expect(registry.getAll()).toEqual([c, a]);
    expect(registry.getModels()).toEqual(['Mid', 'alpha', 'zeta']);
    expect(Object.isFrozen(registry.getModels())).toBe(true);
    expect(registry.size).toBe(2);
  });
});

describe('WorkerRegistry.stats', () => {
  it('counts workers by status, type and connection, plus event and subscriber counters', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', type: 'prefill', status: 'pending' });
    await registry.register({ url: 'grpc://h:3', type: 'decode', models: ['a', 'b'] });
    await registry.reserveIdForUrl('h:9');
    registry.getHashRing('a');
    const stream = registry.events();

    // Act
    const stats = registry.stats();

    // Assert
    expect(stats).toEqual({
      workers: 3,
      models: 2,
      wildcardWorkers: 1,
      byStatus: { pending: 1, ready: 2, not_ready: 0, failed: 0, draining: 0 },
      byType: { regular: 1, prefill: 1, decode: 1 },
      byConnection: { http: 2, grpc: 1 },
      reservations: 1,
      eventsEmitted: 3,
      listenerErrors: 0,
      subscribers: 2,
      ringsBuilt: 1,
      closed: false,
    });
    await stream.return?.();
  });
});

describe('WorkerRegistry.snapshot', () => {
  it('is plain data with the seq of the last event it reflects', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['m'] });
    const w = await registry.register({ url: 'h:2' });
    await registry.transitionStatus(w.id, 'draining');

    // Act
    const snapshot = registry.snapshot();

    // Assert
    expect(snapshot.seq).toBe(3);
    expect(snapshot.workers).toEqual([a.toJSON(), w.toJSON()]);
    expect(snapshot.models).toEqual({ m: [a.id] });
    expect(snapshot.retryConfigs).toEqual({});
    expect(structuredClone(snapshot)).toEqual(snapshot);
    expect(JSON.parse(JSON.stringify(snapshot))).toEqual(snapshot);
  });

  it('does not change when the registry changes later', async () => {
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1' });
    const snapshot = registry.snapshot();

    await registry.transitionStatus(a.id, 'failed');
    a.acquire();

    expect(snapshot.workers[0]).toMatchObject({ status: 'ready', load: 0 });
  });

  it('is empty with seq 0 for a new registry', async () => {
    const { registry } = await recordedRegistry();
    expect(registry.snapshot()).toEqual({ seq: 0, workers: [], models: {}, retryConfigs: {} });
  });
});

describe('WorkerRegistry.close', () => {
  it('makes every mutation fail with CLOSED and keeps reads working', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', models: ['m'] });
    const before = registry.snapshot();
    events.length = 0;

    // Act
    registry.close();

    // Assert
    await rejectsCode(registry.register({ url: 'h:2' }), 'CLOSED');
    await rejectsCode(registry.registerOrReplace({ url: 'h:1' }), 'CLOSED');
    await rejectsCode(registry.replace(worker.id, { url: 'h:1' }), 'CLOSED');
    await rejectsCode(registry.transitionStatus(worker.id, 'failed'), 'CLOSED');
    await rejectsCode(registry.remove(worker.id), 'CLOSED');
    await rejectsCode(registry.removeByUrl('h:1'), 'CLOSED');
    await rejectsCode(registry.reserveIdForUrl('h:3'), 'CLOSED');
    throwsCode(() => registry.setModelRetryConfig('m', {}), 'CLOSED');
    throwsCode(() => registry.events(), 'CLOSED');
    expect(registry.get(worker.id)).toBe(worker);
    expect(registry.getByModel('m')).toEqual([worker]);
    expect(registry.getHashRing().urls).toEqual([worker.url]);
    expect(registry.snapshot()).toEqual(before);
    expect(registry.stats().closed).toBe(true);
    expect(events).toEqual([]);
  });

  it('removes listeners and is idempotent', async () => {
    const { registry } = await recordedRegistry();
    registry.close();
    registry.close();
    expect(registry.stats().subscribers).toBe(0);
  });
});

describe('WorkerRegistry listeners', () => {
  it('a listener that throws does not stop the others nor corrupt state; onListenerError gets it', async () => {
    // Arrange
    const reported: [unknown, WorkerEvent][] = [];
    const { registry } = await recordedRegistry({
      onListenerError: (error, event) => reported.push([error, event]),
    });
    const boom = new Error('listener bug');
    const seen: string[] = [];
    registry.on('event', () => seen.push('first'));
    registry.on('event', () => {
      throw boom;
    });
    registry.on('event', () => seen.push('third'));
    registry.on('registered', () => {
      throw boom;
    });
    registry.on('registered', () => seen.push('typed'));

    // Act
    const worker = await registry.register({ url: 'h:1', models: ['m'] });

    // Assert
    expect(seen).toEqual(['first', 'third', 'typed']);
    expect(reported).toHaveLength(2);
    expect(reported[0]?.[0]).toBe(boom);
    expect(reported[0]?.[1]).toMatchObject({ type: 'registered', workerId: worker.id });
    expect(registry.stats().listenerErrors).toBe(2);
    expect(registry.get(worker.id)).toBe(worker);
    expectConsistent(registry);
    await expect(registry.transitionStatus(worker.id, 'draining')).resolves.toEqual({
      from: 'ready',
      to: 'draining',
    });
  });

  it('an onListenerError that itself throws is swallowed', async () => {
    const { registry } = await recordedRegistry({
      onListenerError: () => {
        throw new Error('reporter bug');
      },
    });
    registry.on('event', () => {
      throw new Error('listener bug');
    });

    await expect(registry.register({ url: 'h:1' })).resolves.toBeDefined();
    expect(registry.size).toBe(1);
  });

  it('by default reports a listener error as a process warning with code FLEETROUTE_LISTENER_THREW', async () => {
    // Arrange
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const registry = await WorkerRegistry.create();
      registry.on('event', () => {
        throw new Error('listener bug');
      });

      // Act
      await registry.register({ url: 'h:1' });

      // Assert
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]?.[0]).toMatch(/listener threw while handling 'registered'/);
      expect(warn.mock.calls[0]?.[1]).toEqual({ code: 'FLEETROUTE_LISTENER_THREW' });
    } finally {
      warn.mockRestore();
    }
  });

  it('typed listeners receive only their event type, after the catch-all ones', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const order: string[] = [];
    registry.on('removed', (e) => order.push(`removed:${e.workerId}`));
    registry.on('replaced', (e) => order.push(`replaced:${e.new.revision}`));
    registry.on('statusChanged', (e) => order.push(`status:${e.from}->${e.to}`));
    registry.on('registered', (e) => order.push(`registered:${e.status}`));
    registry.on('event', (e) => order.push(`event:${e.type}`));

    // Act
    const w = await registry.register({ url: 'h:1' });
    await registry.replace(w.id, { url: 'h:1', labels: { v: '3' } });
    await registry.transitionStatus(w.id, 'failed');
    await registry.remove(w.id);

    // Assert
    expect(order).toEqual([
      'event:registered',
      'registered:ready',
      'event:replaced',
      'replaced:1',
      'event:statusChanged',
      'status:ready->failed',
      'event:removed',
      `removed:${w.id}`,
    ]);
  });

  it('off removes a listener; on, once and off return the registry', async () => {
    const { registry } = await recordedRegistry();
    const calls: number[] = [];
    const listener = () => calls.push(1);

    expect(registry.on('event', listener)).toBe(registry);
    await registry.register({ url: 'h:1' });
    expect(registry.off('event', listener)).toBe(registry);
    await registry.register({ url: 'h:2' });

    expect(calls).toEqual([1]);
    expect(registry.once('event', () => undefined)).toBe(registry);
  });

  it('a listener added with once runs for the first event only', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const seen: number[] = [];
    registry.once('event', (e) => seen.push(e.seq));
    registry.once('registered', (e) => seen.push(-e.seq));
    const subscribersWithOnce = registry.stats().subscribers;

    // Act
    await registry.register({ url: 'h:1' });
    await registry.register({ url: 'h:2' });

    // Assert
    expect(seen).toEqual([1, -1]);
    expect(registry.stats().subscribers).toBe(subscribersWithOnce - 2);
  });

  it('a once listener can be removed with off before it fires', async () => {
    const { registry } = await recordedRegistry();
    const seen: number[] = [];
    const listener = (e: WorkerEvent) => seen.push(e.seq);
    registry.once('event', listener);
    registry.off('event', listener);

    await registry.register({ url: 'h:1' });

    expect(seen).toEqual([]);
  });

  it('seq increases by exactly one per event across all mutation kinds', async () => {
    const { registry, events } = await recordedRegistry();
    const w = await registry.register({ url: 'h:1' });
    await registry.registerOrReplace({ url: 'h:1', labels: { v: '2' } });
    await registry.transitionStatus(w.id, 'failed');
    await registry.transitionStatus(w.id, 'failed');
    await registry.removeByUrl('h:1');
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    expect(registry.stats().eventsEmitted).toBe(4);
  });
});
