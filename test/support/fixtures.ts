/**
 * Shared arrange helpers for the unit and scenario tests: a registry that records its events,
 * a hand-driven clock, assertions for `FleetRouteError` codes, and prompt text.
 */
import { expect } from 'vitest';
import {
  type CacheAwareStats,
  FleetRouteError,
  type FleetRouteErrorCode,
  type WorkerEvent,
  WorkerRegistry,
  type WorkerRegistryOptions,
} from '../../src/index.js';
import { TREE_CHARGE } from '../../src/policies/cache-aware/model-caches.js';

/** A clock the test moves by hand: `clock.now += 1000`. */
export interface FakeClock {
  now: number;
  readonly read: () => number;
}

export function fakeClock(start = 0): FakeClock {
  const clock: FakeClock = {
    now: start,
    read: () => clock.now,
  };
  return clock;
}

export interface RecordedRegistry {
  readonly registry: WorkerRegistry;
  /** Every event the registry emitted, in order. */
  readonly events: WorkerEvent[];
  readonly clock: FakeClock;
}

/**
 * A registry whose workers start `ready` (nothing probes health in unit tests), driven by a fake
 * clock, with one `'event'` listener recording every event.
 */
export async function recordedRegistry(
  options: WorkerRegistryOptions = {},
): Promise<RecordedRegistry> {
  const clock = fakeClock();
  const registry = await WorkerRegistry.create({
    defaultStatus: 'ready',
    clock: clock.read,
    ...options,
  });
  const events: WorkerEvent[] = [];
  registry.on('event', (event) => {
    events.push(event);
  });
  return { registry, events, clock };
}

/** Asserts that `error` is a `FleetRouteError` with `code`, and returns it typed. */
export function expectFleetError(error: unknown, code: FleetRouteErrorCode): FleetRouteError {
  expect(error).toBeInstanceOf(FleetRouteError);
  const typed = error as FleetRouteError;
  expect(typed.code).toBe(code);
  expect(typed.name).toBe('FleetRouteError');
  return typed;
}

/** Runs `fn` synchronously, expecting it to throw a `FleetRouteError` with `code`. */
export function throwsCode(fn: () => unknown, code: FleetRouteErrorCode): FleetRouteError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect(caught, `expected a ${code} throw`).toBeDefined();
  return expectFleetError(caught, code);
}

/** Awaits `promise`, expecting it to reject with a `FleetRouteError` with `code`. */
export async function rejectsCode(
  promise: Promise<unknown>,
  code: FleetRouteErrorCode,
): Promise<FleetRouteError> {
  const outcome = await promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
  expect(outcome.ok, `expected a ${code} rejection`).toBe(false);
  return expectFleetError((outcome as { error: unknown }).error, code);
}

/** A string of about `megabytes` MB, for oversized-input tests. */
export function hugeString(megabytes = 10): string {
  return 'a'.repeat(megabytes * 1024 * 1024);
}

/** A lone high surrogate inside otherwise valid text. */
export const LONE_SURROGATE = 'http://host\uD800:8000';

/**
 * Checks the registry's cross-index invariants (docs/registry.md): url → id and id → worker form a
 * bijection over live workers, every model's workers are those naming it plus the wildcards,
 * every ring's membership equals its worker set, and the wildcard ring spans every worker.
 */
export function expectConsistent(registry: WorkerRegistry): void {
  const all = registry.getAll();
  expect(registry.size).toBe(all.length);
  expect(new Set(all.map((w) => w.url)).size).toBe(all.length);
  for (const worker of all) {
    expect(worker.live).toBe(true);
    expect(registry.get(worker.id)).toBe(worker);
    expect(registry.getIdByUrl(worker.url)).toBe(worker.id);
    expect(registry.getByUrl(worker.url)).toBe(worker);
  }
  const wildcards = all.filter((w) => w.isWildcard);
  const models = [...new Set(all.flatMap((w) => w.models))].sort();
  expect(registry.getModels()).toEqual(models);
  for (const model of models) {
    const expected = [...all.filter((w) => w.models.includes(model)), ...wildcards];
    expect(new Set(registry.getByModel(model))).toEqual(new Set(expected));
    expect([...registry.getHashRing(model).urls]).toEqual(sortedUrls(expected));
  }
  expect([...registry.getHashRing().urls]).toEqual(sortedUrls(all));
  expect(registry.getByModel()).toBe(all);
}

function sortedUrls(workers: readonly { readonly url: string }[]): string[] {
  return workers.map((w) => w.url).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

/** `length` pseudo-random letters (xorshift32); different seeds share no prefix beyond chance. */
export function essay(seed: number, length = 400): string {
  let state = (seed * 2_654_435_761) >>> 0 || 1;
  let out = '';
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out += String.fromCharCode(97 + ((state >>> 0) % 26));
  }
  return out;
}

/**
 * The total a `cache_aware` policy's budget counts, recounted from its trees: each tree's size
 * plus its fixed charge and its model's length.
 */
export function recountCacheAwareTotal(stats: CacheAwareStats): number {
  return stats.trees.reduce((sum, t) => sum + t.size + TREE_CHARGE + t.model.length, 0);
}
