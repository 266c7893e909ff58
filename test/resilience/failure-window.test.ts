/**
 * The failure-rate window of the circuit breaker: outcomes older than the window stop counting,
 * checked against a plain list of timestamped outcomes, and through the breaker itself.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createCircuitBreaker } from '../../src/resilience/circuit-breaker.js';
import { resolveCircuitBreakerConfig } from '../../src/resilience/circuit-breaker-config.js';
import { FailureWindow } from '../../src/resilience/failure-window.js';
import { runs } from '../helpers/fc-settings.js';

describe('FailureWindow', () => {
  it('counts exactly the outcomes of the last ten buckets (model check)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 10, max: 5_000 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3_000 }), fc.boolean()), { maxLength: 200 }),
        (ms, steps) => {
          const window = new FailureWindow(ms);
          const bucketMs = ms / 10;
          const seen: { bucket: number; failed: boolean }[] = [];
          let now = 0;
          for (const [dt, failed] of steps) {
            now += dt;
            window.record(failed, now);
            const head = Math.floor(now / bucketMs);
            seen.push({ bucket: head, failed });
            const live = seen.filter((s) => s.bucket > head - 10);
            expect(window.total).toBe(live.length);
            expect(window.failures).toBe(live.filter((s) => s.failed).length);
          }
        },
      ),
      runs(300, 3_000),
    );
  });

  it('forgets everything after a gap of a whole window, and on clear()', () => {
    const window = new FailureWindow(1_000);
    for (let i = 0; i < 5; i++) window.record(true, i);
    expect([window.total, window.failures]).toEqual([5, 5]);
    window.record(false, 5_000);
    expect([window.total, window.failures]).toEqual([1, 0]);
    window.clear();
    expect([window.total, window.failures]).toEqual([0, 0]);
  });
});

describe('CircuitBreaker with a failure-rate window', () => {
  it('failures older than window.ms no longer count toward the rate', () => {
    let now = 0;
    const breaker = createCircuitBreaker(
      resolveCircuitBreakerConfig({
        failureThreshold: 100,
        window: { ms: 10_000, minRequests: 10, failureRate: 0.5 },
      }),
      () => now,
    );
    // Eight requests, half failed, then the window moves past them.
    for (let i = 0; i < 8; i++) i % 2 === 0 ? breaker.recordFailure() : breaker.recordSuccess();
    now = 11_000;
    breaker.recordSuccess();
    breaker.recordFailure();
    // Ten requests in all, five failed — but only two fall in the window.
    expect(breaker.state).toBe('closed');
    for (let i = 0; i < 8; i++) i % 2 === 1 ? breaker.recordFailure() : breaker.recordSuccess();
    expect(breaker.state).toBe('open'); // the rate is checked on a failure: ten in the window, five failed
  });
});
