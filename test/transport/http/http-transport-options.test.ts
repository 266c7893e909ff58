import { describe, expect, it } from 'vitest';
import { resolveHttpTransportOptions } from '../../../src/transport/http/http-transport-options.js';
import { type HttpTransportOptions, httpTransport } from '../../../src/transport/http/index.js';
import { emitProcessWarning } from '../../../src/transport/http/transport-warning.js';
import { throwsCode } from '../../support/fixtures.js';

describe('httpTransport options', () => {
  it('fills in every default', () => {
    const resolved = resolveHttpTransportOptions({});

    expect(resolved).toMatchObject({
      fetch: globalThis.fetch,
      apiKey: undefined,
      timeoutMs: 5_000,
      maxBodyBytes: 4_194_304,
      healthPath: '/health',
      metricsPath: '/metrics',
      modelsPath: '/v1/models',
      maxTrackedWorkers: 4_096,
      onWarning: emitProcessWarning,
    });
    expect(Object.isFrozen(resolved)).toBe(true);
  });

  it('reads time from a clock that follows the epoch and never steps back', () => {
    const { clock } = resolveHttpTransportOptions(undefined);

    const a = clock();
    const b = clock();

    expect(Math.abs(a - Date.now())).toBeLessThan(60_000);
    expect(b).toBeGreaterThanOrEqual(a);
  });

  it('keeps what it is given', () => {
    const fetch = (async () => new Response('')) as HttpTransportOptions['fetch'];
    const clock = () => 7;
    const onWarning = () => {};

    const resolved = resolveHttpTransportOptions({
      fetch,
      apiKey: 'k',
      timeoutMs: 1,
      maxBodyBytes: 10,
      healthPath: '/ready?verbose=1',
      metricsPath: '/prom',
      modelsPath: '/openai/v1/models',
      clock,
      maxTrackedWorkers: 0,
      onWarning,
    });

    expect(resolved).toEqual({
      fetch,
      apiKey: 'k',
      timeoutMs: 1,
      maxBodyBytes: 10,
      healthPath: '/ready?verbose=1',
      metricsPath: '/prom',
      modelsPath: '/openai/v1/models',
      clock,
      maxTrackedWorkers: 0,
      onWarning,
    });
  });

  it.each<[string, unknown, string]>([
    ['options that are not an object', 'fast', 'httpTransport must be an object'],
    ['an unknown option', { timeout: 100 }, 'httpTransport.timeout is not an option'],
    ['fetch that is not a function', { fetch: 'undici' }, 'httpTransport.fetch must be'],
    ['a zero timeout', { timeoutMs: 0 }, 'httpTransport.timeoutMs must be'],
    ['a fractional timeout', { timeoutMs: 1.5 }, 'httpTransport.timeoutMs must be'],
    ['a timeout beyond what timers allow', { timeoutMs: 2 ** 31 }, 'httpTransport.timeoutMs'],
    ['a string timeout', { timeoutMs: '100' }, 'httpTransport.timeoutMs must be'],
    ['a zero body limit', { maxBodyBytes: 0 }, 'httpTransport.maxBodyBytes must be'],
    ['a path without a slash', { healthPath: 'health' }, 'httpTransport.healthPath must be'],
    ['a path with a space', { metricsPath: '/my metrics' }, 'httpTransport.metricsPath must be'],
    ['a path with a fragment', { modelsPath: '/v1/models#x' }, 'httpTransport.modelsPath must be'],
    ['an empty path', { modelsPath: '' }, 'httpTransport.modelsPath must be'],
    ['a clock that is not a function', { clock: 0 }, 'httpTransport.clock must be'],
    ['a negative tracking bound', { maxTrackedWorkers: -1 }, 'httpTransport.maxTrackedWorkers'],
    ['an API key that is a number', { apiKey: 42 }, 'httpTransport.apiKey must be'],
    ['onWarning that is not a function', { onWarning: 'log' }, 'httpTransport.onWarning must be'],
  ])('rejects %s with INVALID_ARGUMENT naming the field', (_label, options, message) => {
    const error = throwsCode(
      () => httpTransport(options as HttpTransportOptions),
      'INVALID_ARGUMENT',
    );

    expect(error.message).toContain(message);
  });

  it('accepts undefined fields as defaults', () => {
    expect(() => httpTransport({ apiKey: undefined, timeoutMs: undefined } as never)).not.toThrow();
  });
});
