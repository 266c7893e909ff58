/**
 * The optional peer `ioredis`, loaded when first asked for, so `fleetroute/redis` imports
 * without it; and the few members of its client the store uses, typed here so the published
 * declarations never name the package.
 *
 * @module
 * @internal
 */
import { optionalPeer } from '../core/optional-peer.js';

/**
 * The members of a Redis client the store uses: an `ioredis` `Redis` (or `Cluster`) instance
 * fits as it is.
 *
 * @public
 */
export interface RedisClientLike {
  /** `'ready'` once connected (ioredis's `status`). */
  readonly status: string;
  evalsha(sha: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
  eval(script: string, keys: number, ...args: (string | number)[]): Promise<unknown>;
  quit(): Promise<unknown>;
  disconnect(): void;
  on(event: string, listener: (error: Error) => void): unknown;
  off(event: string, listener: (error: Error) => void): unknown;
}

/** @internal The ioredis constructor, as the store calls it. */
export type RedisConstructor = new (
  url: string,
  options: Readonly<Record<string, unknown>>,
) => RedisClientLike & { connect(): Promise<void> };

/** @internal What `import('ioredis')` gives. */
export interface IoRedisModule {
  readonly Redis: RedisConstructor;
}

/**
 * @internal Loads `ioredis` once per process.
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) naming the package and the
 *   command that installs it; a later call tries again.
 */
export const loadIoRedis: () => Promise<IoRedisModule> = optionalPeer<IoRedisModule>({
  name: 'ioredis',
  range: '^6',
  by: 'fleetroute/redis',
  usable: (module) => typeof (module as Partial<IoRedisModule>)?.Redis === 'function',
});
