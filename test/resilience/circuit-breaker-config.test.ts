import { describe, expect, it } from 'vitest';
import {
  resolveCircuitBreakerConfig,
  sameCircuitBreakerConfig,
} from '../../src/resilience/circuit-breaker-config.js';
import { throwsCode } from '../support/fixtures.js';

describe('resolveCircuitBreakerConfig', () => {
  it('fills the documented defaults and freezes the result', () => {
    const config = resolveCircuitBreakerConfig(undefined);
    expect(config).toEqual({
      disabled: false,
      failureThreshold: 5,
      successThreshold: 2,
      openMs: 30_000,
      halfOpenMaxRequests: 1,
      failureStatuses: [408, 429, 500, 502, 503, 504],
      maxCooldownMs: 60_000,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('falls back to the base for omitted fields', () => {
    const base = resolveCircuitBreakerConfig({ openMs: 5, failureStatuses: [500] });
    const config = resolveCircuitBreakerConfig({ failureThreshold: 1 }, 'x', base);
    expect(config).toMatchObject({ openMs: 5, failureThreshold: 1, failureStatuses: [500] });
  });

  it('de-duplicates and sorts failureStatuses', () => {
    const config = resolveCircuitBreakerConfig({ failureStatuses: [503, 500, 503] });
    expect(config.failureStatuses).toEqual([500, 503]);
    expect(Object.isFrozen(config.failureStatuses)).toBe(true);
  });

  it.each([
    ['cb', null],
    ['cb.failureThreshold', { failureThreshold: 0 }],
    ['cb.successThreshold', { successThreshold: 1.5 }],
    ['cb.openMs', { openMs: -1 }],
    ['cb.halfOpenMaxRequests', { halfOpenMaxRequests: 0 }],
    ['cb.disabled', { disabled: 'true' }],
    ['cb.failureStatuses', { failureStatuses: '500' }],
    ['cb.failureStatuses[0]', { failureStatuses: [600] }],
  ])('rejects a bad %s naming it', (field, input) => {
    const error = throwsCode(() => resolveCircuitBreakerConfig(input, 'cb'), 'INVALID_ARGUMENT');
    expect(error.message.startsWith(field)).toBe(true);
  });
});

describe('sameCircuitBreakerConfig', () => {
  it('is true for field-by-field equal configs and false when any field differs', () => {
    const a = resolveCircuitBreakerConfig({});
    expect(sameCircuitBreakerConfig(a, resolveCircuitBreakerConfig({}))).toBe(true);
    for (const change of [
      { disabled: true },
      { failureThreshold: 1 },
      { successThreshold: 1 },
      { openMs: 1 },
      { halfOpenMaxRequests: 2 },
      { failureStatuses: [500] },
      { failureStatuses: [408, 429, 500, 502, 503, 599] },
    ]) {
      expect(sameCircuitBreakerConfig(a, resolveCircuitBreakerConfig(change))).toBe(false);
    }
  });
});
