import { describe, expect, it } from 'vitest';
import { resolveRetryConfig } from '../../src/resilience/retry-config.js';
import { throwsCode } from '../support/fixtures.js';

describe('resolveRetryConfig', () => {
  it('fills the documented defaults and freezes the result', () => {
    const config = resolveRetryConfig(undefined);
    expect(config).toEqual({
      maxAttempts: 3,
      initialBackoffMs: 50,
      maxBackoffMs: 5000,
      multiplier: 2,
      jitter: 0.2,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('raises the default maxBackoffMs to initialBackoffMs when that is larger', () => {
    expect(resolveRetryConfig({ initialBackoffMs: 10_000 }).maxBackoffMs).toBe(10_000);
  });

  it('falls back to the base for omitted fields', () => {
    const base = resolveRetryConfig({ maxAttempts: 7 });
    expect(resolveRetryConfig({ jitter: 0 }, 'r', base)).toMatchObject({
      maxAttempts: 7,
      jitter: 0,
    });
  });

  it.each([
    ['r.maxAttempts', { maxAttempts: 0 }],
    ['r.maxAttempts', { maxAttempts: 101 }],
    ['r.initialBackoffMs', { initialBackoffMs: -1 }],
    ['r.maxBackoffMs', { initialBackoffMs: 100, maxBackoffMs: 99 }],
    ['r.multiplier', { multiplier: 0.5 }],
    ['r.jitter', { jitter: Number.NaN }],
    ['r', []],
  ])('rejects a bad %s naming it', (field, input) => {
    const error = throwsCode(() => resolveRetryConfig(input, 'r'), 'INVALID_ARGUMENT');
    expect(error.message.startsWith(field)).toBe(true);
  });
});
