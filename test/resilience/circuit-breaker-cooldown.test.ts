/**
 * A breaker's cooldown (`CircuitBreaker.coolDown`, a lease released with `retryAfterMs`): the
 * worker takes no request until the time has passed, then is admitted again by itself — lazily,
 * from the injected clock — without the cooldown ever being a failure state.
 */
import { describe, expect, it } from 'vitest';
import {
  type CircuitBreaker,
  type CircuitBreakerConfig,
  type CircuitState,
  WorkerRegistry,
} from '../../src/index.js';
import { createCircuitBreaker } from '../../src/resilience/circuit-breaker.js';
import { resolveCircuitBreakerConfig } from '../../src/resilience/circuit-breaker-config.js';
import { throwsCode } from '../support/fixtures.js';

let now = 0;
const clock = () => now;

function breaker(config: CircuitBreakerConfig = {}): {
  b: CircuitBreaker;
  changes: [CircuitState, CircuitState][];
} {
  now = 0;
  const b = createCircuitBreaker(resolveCircuitBreakerConfig(config), clock);
  const changes: [CircuitState, CircuitState][] = [];
  b.addObserver((from, to) => changes.push([from, to]));
  return { b, changes };
}

/** A ready worker on a registry that reads the module's fake clock. */
async function workerWith(config: CircuitBreakerConfig = {}) {
  now = 0;
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready', clock });
  const worker = await registry.register({ url: 'h:1', circuitBreaker: config });
  return { registry, worker };
}

describe('CircuitBreaker: cooldown', () => {
  it('admits nothing for ms, then admits again by itself, never leaving closed nor telling an observer', () => {
    // Arrange
    const { b, changes } = breaker();
    now = 100;

    // Act
    b.coolDown(1_000);

    // Assert
    expect(b.canExecute()).toBe(false);
    expect(b.state).toBe('closed');
    expect(b.snapshot()).toMatchObject({
      state: 'closed',
      consecutiveFailures: 0,
      cooldownMs: 1_000,
    });
    now = 1_099;
    expect(b.canExecute()).toBe(false);
    expect(b.cooldownMs).toBe(1);
    now = 1_100;
    expect(b.canExecute()).toBe(true);
    expect(b.cooldownMs).toBe(0);
    expect(changes).toEqual([]);
  });

  it('counts nothing: the failure count and the state move only with outcomes', () => {
    const { b } = breaker({ failureThreshold: 2 });
    b.recordFailure();
    b.coolDown(50);
    expect(b.snapshot().consecutiveFailures).toBe(1);
    b.recordFailure();
    expect(b.state).toBe('open');
    expect(b.cooldownMs).toBe(50);
  });

  it('a shorter cooldown does not cut the current one; a longer one extends it', () => {
    const { b } = breaker();
    b.coolDown(1_000);
    now = 500;
    b.coolDown(100); // would end at 600
    expect(b.cooldownMs).toBe(500);
    b.coolDown(2_000); // ends at 2,500
    expect(b.cooldownMs).toBe(2_000);
  });

  it('is capped at maxCooldownMs (60 s by default)', () => {
    const byDefault = breaker().b;
    byDefault.coolDown(3_600_000);
    expect(byDefault.cooldownMs).toBe(60_000);
    const capped = breaker({ maxCooldownMs: 250 }).b;
    capped.coolDown(10_000);
    expect(capped.cooldownMs).toBe(250);
  });

  it.each<[string, CircuitBreakerConfig, number]>([
    ['maxCooldownMs: 0 turns cooldowns off', { maxCooldownMs: 0 }, 1_000],
    ['a disabled breaker never cools down', { disabled: true }, 1_000],
    ['0 ms is no cooldown', {}, 0],
  ])('%s', (_label, config, ms) => {
    const { b } = breaker(config);
    b.coolDown(ms);
    expect(b.canExecute()).toBe(true);
    expect(b.cooldownMs).toBe(0);
  });

  it('reset() ends a cooldown', () => {
    const { b } = breaker();
    b.coolDown(1_000);
    b.reset();
    expect(b.canExecute()).toBe(true);
    expect(b.cooldownMs).toBe(0);
  });

  it('holds off half-open trials too, until both the cooldown and the open period allow', () => {
    const { b } = breaker({ failureThreshold: 1, openMs: 100 });
    b.recordFailure();
    b.coolDown(300);
    now = 150;
    expect(b.state).toBe('half_open');
    expect(b.canExecute()).toBe(false);
    now = 300;
    expect(b.canExecute()).toBe(true);
  });

  it.each([Number.NaN, -1, Number.POSITIVE_INFINITY, '100', undefined])(
    'coolDown(%s) is INVALID_ARGUMENT and changes nothing',
    (ms) => {
      const { b } = breaker();
      const error = throwsCode(() => b.coolDown(ms as number), 'INVALID_ARGUMENT');
      expect(error.message).toMatch(/^ms must be a finite number/);
      expect(b.canExecute()).toBe(true);
    },
  );
});

describe('Worker leases: retryAfterMs starts the cooldown', () => {
  it('a failure released with retryAfterMs makes the worker unavailable until the clock passes it', async () => {
    const { worker } = await workerWith();
    worker.acquire().release({ ok: false, status: 429, retryAfterMs: 500 });
    expect(worker.isAvailable()).toBe(false);
    expect(worker.routingState().canExecute).toBe(false);
    expect(worker.toJSON().circuitBreaker.cooldownMs).toBe(500);
    now = 500;
    expect(worker.isAvailable()).toBe(true);
    expect(worker.toJSON().circuitBreaker.cooldownMs).toBe(0);
  });

  it.each<[string, object]>([
    ['a success', { ok: true, status: 200, retryAfterMs: 500 }],
    ['a status outside failureStatuses', { ok: false, status: 404, retryAfterMs: 500 }],
    ['NaN', { ok: false, status: 503, retryAfterMs: Number.NaN }],
    ['a negative', { ok: false, status: 503, retryAfterMs: -5 }],
    ['a string', { ok: false, status: 503, retryAfterMs: '500' }],
    ['Infinity', { ok: false, status: 503, retryAfterMs: Number.POSITIVE_INFINITY }],
  ])('%s with retryAfterMs starts no cooldown', async (_label, outcome) => {
    const { worker } = await workerWith();
    worker.acquire().release(outcome as never);
    expect(worker.circuitBreaker.cooldownMs).toBe(0);
    expect(worker.isAvailable()).toBe(true);
  });

  it('a cooldown carries over when new breaker settings give the worker a new breaker', async () => {
    const { registry, worker } = await workerWith();
    worker.acquire().release({ ok: false, status: 503, retryAfterMs: 2_000 });
    const before = worker.circuitBreaker;
    now = 500;

    registry.setCircuitBreakerDefaults({ failureThreshold: 9 });

    expect(worker.circuitBreaker).not.toBe(before);
    expect(worker.circuitBreaker.cooldownMs).toBe(1_500);
    expect(worker.isAvailable()).toBe(false);
    now = 2_000;
    expect(worker.isAvailable()).toBe(true);
  });
});
