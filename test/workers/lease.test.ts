import { describe, expect, it } from 'vitest';
import { DEFAULT_FAILURE_STATUSES, type LeaseOutcome } from '../../src/index.js';
import { recordedRegistry } from '../support/fixtures.js';

/** A worker whose breaker opens on the first failure, so one outcome is visible in its state. */
async function oneStrikeWorker() {
  const { registry, clock } = await recordedRegistry();
  const worker = await registry.register({
    url: 'h:1',
    circuitBreaker: { failureThreshold: 1, openMs: 1000 },
  });
  return { registry, worker, clock };
}

describe('WorkerLease.release', () => {
  it('releases exactly once: the second call returns false and leaves load unchanged', async () => {
    // Arrange
    const { worker } = await oneStrikeWorker();
    const lease = worker.acquire();
    const other = worker.acquire();
    expect(worker.load).toBe(2);

    // Act
    const first = lease.release();
    const second = lease.release();
    const third = lease.release({ ok: false });

    // Assert
    expect(first).toBe(true);
    expect(second).toBe(false);
    expect(third).toBe(false);
    expect(lease.released).toBe(true);
    expect(other.released).toBe(false);
    expect(worker.load).toBe(1);
    expect(worker.circuitBreaker.state).toBe('closed');
  });

  it('a lease is not released until release is called', async () => {
    const { worker } = await oneStrikeWorker();
    const lease = worker.acquire();
    expect(lease.released).toBe(false);
    expect(lease.worker).toBe(worker);
  });

  it.each<[string, LeaseOutcome | undefined, 'closed' | 'open']>([
    ['no outcome', undefined, 'closed'],
    ['ok: true without a status', { ok: true }, 'closed'],
    ['ok: false without a status (network error)', { ok: false }, 'open'],
    ['status 200', { ok: true, status: 200 }, 'closed'],
    ['status 404 (not a failure status)', { ok: false, status: 404 }, 'closed'],
    ['status 400 with ok: false', { ok: false, status: 400 }, 'closed'],
    ['status 500', { ok: false, status: 500 }, 'open'],
    ['status 503 even with ok: true', { ok: true, status: 503 }, 'open'],
    ['status 429', { ok: false, status: 429 }, 'open'],
    ['status 408', { ok: false, status: 408 }, 'open'],
    ['a NaN status falls back to ok: false', { ok: false, status: Number.NaN }, 'open'],
    ['a NaN status falls back to ok: true', { ok: true, status: Number.NaN }, 'closed'],
  ])('feeds the breaker: %s leaves it %s', async (_label, outcome, state) => {
    // Arrange
    const { worker } = await oneStrikeWorker();
    const lease = worker.acquire();

    // Act
    lease.release(outcome);

    // Assert
    expect(worker.circuitBreaker.state).toBe(state);
    expect(worker.load).toBe(0);
  });

  it('uses the worker breaker failureStatuses, not the defaults, when configured', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({
      url: 'h:1',
      circuitBreaker: { failureThreshold: 1, failureStatuses: [404] },
    });

    // Act
    worker.acquire().release({ ok: false, status: 500 });
    const after500 = worker.circuitBreaker.state;
    worker.acquire().release({ ok: false, status: 404 });

    // Assert
    expect(after500).toBe('closed');
    expect(worker.circuitBreaker.state).toBe('open');
  });

  it('a success resets the consecutive-failure count of a closed breaker', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', circuitBreaker: { failureThreshold: 2 } });

    // Act
    worker.acquire().release({ ok: false });
    worker.acquire().release({ ok: true, status: 200 });
    worker.acquire().release({ ok: false });

    // Assert
    expect(worker.circuitBreaker.state).toBe('closed');
    expect(worker.circuitBreaker.snapshot().consecutiveFailures).toBe(1);
  });

  it('a lease taken before a replace releases into the current shared runtime', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const worker = await registry.register({ url: 'h:1', circuitBreaker: { failureThreshold: 1 } });
    const lease = worker.acquire();
    const next = await registry.replace(worker.id, {
      url: 'h:1',
      circuitBreaker: { failureThreshold: 1 },
    });

    // Act
    const released = lease.release({ ok: false });

    // Assert
    expect(released).toBe(true);
    expect(next.load).toBe(0);
    expect(next.circuitBreaker.state).toBe('open');
  });

  it('the default failure statuses are 408, 429, 500, 502, 503, 504', () => {
    expect(DEFAULT_FAILURE_STATUSES).toEqual([408, 429, 500, 502, 503, 504]);
    expect(Object.isFrozen(DEFAULT_FAILURE_STATUSES)).toBe(true);
  });
});

describe('WorkerLease and half-open trials', () => {
  async function halfOpenWorker() {
    const { registry, clock } = await recordedRegistry();
    const worker = await registry.register({
      url: 'h:2',
      circuitBreaker: { failureThreshold: 1, successThreshold: 1, openMs: 1000 },
    });
    return { worker, clock };
  }

  it('a success from a request sent while the breaker was closed does not close it once half-open', async () => {
    // Arrange: a lease taken while closed, then the breaker opens and turns half-open.
    const { worker, clock } = await halfOpenWorker();
    const early = worker.acquire();
    worker.circuitBreaker.recordFailure();
    clock.now += 1000;
    expect(worker.circuitBreaker.state).toBe('half_open');

    // Act
    early.release({ ok: true, status: 200 });

    // Assert: still half-open, and the trial slot is still free for a real trial.
    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(worker.circuitBreaker.canExecute()).toBe(true);
  });

  it('a success from a trial lease of this half-open period closes the breaker', async () => {
    const { worker, clock } = await halfOpenWorker();
    worker.circuitBreaker.recordFailure();
    clock.now += 1000;
    const trial = worker.acquire();
    expect(worker.circuitBreaker.canExecute()).toBe(false); // the single trial slot is taken

    trial.release({ ok: true, status: 200 });

    expect(worker.circuitBreaker.state).toBe('closed');
  });

  it('a failure from a request sent while closed still reopens a half-open breaker', async () => {
    const { worker, clock } = await halfOpenWorker();
    const early = worker.acquire();
    worker.circuitBreaker.recordFailure();
    clock.now += 1000;

    early.release({ ok: false });

    expect(worker.circuitBreaker.state).toBe('open');
  });

  it('a trial lease released without an outcome frees its slot and counts nothing', async () => {
    const { worker, clock } = await halfOpenWorker();
    worker.circuitBreaker.recordFailure();
    clock.now += 1000;
    const trial = worker.acquire();

    trial.release();

    expect(worker.circuitBreaker.state).toBe('half_open');
    expect(worker.circuitBreaker.canExecute()).toBe(true);
  });
});
