import { describe, expect, it } from 'vitest';
import {
  ERROR_MESSAGES,
  FleetRouteError,
  type FleetRouteErrorCode,
  type NoWorkerReason,
  Router,
  WorkerRegistry,
} from '../../src/index.js';
import { recordedRegistry } from '../support/fixtures.js';

const ALL_CODES: readonly FleetRouteErrorCode[] = [
  'INVALID_URL',
  'INVALID_ARGUMENT',
  'DUPLICATE_URL',
  'NOT_FOUND',
  'URL_CHANGED',
  'STALE_REVISION',
  'CLOSED',
  'NO_WORKER',
  'TRANSPORT_FAILED',
  'MISSING_DEPENDENCY',
  'SATURATED',
];

/** Codes thrown outside the registry, covered where they are thrown. */
const ELSEWHERE: readonly FleetRouteErrorCode[] = [
  'NO_WORKER', // Router.execute: NO_WORKER_TRIGGERS below, and test/router/execute.test.ts
  'TRANSPORT_FAILED', // fleetroute/http models(): test/transport/http
  'MISSING_DEPENDENCY', // fleetroute/kv-events without @msgpack/msgpack: scripts/check-consumers.mjs
  'SATURATED', // Router admission: test/router/admission.test.ts
];

interface Trigger {
  readonly code: FleetRouteErrorCode;
  readonly message: RegExp;
  readonly act: (registry: WorkerRegistry, id: string) => Promise<unknown>;
}

/** One row per code that has a throw site, triggered through the real public API. */
const TRIGGERS: readonly Trigger[] = [
  {
    code: 'INVALID_URL',
    message: /invalid worker URL "ftp:\/\/host:21": unsupported scheme 'ftp'/,
    act: (registry) => registry.register({ url: 'ftp://host:21' }),
  },
  {
    code: 'INVALID_ARGUMENT',
    message: /^spec\.dpSize must be an integer between .* got NaN$/,
    act: (registry) => registry.register({ url: 'http://other:8000', dpSize: Number.NaN }),
  },
  {
    code: 'DUPLICATE_URL',
    message: /a live worker already has URL http:\/\/a:8000/,
    act: (registry) => registry.register({ url: 'A:8000' }),
  },
  {
    code: 'NOT_FOUND',
    message: /no live worker with id "worker-999"/,
    act: (registry) => registry.transitionStatus('worker-999', 'ready'),
  },
  {
    code: 'URL_CHANGED',
    message: /worker worker-1 has URL http:\/\/a:8000; the replacement has http:\/\/b:8000/,
    act: (registry, id) => registry.replace(id, { url: 'http://b:8000' }),
  },
  {
    code: 'STALE_REVISION',
    message: /worker worker-1 is at revision 0, expected 3/,
    act: (registry, id) => registry.replace(id, { url: 'http://a:8000' }, { expectedRevision: 3 }),
  },
  {
    code: 'CLOSED',
    message: /^the registry is closed$/,
    act: (registry) => {
      registry.close();
      return registry.register({ url: 'http://c:8000' });
    },
  },
];

const ALL_REASONS: readonly NoWorkerReason[] = ['unknown_model', 'unavailable'];

interface ReasonTrigger {
  readonly reason: NoWorkerReason;
  readonly message: RegExp;
  /** Registers the fleet the request for model `m` finds. */
  readonly fleet: (registry: WorkerRegistry) => Promise<unknown>;
}

/** One row per `NO_WORKER` reason, thrown by the real `Router.execute` for model `m`. */
const NO_WORKER_TRIGGERS: readonly ReasonTrigger[] = [
  {
    reason: 'unknown_model',
    message: /^no worker is available for model "m": no registered worker serves it$/,
    fleet: (registry) => registry.register({ url: 'http://a:8000', models: ['other'] }),
  },
  {
    reason: 'unavailable',
    message: /^no worker is available for model "m": none of its workers is available now$/,
    fleet: (registry) => registry.register({ url: 'http://a:8000', models: ['m'] }), // pending
  },
];

describe('FleetRouteError', () => {
  it('has a registry throw site for every registry code, and this table covers each one', () => {
    // Arrange
    const covered = new Set(TRIGGERS.map((t) => t.code));

    // Act
    const missing = ALL_CODES.filter((code) => !ELSEWHERE.includes(code) && !covered.has(code));

    // Assert
    expect(missing).toEqual([]);
    expect(Object.keys(ERROR_MESSAGES).sort()).toEqual([...ALL_CODES].sort());
  });

  it.each(TRIGGERS)(
    'the real API throws $code with its name, code, a specific message and instanceof',
    async ({ code, message, act }) => {
      // Arrange
      const { registry, events } = await recordedRegistry();
      const worker = await registry.register({ url: 'http://a:8000' });
      const before = registry.snapshot();
      events.length = 0;

      // Act
      const error = await act(registry, worker.id).then(
        () => undefined,
        (e: unknown) => e,
      );

      // Assert
      expect(error).toBeInstanceOf(FleetRouteError);
      expect(error).toBeInstanceOf(Error);
      const typed = error as FleetRouteError;
      expect(typed.name).toBe('FleetRouteError');
      expect(typed.code).toBe(code);
      expect(typed.message).toMatch(message);
      expect(FleetRouteError.is(typed)).toBe(true);
      expect(FleetRouteError.is(typed, code)).toBe(true);
      expect(FleetRouteError.is(typed, code === 'CLOSED' ? 'NOT_FOUND' : 'CLOSED')).toBe(false);
      expect(events).toEqual([]);
      expect(registry.snapshot()).toEqual(before);
    },
  );

  it('NO_WORKER_TRIGGERS covers every NO_WORKER reason', () => {
    expect(NO_WORKER_TRIGGERS.map((t) => t.reason).sort()).toEqual([...ALL_REASONS].sort());
  });

  it.each(NO_WORKER_TRIGGERS)(
    'Router.execute throws NO_WORKER with reason $reason and a message that says it',
    async ({ reason, message, fleet }) => {
      // Arrange
      const registry = await WorkerRegistry.create();
      await fleet(registry);
      const router = new Router({
        registry,
        transport: { probe: async () => true },
        health: false,
      });

      // Act
      const error = await router
        .execute({ model: 'm' }, async () => ({ status: 200 }))
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      await router.close();
      registry.close();

      // Assert
      expect(FleetRouteError.is(error, 'NO_WORKER')).toBe(true);
      const typed = error as FleetRouteError;
      expect(typed.reason).toBe(reason);
      expect(typed.message).toMatch(message);
    },
  );

  it.each(ALL_CODES)(
    'a %s error keeps the reason it was built with only for NO_WORKER and SATURATED, and a retry time only for SATURATED',
    (code) => {
      // Act
      const withReason = new FleetRouteError(code, undefined, {
        reason: 'unavailable',
        retryAfterMs: 5,
      });
      const without = new FleetRouteError(code);

      // Assert
      const keeps = code === 'NO_WORKER' || code === 'SATURATED';
      expect(withReason.reason).toBe(keeps ? 'unavailable' : undefined);
      expect(withReason.retryAfterMs).toBe(code === 'SATURATED' ? 5 : undefined);
      expect(without.reason).toBeUndefined();
      expect(without.retryAfterMs).toBeUndefined();
      expect('cause' in withReason).toBe(false);
    },
  );

  it.each(ALL_CODES)('a %s error built without a message carries its default message', (code) => {
    // Act
    const error = new FleetRouteError(code);

    // Assert
    expect(error.message).toBe(ERROR_MESSAGES[code]);
    expect(error.code).toBe(code);
    expect(error.name).toBe('FleetRouteError');
    expect(error.message.length).toBeGreaterThan(0);
  });

  it('NO_WORKER and TRANSPORT_FAILED read "no worker is available" and "a call to a worker failed"', () => {
    expect(new FleetRouteError('NO_WORKER').message).toBe('no worker is available');
    expect(new FleetRouteError('TRANSPORT_FAILED').message).toBe('a call to a worker failed');
  });

  it('keeps the cause it was given', () => {
    // Arrange
    const cause = new Error('socket hang up');

    // Act
    const error = new FleetRouteError('INVALID_ARGUMENT', 'wrapped', { cause });

    // Assert
    expect(error.cause).toBe(cause);
    expect(error.message).toBe('wrapped');
  });

  it('the default messages are frozen', () => {
    expect(Object.isFrozen(ERROR_MESSAGES)).toBe(true);
  });

  it('an object from a duplicated copy of the class (same Symbol.for brand) is instanceof FleetRouteError', () => {
    // Arrange: what a second install of the package would define.
    class DuplicatedFleetRouteError extends Error {
      readonly code = 'NOT_FOUND' as const;
    }
    Object.defineProperty(DuplicatedFleetRouteError.prototype, Symbol.for('fleetroute.error'), {
      value: true,
    });

    // Act
    const foreign = new DuplicatedFleetRouteError('from the other copy');

    // Assert
    expect(foreign instanceof FleetRouteError).toBe(true);
    expect(FleetRouteError.is(foreign, 'NOT_FOUND')).toBe(true);
    expect(FleetRouteError.is(foreign, 'CLOSED')).toBe(false);
  });

  it.each([
    ['a plain Error', new Error('x')],
    ['an object with a code field', { code: 'NOT_FOUND', name: 'FleetRouteError' }],
    ['null', null],
    ['undefined', undefined],
    ['a string', 'FleetRouteError'],
    ['a number', 42],
    ['an object with a different symbol brand', { [Symbol('fleetroute.error')]: true }],
  ])('%s is not instanceof FleetRouteError', (_label, value) => {
    expect(value instanceof FleetRouteError).toBe(false);
    expect(FleetRouteError.is(value)).toBe(false);
  });
});
