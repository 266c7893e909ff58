/**
 * Bad input on every public registry method : each call either returns the documented
 * miss value or throws a `FleetRouteError` with the right code, and the registry is unchanged:
 * same snapshot, same counters, no event.
 */
import { describe, expect, it } from 'vitest';
import type { FleetRouteErrorCode, WorkerRegistry } from '../../src/index.js';
import {
  expectConsistent,
  expectFleetError,
  hugeString,
  recordedRegistry,
} from '../support/fixtures.js';

const HUGE = hugeString(10);
const LONE = 'http://h:1\uD800';

interface Ids {
  readonly a: string;
  readonly wild: string;
}

type Expect = FleetRouteErrorCode | { readonly returns: unknown };

interface Row {
  readonly call: string;
  readonly act: (registry: WorkerRegistry, ids: Ids) => unknown;
  readonly expected: Expect;
}

const undefinedResult = { returns: undefined };
const row = (call: string, act: Row['act'], expected: Expect): Row => ({ call, act, expected });
const bad = <T>(value: unknown): T => value as T;

const ROWS: readonly Row[] = [
  // register
  row('register(42)', (r) => r.register(bad(42)), 'INVALID_ARGUMENT'),
  row('register(null)', (r) => r.register(bad(null)), 'INVALID_ARGUMENT'),
  row('register([])', (r) => r.register(bad([])), 'INVALID_ARGUMENT'),
  row('register("h:9")', (r) => r.register(bad('h:9')), 'INVALID_ARGUMENT'),
  row('register({ url: 42 })', (r) => r.register(bad({ url: 42 })), 'INVALID_URL'),
  row('register({ url: "" })', (r) => r.register({ url: '' }), 'INVALID_URL'),
  row('register({ url: 10 MB })', (r) => r.register({ url: HUGE }), 'INVALID_URL'),
  row('register({ url: lone surrogate })', (r) => r.register({ url: LONE }), 'INVALID_URL'),
  row('register({ url: [] })', (r) => r.register(bad({ url: [] })), 'INVALID_URL'),
  row(
    'register({ models: lone surrogate })',
    (r) => r.register({ url: 'h:9', models: ['m\uDC00'] }),
    'INVALID_ARGUMENT',
  ),
  row(
    'register({ models: [10 MB id] })',
    (r) => r.register({ url: 'h:9', models: [HUGE] }),
    'INVALID_ARGUMENT',
  ),
  row(
    'register({ dpSize: NaN })',
    (r) => r.register({ url: 'h:9', dpSize: Number.NaN }),
    'INVALID_ARGUMENT',
  ),
  row(
    'register({ labels: { k: 1 } })',
    (r) => r.register(bad({ url: 'h:9', labels: { k: 1 } })),
    'INVALID_ARGUMENT',
  ),
  row('register(a duplicate URL)', (r) => r.register({ url: 'H:1' }), 'DUPLICATE_URL'),
  // registerOrReplace
  row('registerOrReplace(null)', (r) => r.registerOrReplace(bad(null)), 'INVALID_ARGUMENT'),
  row(
    'registerOrReplace({ url: NaN })',
    (r) => r.registerOrReplace(bad({ url: Number.NaN })),
    'INVALID_URL',
  ),
  row(
    "registerOrReplace({ models: ['*'] })",
    (r) => r.registerOrReplace({ url: 'h:1', models: ['*'] }),
    'INVALID_ARGUMENT',
  ),
  // replace
  row('replace(42, spec)', (r) => r.replace(bad(42), { url: 'h:1' }), 'NOT_FOUND'),
  row('replace("", spec)', (r) => r.replace('', { url: 'h:1' }), 'NOT_FOUND'),
  row('replace(unknown id, spec)', (r) => r.replace('worker-404', { url: 'h:1' }), 'NOT_FOUND'),
  row('replace(10 MB id, spec)', (r) => r.replace(HUGE, { url: 'h:1' }), 'NOT_FOUND'),
  row('replace(id, null)', (r, { a }) => r.replace(a, bad(null)), 'INVALID_ARGUMENT'),
  row('replace(id, [])', (r, { a }) => r.replace(a, bad([])), 'INVALID_ARGUMENT'),
  row('replace(id, { url: 10 MB })', (r, { a }) => r.replace(a, { url: HUGE }), 'INVALID_URL'),
  row('replace(id, another URL)', (r, { a }) => r.replace(a, { url: 'h:2' }), 'URL_CHANGED'),
  row(
    'replace(id, spec, { expectedRevision: NaN })',
    (r, { a }) => r.replace(a, { url: 'h:1' }, { expectedRevision: Number.NaN }),
    'INVALID_ARGUMENT',
  ),
  row(
    'replace(id, spec, { expectedRevision: -1 })',
    (r, { a }) => r.replace(a, { url: 'h:1' }, { expectedRevision: -1 }),
    'INVALID_ARGUMENT',
  ),
  row(
    "replace(id, spec, { expectedRevision: '0' })",
    (r, { a }) => r.replace(a, { url: 'h:1' }, bad({ expectedRevision: '0' })),
    'INVALID_ARGUMENT',
  ),
  row(
    'replace(id, spec, null)',
    (r, { a }) => r.replace(a, { url: 'h:1' }, bad(null)),
    'INVALID_ARGUMENT',
  ),
  row(
    'replace(id, spec, { expectedRevision: 7 })',
    (r, { a }) => r.replace(a, { url: 'h:1' }, { expectedRevision: 7 }),
    'STALE_REVISION',
  ),
  // transitionStatus
  row(
    'transitionStatus(id, "bogus")',
    (r, { a }) => r.transitionStatus(a, bad('bogus')),
    'INVALID_ARGUMENT',
  ),
  row(
    'transitionStatus(id, undefined)',
    (r, { a }) => r.transitionStatus(a, bad(undefined)),
    'INVALID_ARGUMENT',
  ),
  row(
    'transitionStatus(id, null)',
    (r, { a }) => r.transitionStatus(a, bad(null)),
    'INVALID_ARGUMENT',
  ),
  row(
    'transitionStatus(id, 10 MB)',
    (r, { a }) => r.transitionStatus(a, bad(HUGE)),
    'INVALID_ARGUMENT',
  ),
  row('transitionStatus(10 MB id, failed)', (r) => r.transitionStatus(HUGE, 'failed'), 'NOT_FOUND'),
  row('transitionStatus(42, ready)', (r) => r.transitionStatus(bad(42), 'failed'), 'NOT_FOUND'),
  row('transitionStatus("", ready)', (r) => r.transitionStatus('', 'failed'), 'NOT_FOUND'),
  row(
    'transitionStatus(lone surrogate id, ready)',
    (r) => r.transitionStatus('w\uD800', 'failed'),
    'NOT_FOUND',
  ),
  row(
    'transitionStatus(id, failed, { expectedRevision: NaN })',
    (r, { a }) => r.transitionStatus(a, 'failed', { expectedRevision: Number.NaN }),
    'INVALID_ARGUMENT',
  ),
  row(
    'transitionStatus(id, failed, { expectedRevision: 1.5 })',
    (r, { a }) => r.transitionStatus(a, 'failed', { expectedRevision: 1.5 }),
    'INVALID_ARGUMENT',
  ),
  row(
    'transitionStatus(id, failed, { expectedRevision: 3 })',
    (r, { a }) => r.transitionStatus(a, 'failed', { expectedRevision: 3 }),
    'STALE_REVISION',
  ),
  row(
    'transitionStatus(id, same status)',
    (r, { a }) => r.transitionStatus(a, 'ready'),
    undefinedResult,
  ),
  // remove
  row('remove(42)', (r) => r.remove(bad(42)), undefinedResult),
  row('remove(null)', (r) => r.remove(bad(null)), undefinedResult),
  row('remove("")', (r) => r.remove(''), undefinedResult),
  row('remove(unknown id)', (r) => r.remove('worker-404'), undefinedResult),
  row('remove(10 MB)', (r) => r.remove(HUGE), undefinedResult),
  row('remove(lone surrogate)', (r) => r.remove('\uDC00'), undefinedResult),
  row('remove(a URL instead of an id)', (r) => r.remove('http://h:1'), undefinedResult),
  // removeByUrl
  row('removeByUrl(42)', (r) => r.removeByUrl(bad(42)), 'INVALID_URL'),
  row('removeByUrl(null)', (r) => r.removeByUrl(bad(null)), 'INVALID_URL'),
  row('removeByUrl([])', (r) => r.removeByUrl(bad([])), 'INVALID_URL'),
  row('removeByUrl("")', (r) => r.removeByUrl(''), 'INVALID_URL'),
  row('removeByUrl(10 MB)', (r) => r.removeByUrl(HUGE), 'INVALID_URL'),
  row('removeByUrl(lone surrogate)', (r) => r.removeByUrl(LONE), 'INVALID_URL'),
  row('removeByUrl(an id instead of a URL)', (r, { a }) => r.removeByUrl(a), 'INVALID_URL'),
  row('removeByUrl(an unknown URL)', (r) => r.removeByUrl('h:404'), undefinedResult),
  // reserveIdForUrl
  row('reserveIdForUrl(42)', (r) => r.reserveIdForUrl(bad(42)), 'INVALID_URL'),
  row('reserveIdForUrl(null)', (r) => r.reserveIdForUrl(bad(null)), 'INVALID_URL'),
  row('reserveIdForUrl("")', (r) => r.reserveIdForUrl(''), 'INVALID_URL'),
  row('reserveIdForUrl(10 MB)', (r) => r.reserveIdForUrl(HUGE), 'INVALID_URL'),
  row('reserveIdForUrl(lone surrogate)', (r) => r.reserveIdForUrl(LONE), 'INVALID_URL'),
  row('reserveIdForUrl(ftp://)', (r) => r.reserveIdForUrl('ftp://h:21'), 'INVALID_URL'),
  // setModelRetryConfig
  row('setModelRetryConfig(42, {})', (r) => r.setModelRetryConfig(bad(42), {}), 'INVALID_ARGUMENT'),
  row('setModelRetryConfig("", {})', (r) => r.setModelRetryConfig('', {}), 'INVALID_ARGUMENT'),
  row('setModelRetryConfig(10 MB, {})', (r) => r.setModelRetryConfig(HUGE, {}), 'INVALID_ARGUMENT'),
  row(
    'setModelRetryConfig(lone surrogate, {})',
    (r) => r.setModelRetryConfig('m\uD800', {}),
    'INVALID_ARGUMENT',
  ),
  row('setModelRetryConfig(unserved, {})', (r) => r.setModelRetryConfig('nobody', {}), 'NOT_FOUND'),
  row('setModelRetryConfig("*", {})', (r) => r.setModelRetryConfig('*', {}), 'NOT_FOUND'),
  row(
    'setModelRetryConfig(m, null)',
    (r) => r.setModelRetryConfig('m', bad(null)),
    'INVALID_ARGUMENT',
  ),
  row('setModelRetryConfig(m, [])', (r) => r.setModelRetryConfig('m', bad([])), 'INVALID_ARGUMENT'),
  row(
    'setModelRetryConfig(m, { maxAttempts: NaN })',
    (r) => r.setModelRetryConfig('m', { maxAttempts: Number.NaN }),
    'INVALID_ARGUMENT',
  ),
  // reads
  row('get(42)', (r) => r.get(bad(42)), undefinedResult),
  row('get(null)', (r) => r.get(bad(null)), undefinedResult),
  row('get(10 MB)', (r) => r.get(HUGE), undefinedResult),
  row('getByUrl(42)', (r) => r.getByUrl(bad(42)), undefinedResult),
  row('getByUrl(null)', (r) => r.getByUrl(bad(null)), undefinedResult),
  row('getByUrl("")', (r) => r.getByUrl(''), undefinedResult),
  row('getByUrl(10 MB)', (r) => r.getByUrl(HUGE), undefinedResult),
  row('getByUrl(lone surrogate)', (r) => r.getByUrl(LONE), undefinedResult),
  row('getIdByUrl(NaN)', (r) => r.getIdByUrl(bad(Number.NaN)), undefinedResult),
  row('getIdByUrl(10 MB)', (r) => r.getIdByUrl(HUGE), undefinedResult),
  row('getByModel(42)', (r) => r.getByModel(bad(42)), 'INVALID_ARGUMENT'),
  row('getByModel(null)', (r) => r.getByModel(bad(null)), 'INVALID_ARGUMENT'),
  row('getHashRing(42)', (r) => r.getHashRing(bad(42)), 'INVALID_ARGUMENT'),
  row('getByType(null)', (r) => r.getByType(bad(null)), 'INVALID_ARGUMENT'),
  row('getByConnection(42)', (r) => r.getByConnection(bad(42)), 'INVALID_ARGUMENT'),
  row('getRetryConfig(42)', (r) => r.getRetryConfig(bad(42)), undefinedResult),
  row('getRetryConfig(10 MB)', (r) => r.getRetryConfig(HUGE), undefinedResult),
  row(
    'events({ bufferSize: NaN })',
    (r) => r.events({ bufferSize: Number.NaN }),
    'INVALID_ARGUMENT',
  ),
  row('events({ signal: "x" })', (r) => r.events(bad({ signal: 'x' })), 'INVALID_ARGUMENT'),
];

describe('bad input leaves the registry unchanged', () => {
  it.each(ROWS)('$call', async ({ act, expected }) => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['m'] });
    const wild = await registry.register({ url: 'h:2' });
    await registry.reserveIdForUrl('h:3');
    registry.setModelRetryConfig('m', { maxAttempts: 2 });
    const snapshot = registry.snapshot();
    const stats = registry.stats();
    events.length = 0;

    // Act
    let outcome: { ok: true; value: unknown } | { ok: false; error: unknown };
    try {
      outcome = { ok: true, value: await act(registry, { a: a.id, wild: wild.id }) };
    } catch (error) {
      outcome = { ok: false, error };
    }

    // Assert
    if (typeof expected === 'string') {
      expect(outcome.ok, `expected ${expected}`).toBe(false);
      expectFleetError((outcome as { error: unknown }).error, expected);
    } else {
      expect(outcome).toEqual({ ok: true, value: expected.returns });
    }
    expect(registry.snapshot()).toEqual(snapshot);
    expect(registry.stats()).toEqual(stats);
    expect(events).toEqual([]);
    expect(registry.getIdByUrl('h:3')).toBeDefined();
    expectConsistent(registry);
  });

  it('every error message stays short (under 300 characters), even for 10 MB inputs', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['m'] });
    const wild = await registry.register({ url: 'h:2' });
    registry.setModelRetryConfig('m', { maxAttempts: 2 });

    // Act
    const tooLong: string[] = [];
    for (const { call, act, expected } of ROWS) {
      if (typeof expected !== 'string') continue;
      try {
        await act(registry, { a: a.id, wild: wild.id });
      } catch (error) {
        const length = (error as Error).message.length;
        if (length >= 300) tooLong.push(`${call}: ${length} characters`);
      }
    }

    // Assert
    expect(tooLong).toEqual([]);
  });

  it('reads of unknown models with odd names return the wildcard workers and cache nothing', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', models: ['m'] });
    const wild = await registry.register({ url: 'h:2' });

    // Act / Assert
    for (const model of [HUGE, 'm\uD800', ' ', '\u0000all', '\u0000wildcard']) {
      expect(registry.getByModel(model)).toEqual([wild]);
      expect(registry.getHashRing(model).urls).toEqual([wild.url]);
    }
    expect(registry.getModels()).toEqual(['m']);
  });
});
