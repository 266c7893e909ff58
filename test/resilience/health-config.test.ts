import { describe, expect, it } from 'vitest';
import { resolveHealthConfig } from '../../src/resilience/health-config.js';
import { throwsCode } from '../support/fixtures.js';

describe('resolveHealthConfig', () => {
  it('fills the documented defaults and freezes the result', () => {
    const config = resolveHealthConfig(undefined);
    expect(config).toEqual({
      intervalMs: 30_000,
      startupIntervalMs: 500,
      timeoutMs: 5_000,
      successThreshold: 2,
      failureThreshold: 3,
      removeFailed: false,
    });
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('falls back to the base for omitted fields', () => {
    const base = resolveHealthConfig({ timeoutMs: 100 });
    expect(resolveHealthConfig({ removeFailed: true }, 'h', base)).toMatchObject({
      timeoutMs: 100,
      removeFailed: true,
    });
  });

  it.each([
    ['h.intervalMs', { intervalMs: 0 }],
    ['h.startupIntervalMs', { startupIntervalMs: 0 }],
    ['h.timeoutMs', { timeoutMs: 1.5 }],
    ['h.successThreshold', { successThreshold: 1001 }],
    ['h.failureThreshold', { failureThreshold: -1 }],
    ['h.removeFailed', { removeFailed: 1 }],
    ['h', 'often'],
  ])('rejects a bad %s naming it', (field, input) => {
    const error = throwsCode(() => resolveHealthConfig(input, 'h'), 'INVALID_ARGUMENT');
    expect(error.message.startsWith(field)).toBe(true);
  });
});
