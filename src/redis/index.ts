/**
 * `fleetroute/redis`: shared state for several routers on Redis or Valkey — in-flight loads,
 * sticky sessions and the approximate prefix index — through the optional peer `ioredis`.
 *
 * @example
 * ```ts
 * import { Router, SharedState } from 'fleetroute';
 * import { RedisSharedStore } from 'fleetroute/redis';
 *
 * const store = await RedisSharedStore.create({ url: process.env.REDIS_URL, namespace: 'prod' });
 * const router = new Router({ registry, transport, shared: new SharedState({ store }) });
 * ```
 * @packageDocumentation
 */
export type { RedisClientLike } from './ioredis.js';
export { RedisSharedStore, type RedisSharedStoreOptions } from './redis-store.js';
