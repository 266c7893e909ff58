import { describe, expect, it } from 'vitest';
import { type CircuitBreaker, type CircuitBreakerConfig, WorkerRegistry } from '../../src/index.js';
import { createCircuitBreaker } from '../../src/resilience/circuit-breaker.js';
import { resolveCircuitBreakerConfig } from '../../src/resilience/circuit-breaker-config.js';

let now = 0;
const clock = () => now;

function breaker(config: CircuitBreakerConfig = {}): CircuitBreaker {
  now = 0;
  return createCircuitBreaker(resolveCircuitBreakerConfig(config), clock);
}

function fail(b: CircuitBreaker, times: number): void {
  for (let i = 0; i < times; i++) b.recordFailure();
}

/** A ready worker on a registry that reads the module's fake clock. */
async function workerWith(config: CircuitBreakerConfig) {
  now = 0;
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready', clock });
  return registry.register({ url: 'h:1', circuitBreaker: config });
}

describe('CircuitBreaker: closed', () => {
  it('starts closed with zero counts and admits requests', () => {
    const b = breaker();
    expect(b.state).toBe('closed');
    expect(b.canExecute()).toBe(true);
    expect(b.snapshot()).toEqual({
      state: 'closed',
      consecutiveFailures: 0,
      trialsInFlight: 0,
      disabled: false,
      cooldownMs: 0,
    });
  });

  it('opens after failureThreshold consecutive failures, not one sooner', () => {
    // Arrange
    const b = breaker({ failureThreshold: 3 });

    // Act
    fail(b, 2);
    const beforeThreshold = b.state;
    b.recordFailure();

    // Assert
    expect(beforeThreshold).toBe('closed');
    expect(b.state).toBe('open');
    expect(b.canExecute()).toBe(false);
  });

  it('uses a default failureThreshold of 5', () => {
    const b = breaker();
    fail(b, 4);
    expect(b.state).toBe('closed');
    b.recordFailure();
    expect(b.state).toBe('open');
  });

  it('a success resets the consecutive-failure count', () => {
    // Arrange
    const b = breaker({ failureThreshold: 3 });

    // Act
    fail(b, 2);
    b.recordSuccess();
    fail(b, 2);

    // Assert
    expect(b.state).toBe('closed');
    expect(b.snapshot().consecutiveFailures).toBe(2);
  });
});

describe('CircuitBreaker: open → half-open', () => {
  it('moves to half_open lazily once openMs have elapsed on the injected clock', () => {
    // Arrange
    const b = breaker({ failureThreshold: 1, openMs: 1000 });
    b.recordFailure();

    // Act / Assert
    now = 999;
    expect(b.state).toBe('open');
    expect(b.canExecute()).toBe(false);
    now = 1000;
    expect(b.state).toBe('half_open');
    expect(b.canExecute()).toBe(true);
  });

  it('measures openMs from the moment it opened, not from creation', () => {
    // Arrange
    const b = breaker({ failureThreshold: 1, openMs: 1000 });
    now = 5000;

    // Act
    b.recordFailure();
    now = 5999;
    const early = b.state;
    now = 6000;

    // Assert
    expect(early).toBe('open');
    expect(b.state).toBe('half_open');
  });

  it('ignores successes and failures while open', () => {
    // Arrange
    const b = breaker({ failureThreshold: 1, openMs: 1000 });
    b.recordFailure();

    // Act
    now = 500;
    b.recordSuccess();
    b.recordFailure();
    now = 1000;

    // Assert: the open period was not restarted by the failure at 500.
    expect(b.state).toBe('half_open');
  });
});

describe('CircuitBreaker: half-open', () => {
  it('admits halfOpenMaxRequests trials at a time through worker.acquire()', async () => {
    // Arrange
    const worker = await workerWith({
      failureThreshold: 1,
      openMs: 100,
      halfOpenMaxRequests: 2,
      successThreshold: 3,
    });
    worker.acquire().release({ ok: false });
    now = 100;

    // Act
    const first = worker.acquire();
    const afterOne = worker.circuitBreaker.canExecute();
    const second = worker.acquire();
    const afterTwo = worker.circuitBreaker.canExecute();
    first.release({ ok: true });
    const afterOneEnded = worker.circuitBreaker.canExecute();

    // Assert
    expect(afterOne).toBe(true);
    expect(afterTwo).toBe(false);
    expect(worker.isAvailable()).toBe(true);
    expect(afterOneEnded).toBe(true);
    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(worker.circuitBreaker.snapshot().trialsInFlight).toBe(1);
    second.release();
  });

  it('a worker with every trial slot taken is not available', async () => {
    const worker = await workerWith({ failureThreshold: 1, openMs: 100 });
    worker.acquire().release({ ok: false });
    now = 100;

    const trial = worker.acquire();

    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(worker.isAvailable()).toBe(false);
    expect(worker.routingState().canExecute).toBe(false);
    trial.release();
  });

  it('a trial lease released without an outcome frees its slot and counts nothing', async () => {
    // Arrange
    const worker = await workerWith({ failureThreshold: 1, openMs: 100, successThreshold: 1 });
    worker.acquire().release({ ok: false });
    now = 100;
    const trial = worker.acquire();

    // Act
    trial.release();

    // Assert
    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(worker.circuitBreaker.canExecute()).toBe(true);
    expect(worker.circuitBreaker.snapshot().trialsInFlight).toBe(0);
  });

  it('successThreshold successes close it', () => {
    // Arrange
    const b = breaker({ failureThreshold: 1, openMs: 10, successThreshold: 2 });
    b.recordFailure();
    now = 10;
    expect(b.state).toBe('half_open');

    // Act
    b.recordSuccess();
    const afterOne = b.state;
    b.recordSuccess();

    // Assert
    expect(afterOne).toBe('half_open');
    expect(b.state).toBe('closed');
    expect(b.snapshot()).toMatchObject({ consecutiveFailures: 0, trialsInFlight: 0 });
  });

  it('a failure in half-open reopens it and restarts the open period', () => {
    // Arrange
    const b = breaker({ failureThreshold: 3, openMs: 10, successThreshold: 2 });
    fail(b, 3);
    now = 10;
    b.recordSuccess();

    // Act
    b.recordFailure();

    // Assert
    expect(b.state).toBe('open');
    now = 19;
    expect(b.state).toBe('open');
    now = 20;
    expect(b.state).toBe('half_open');
  });

  it('after closing again it needs the full failureThreshold to reopen', () => {
    const b = breaker({ failureThreshold: 2, openMs: 10, successThreshold: 1 });
    fail(b, 2);
    now = 10;
    b.recordSuccess();
    expect(b.state).toBe('closed');

    b.recordFailure();

    expect(b.state).toBe('closed');
  });
});

describe('CircuitBreaker: disabled, forceOpen, reset', () => {
  it('a disabled breaker never opens and always admits', () => {
    // Arrange
    const b = breaker({ disabled: true, failureThreshold: 1 });

    // Act
    fail(b, 100);
    now = 1_000_000;

    // Assert
    expect(b.state).toBe('closed');
    expect(b.canExecute()).toBe(true);
    expect(b.snapshot()).toEqual({
      state: 'closed',
      consecutiveFailures: 0,
      trialsInFlight: 0,
      disabled: true,
      cooldownMs: 0,
    });
  });

  it('a per-worker { disabled: true } really disables that worker breaker', async () => {
    const worker = await workerWith({ disabled: true, failureThreshold: 1 });

    for (let i = 0; i < 10; i++) worker.acquire().release({ ok: false, status: 503 });

    expect(worker.circuitBreaker.state).toBe('closed');
    expect(worker.isAvailable()).toBe(true);
  });

  it('forceOpen on a disabled breaker leaves it closed (a disabled breaker is always closed)', () => {
    // Arrange
    const b = breaker({ disabled: true });

    // Act
    b.forceOpen();

    // Assert
    expect(b.canExecute()).toBe(true);
    expect(b.state).toBe('closed');
  });

  it('forceOpen opens a closed breaker at once, for openMs', () => {
    // Arrange
    const b = breaker({ openMs: 50 });
    now = 7;

    // Act
    b.forceOpen();

    // Assert
    expect(b.state).toBe('open');
    expect(b.canExecute()).toBe(false);
    now = 57;
    expect(b.state).toBe('half_open');
  });

  it('reset closes an open breaker and forgets every count', () => {
    // Arrange
    const b = breaker({ failureThreshold: 2 });
    fail(b, 2);

    // Act
    b.reset();
    b.recordFailure();

    // Assert
    expect(b.state).toBe('closed');
    expect(b.canExecute()).toBe(true);
    expect(b.snapshot().consecutiveFailures).toBe(1);
  });

  it('exposes its resolved config', () => {
    const b = breaker({ failureThreshold: 9 });
    expect(b.config).toEqual({
      disabled: false,
      failureThreshold: 9,
      successThreshold: 2,
      openMs: 30_000,
      halfOpenMaxRequests: 1,
      failureStatuses: [408, 429, 500, 502, 503, 504],
      maxCooldownMs: 60_000,
    });
  });
});
