import { describe, expect, it } from 'vitest';
import {
  CONNECTION_MODES,
  MAX_MODEL_ID_LENGTH,
  MAX_MODELS_PER_WORKER,
  RUNTIME_TYPES,
  WORKER_STATUSES,
  WORKER_TYPES,
} from '../../src/index.js';
import { resolveWorkerSpec } from '../../src/workers/worker-spec.js';
import { recordedRegistry, rejectsCode, throwsCode } from '../support/fixtures.js';

describe('resolveWorkerSpec: defaults and normalisation', () => {
  it('fills every default for a spec with only a URL', () => {
    // Act
    const spec = resolveWorkerSpec({ url: 'host:8000' });

    // Assert
    expect(spec).toEqual({
      url: 'http://host:8000',
      baseUrl: 'http://host:8000',
      models: [],
      type: 'regular',
      connection: 'http',
      runtime: 'unspecified',
      labels: {},
      bootstrapPort: undefined,
      dpRank: undefined,
      dpSize: undefined,
      apiKey: undefined,
      status: undefined,
      health: undefined,
      circuitBreaker: undefined,
    });
    expect(Object.isFrozen(spec)).toBe(true);
    expect(Object.isFrozen(spec.models)).toBe(true);
    expect(Object.isFrozen(spec.labels)).toBe(true);
  });

  it('drops duplicate model ids and keeps first-seen order', () => {
    const spec = resolveWorkerSpec({ url: 'h:1', models: ['b', 'a', 'b', 'c', 'a'] });
    expect(spec.models).toEqual(['b', 'a', 'c']);
  });

  it.each([
    ['absent', undefined],
    ['null', null],
    ['empty', []],
  ])('models %s means a wildcard worker (no model ids)', (_label, models) => {
    expect(resolveWorkerSpec({ url: 'h:1', models }).models).toEqual([]);
  });

  it('derives the connection from the scheme and accepts an agreeing explicit connection', () => {
    expect(resolveWorkerSpec({ url: 'grpc://h:1' }).connection).toBe('grpc');
    expect(resolveWorkerSpec({ url: 'https://h' }).connection).toBe('http');
    expect(resolveWorkerSpec({ url: 'grpc://h:1', connection: 'grpc' }).connection).toBe('grpc');
  });

  it('takes the dp rank from the URL suffix or from dpRank, and puts it in the URL identity', () => {
    const fromUrl = resolveWorkerSpec({ url: 'http://h:1@2', dpSize: 4 });
    const fromField = resolveWorkerSpec({ url: 'http://h:1', dpRank: 2, dpSize: 4 });
    const both = resolveWorkerSpec({ url: 'http://h:1@2', dpRank: 2 });

    for (const spec of [fromUrl, fromField, both]) {
      expect(spec.url).toBe('http://h:1@2');
      expect(spec.baseUrl).toBe('http://h:1');
      expect(spec.dpRank).toBe(2);
    }
    expect(fromField.dpSize).toBe(4);
  });

  it('keeps only the override fields the caller gave, validated and frozen', () => {
    // Act
    const spec = resolveWorkerSpec({
      url: 'h:1',
      circuitBreaker: { failureThreshold: 2, failureStatuses: [503] },
      health: { intervalMs: 1000 },
    });

    // Assert
    expect(spec.circuitBreaker).toEqual({ failureThreshold: 2, failureStatuses: [503] });
    expect(spec.health).toEqual({ intervalMs: 1000 });
    expect(Object.isFrozen(spec.circuitBreaker)).toBe(true);
    expect(Object.isFrozen(spec.circuitBreaker?.failureStatuses)).toBe(true);
  });

  it('copies labels so a later change to the caller object has no effect', () => {
    // Arrange
    const labels: Record<string, string> = { zone: 'a' };

    // Act
    const spec = resolveWorkerSpec({ url: 'h:1', labels });
    labels.zone = 'b';

    // Assert
    expect(spec.labels).toEqual({ zone: 'a' });
  });

  it('accepts every documented type, runtime and status', () => {
    for (const type of WORKER_TYPES)
      expect(resolveWorkerSpec({ url: 'h:1', type }).type).toBe(type);
    for (const runtime of RUNTIME_TYPES) {
      expect(resolveWorkerSpec({ url: 'h:1', runtime }).runtime).toBe(runtime);
    }
    for (const status of WORKER_STATUSES) {
      expect(resolveWorkerSpec({ url: 'h:1', status }).status).toBe(status);
    }
  });

  it('exports frozen lists of the documented values', () => {
    expect(WORKER_TYPES).toEqual(['regular', 'prefill', 'decode']);
    expect(CONNECTION_MODES).toEqual(['http', 'grpc']);
    expect(RUNTIME_TYPES).toEqual(['vllm', 'sglang', 'trtllm', 'unspecified']);
    expect(WORKER_STATUSES).toEqual(['pending', 'ready', 'not_ready', 'failed', 'draining']);
    for (const list of [WORKER_TYPES, CONNECTION_MODES, RUNTIME_TYPES, WORKER_STATUSES]) {
      expect(Object.isFrozen(list)).toBe(true);
    }
    expect(MAX_MODEL_ID_LENGTH).toBe(256);
    expect(MAX_MODELS_PER_WORKER).toBe(1024);
  });
});

describe('resolveWorkerSpec: rejection names the field', () => {
  const tooManyModels = Array.from({ length: MAX_MODELS_PER_WORKER + 1 }, (_, i) => `m${i}`);
  const tooManyLabels = Object.fromEntries(Array.from({ length: 257 }, (_, i) => [`k${i}`, 'v']));

  it.each([
    ['spec', null],
    ['spec', []],
    ['spec', 'http://h:1'],
    ['spec', 42],
    ['spec.models', { url: 'h:1', models: 'llama' }],
    ['spec.models', { url: 'h:1', models: tooManyModels }],
    ['spec.models[0]', { url: 'h:1', models: ['*'] }],
    ['spec.models[1]', { url: 'h:1', models: ['a', '*'] }],
    ['spec.models[0]', { url: 'h:1', models: [''] }],
    ['spec.models[0]', { url: 'h:1', models: [42] }],
    ['spec.models[0]', { url: 'h:1', models: ['x'.repeat(MAX_MODEL_ID_LENGTH + 1)] }],
    ['spec.models[0]', { url: 'h:1', models: ['llama\uD800'] }],
    ['spec.type', { url: 'h:1', type: 'mixed' }],
    ['spec.runtime', { url: 'h:1', runtime: 'ollama' }],
    ['spec.connection', { url: 'h:1', connection: 'websocket' }],
    ['spec.connection', { url: 'h:1', connection: 'grpc' }],
    ['spec.connection', { url: 'grpc://h:1', connection: 'http' }],
    ['spec.models[0]', { url: 'h:1', models: new Array(3) }],
    // biome-ignore lint/suspicious/noSparseArray: a hole is the case under test
    ['spec.models[1]', { url: 'h:1', models: ['a', , 'b'] }],
    ['spec.dpSize', { url: 'h:1', dpSize: Number.NaN }],
    ['spec.dpSize', { url: 'h:1', dpSize: '2' }],
    ['spec.labels', { url: 'h:1', labels: ['zone'] }],
    ['spec.labels', { url: 'h:1', labels: tooManyLabels }],
    ['spec.labels.zone', { url: 'h:1', labels: { zone: 1 } }],
    ['spec.labels.zone', { url: 'h:1', labels: { zone: null } }],
    ['spec.labels key', { url: 'h:1', labels: { '': 'x' } }],
    ['spec.bootstrapPort', { url: 'h:1', bootstrapPort: 0 }],
    ['spec.bootstrapPort', { url: 'h:1', bootstrapPort: 65_536 }],
    ['spec.dpRank', { url: 'h:1', dpRank: -1 }],
    ['spec.dpRank', { url: 'h:1', dpRank: 1.5 }],
    ['spec.dpRank', { url: 'h:1', dpRank: 4, dpSize: 4 }],
    ['spec.dpRank', { url: 'h:1@5', dpSize: 2 }],
    ['spec.dpRank', { url: 'h:1@1', dpRank: 2 }],
    ['spec.dpSize', { url: 'h:1', dpSize: 0 }],
    ['spec.apiKey', { url: 'h:1', apiKey: '' }],
    ['spec.apiKey', { url: 'h:1', apiKey: 42 }],
    ['spec.status', { url: 'h:1', status: 'healthy' }],
    ['spec.health', { url: 'h:1', health: 'fast' }],
    ['spec.health.intervalMs', { url: 'h:1', health: { intervalMs: 0 } }],
    [
      'spec.circuitBreaker.failureThreshold',
      { url: 'h:1', circuitBreaker: { failureThreshold: 0 } },
    ],
    [
      'spec.circuitBreaker.failureStatuses',
      { url: 'h:1', circuitBreaker: { failureStatuses: 503 } },
    ],
    [
      'spec.circuitBreaker.failureStatuses[1]',
      { url: 'h:1', circuitBreaker: { failureStatuses: [503, 99] } },
    ],
    ['spec.circuitBreaker.disabled', { url: 'h:1', circuitBreaker: { disabled: 'yes' } }],
  ])('rejects a bad %s with INVALID_ARGUMENT naming it', (field, input) => {
    const error = throwsCode(() => resolveWorkerSpec(input), 'INVALID_ARGUMENT');
    expect(error.message.startsWith(field)).toBe(true);
  });

  it.each([
    ['a missing url', {}],
    ['a numeric url', { url: 8000 }],
    ['a null url', { url: null }],
    ['an ftp url', { url: 'ftp://h:21' }],
  ])('rejects %s with INVALID_URL', (_label, input) => {
    throwsCode(() => resolveWorkerSpec(input), 'INVALID_URL');
  });

  it('rejects a bad spec through register with no state change and no event', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const before = registry.snapshot();

    // Act
    const error = await rejectsCode(
      registry.register({ url: 'h:1', models: ['a'], dpSize: Number.NaN }),
      'INVALID_ARGUMENT',
    );

    // Assert
    expect(error.message).toMatch(/^spec\.dpSize/);
    expect(registry.snapshot()).toEqual(before);
    expect(registry.size).toBe(0);
    expect(events).toEqual([]);
  });
});
