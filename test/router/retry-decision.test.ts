/**
 * `defaultShouldRetry`: the decision a router makes between attempts when none is given — at
 * once after a Retry-After (the worker that sent it cools down instead), else exponential backoff
 * with jitter, and a stop at maxAttempts.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  backoffDelay,
  defaultShouldRetry,
  type RetryOutcome,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import { resolveRetryConfig } from '../../src/resilience/retry-config.js';
import { isDelay } from '../../src/router/retry-decision.js';
import { throwsCode } from '../support/fixtures.js';

let worker: Worker;
beforeAll(async () => {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  worker = await registry.register({ url: 'http://w0:8000', models: ['m'] });
});

const error = (): RetryOutcome => ({
  kind: 'error',
  error: new Error('reset'),
  worker,
  request: {},
});
const status = (code: number, retryAfterMs?: number): RetryOutcome => ({
  kind: 'status',
  status: code,
  response: { status: code },
  retryAfterMs,
  worker,
  request: {},
});

describe('defaultShouldRetry', () => {
  const config = {
    maxAttempts: 4,
    initialBackoffMs: 100,
    multiplier: 2,
    maxBackoffMs: 1_000,
    jitter: 0.2,
  };

  it.each<[string, () => RetryOutcome, number, number, number | false]>([
    ['an error after attempt 1 waits initialBackoffMs', error, 1, 0.5, 100],
    ['an error after attempt 2 waits twice that', error, 2, 0.5, 200],
    ['an error after attempt 3 waits four times that', error, 3, 0.5, 400],
    ['the lowest jitter takes 20 % off', error, 1, 0, 80],
    ['the highest jitter adds 20 %', error, 1, 0.999_999, 120],
    ['a status without Retry-After backs off the same way', () => status(503), 2, 0.5, 200],
    ['a Retry-After retries at once: that worker cools down', () => status(429, 500), 1, 0, 0],
    ['a long Retry-After retries at once too', () => status(503, 60_000), 2, 0.5, 0],
    ['Retry-After: 0 retries at once', () => status(503, 0), 3, 0.5, 0],
    ['the last of maxAttempts stops', error, 4, 0.5, false],
    ['a status after the last attempt stops too', () => status(503, 10), 4, 0.5, false],
    ['an attempt past maxAttempts stops', error, 9, 0.5, false],
  ])('%s', (_label, outcome, attempt, random, expected) => {
    const decide = defaultShouldRetry(config, () => random);
    const delay = decide(outcome(), attempt);
    if (expected === false) expect(delay).toBe(false);
    else expect(delay).toBeCloseTo(expected, 3);
  });

  it('agrees with backoffDelay on every attempt but the last, and retries at once after a Retry-After', () => {
    const resolved = resolveRetryConfig({ ...config, maxAttempts: 30 });
    const decide = defaultShouldRetry(resolved, () => 0.3);
    for (let attempt = 1; attempt < 30; attempt++) {
      expect(decide(error(), attempt)).toBe(backoffDelay(resolved, attempt, 0.3));
      expect(decide(status(502), attempt)).toBe(backoffDelay(resolved, attempt, 0.3));
      expect(decide(status(502, 250), attempt)).toBe(0);
    }
    expect(decide(error(), 30)).toBe(false);
    expect(decide(status(502, 250), 30)).toBe(false);
  });

  it('backoffDelay still caps a Retry-After at maxBackoffMs, for a decision that waits it', () => {
    const resolved = resolveRetryConfig(config);
    expect(backoffDelay(resolved, 1, 0, 500)).toBe(500);
    expect(backoffDelay(resolved, 1, 0.5, 60_000)).toBe(1_000);
  });

  it('draws one random number per retry and none for a stop', () => {
    let draws = 0;
    const decide = defaultShouldRetry({ maxAttempts: 2 }, () => {
      draws++;
      return 0.5;
    });
    decide(error(), 1);
    decide(error(), 2);
    expect(draws).toBe(1);
  });

  it('fills the documented defaults: 3 attempts, 50 ms × 2ⁿ⁻¹, ±20 %, 5 s cap', () => {
    const decide = defaultShouldRetry(undefined, () => 0.5);
    expect([1, 2, 3].map((n) => decide(error(), n))).toEqual([50, 100, false]);
    expect(decide(status(503), 1)).toBe(50);
    expect(decide(status(503, 3_600_000), 1)).toBe(0);
  });

  it.each<[string, unknown, unknown]>([
    ['config.maxAttempts', { maxAttempts: 0 }, undefined],
    ['config.jitter', { jitter: 2 }, undefined],
    ['config', 'fast', undefined],
    ['random', {}, 0.5],
  ])('rejects a bad %s with INVALID_ARGUMENT naming it', (field, config, random) => {
    const error = throwsCode(
      () => defaultShouldRetry(config as object, random as () => number),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(`${field} must be`)).toBe(true);
  });
});

describe('isDelay', () => {
  it.each<[unknown, boolean]>([
    [0, true],
    [12.5, true],
    [2_147_483_647, true],
    [2_147_483_648, false],
    [-1, false],
    [Number.NaN, false],
    [Number.POSITIVE_INFINITY, false],
    ['100', false],
    [true, false],
    [null, false],
    [undefined, false],
    [{}, false],
  ])('%s → %s', (value, expected) => {
    expect(isDelay(value)).toBe(expected);
  });
});
