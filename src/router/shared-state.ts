/**
 * The contract between a `Router` and the state it shares with other routers (in-flight loads,
 * sticky sessions, a prefix index): `SharedState` implements it over a store such as Redis.
 *
 * @module
 */
import type { Logger } from '../core/logger.js';
import { fail } from '../core/options.js';
import type { Policy, SelectRequest } from '../policies/policy.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { Worker } from '../workers/worker.js';

/**
 * One part of shared state changed health (a `sharedState` observation of the router). A part
 * that is `degraded` routes on this router's local state alone: nothing waits on the store and
 * nothing fails because of it; it returns to `ok` by itself once the store answers again.
 *
 * @public
 */
export interface SharedStateEvent {
  readonly type: 'sharedState';
  /** Which part: in-flight loads, sticky sessions, or the prefix index. */
  readonly part: 'loads' | 'sessions' | 'prefixIndex';
  readonly state: 'ok' | 'degraded';
  /** Why it degraded (the store's error message, or `timeout`); absent on recovery. */
  readonly reason?: string;
}

/**
 * What a router hands the shared state it was given, once, when it starts.
 *
 * @public
 */
export interface SharedStateHost {
  /** The router's registry: whose workers' loads are shared. */
  readonly registry: WorkerRegistry;
  /** Emits a `sharedState` observation on the router. */
  report(event: SharedStateEvent): void;
  /** The router's logger, if it has one. */
  readonly logger: Logger | undefined;
}

/**
 * State a `Router` shares with other routers. `SharedState` (from `fleetroute`) implements it
 * over a `SharedStore` (in memory, or Redis with `fleetroute/redis`); the router calls it as
 * below and never waits on it inside `select`.
 *
 * @public
 */
export interface RouterSharedState {
  /** Called once by `router.start()`. Starts background work (timers are unref'd). */
  attach(host: SharedStateHost): void;
  /**
   * Before a request is routed (`router.execute`, `router.prepare`): fetches what the store
   * knows about it (a session's worker, the workers holding its prefix) into the policy's local
   * state, within its own deadline. Never rejects. Returns `undefined` when there is nothing to
   * fetch, so the common case costs no promise.
   */
  prepare(request: SelectRequest, policy: Policy): Promise<void> | undefined;
  /** After a policy picked `worker` for `request` (inside `select`): records it, never waiting. */
  placed(request: SelectRequest, policy: Policy, worker: Worker): void;
  /** Called by `router.close()`: stops background work and withdraws this router's share. */
  close(): Promise<void>;
}

/** @internal Checks the `shared` option of a `Router`. */
export function readSharedState(field: string, value: unknown): RouterSharedState | undefined {
  if (value === undefined) return undefined;
  const s = value as Partial<RouterSharedState> | null;
  if (
    typeof s !== 'object' ||
    s === null ||
    typeof s.attach !== 'function' ||
    typeof s.prepare !== 'function' ||
    typeof s.placed !== 'function' ||
    typeof s.close !== 'function'
  ) {
    fail(field, 'a SharedState (attach, prepare, placed and close methods)', value);
  }
  return s as RouterSharedState;
}
