/**
 * The store the routers of a run share (`sharedState`): in memory on the simulated clock, or on
 * a Redis server that must answer before anything runs — a run against a server nobody answers
 * on would share nothing while its rows said "+shared".
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';
import { RedisSharedStore } from '../redis/redis-store.js';
import { MemorySharedStore } from '../shared/memory-store.js';
import type { SharedStore } from '../shared/shared-store.js';

/**
 * @internal Opens the store `target` names (`'memory'`, or a `redis://`, `rediss://` or
 * `valkey://` URL) under `namespace`, on `clock`.
 *
 * @returns the store, connected.
 * @throws {@link FleetRouteError} `TRANSPORT_FAILED` when no Redis answered at the URL within
 *   the store's connect timeout (2 s), naming the URL without its credentials and the client's
 *   reason (the store is closed first); `MISSING_DEPENDENCY` without `ioredis`.
 * Cost: one connection, and for Redis one `EVALSHA` when it did not connect (to learn why).
 */
export async function openSimStore(
  target: string,
  namespace: string,
  clock: () => number,
): Promise<SharedStore> {
  if (target === 'memory') return new MemorySharedStore({ clock });
  const url = target.startsWith('valkey://') ? `redis://${target.slice(9)}` : target;
  const store = await RedisSharedStore.create({ url, namespace, clock });
  if (store.status === 'ready') return store;
  let reason = `the client is ${store.status}`;
  try {
    // Not connected: the call fails at once, saying why (refused, unknown host, bad password).
    await store.leave('fleetroute-sim');
  } catch (error) {
    reason = error instanceof Error ? error.message : String(error);
  }
  await store.close();
  throw new FleetRouteError(
    'TRANSPORT_FAILED',
    `shared state: no Redis answered at ${withoutCredentials(url)} (${reason})`,
  );
}

/**
 * @internal Checks before a comparison's runs that `target` answers: opens it and closes it.
 * @throws as {@link openSimStore}.
 */
export async function checkSimStore(target: string): Promise<void> {
  if (target === 'memory') return;
  const store = await openSimStore(target, 'fleetroute-sim-check', () => 0);
  await (store as RedisSharedStore).close();
}

/** `url` without a user name or password, for messages. */
function withoutCredentials(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.username = '';
    parsed.password = '';
    return parsed.href.replace(/\/$/, '');
  } catch {
    return '(an unreadable URL)';
  }
}
