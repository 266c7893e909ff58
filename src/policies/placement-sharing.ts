/**
 * The port through which a policy lets its placements be shared with other routers: a policy
 * that can share offers one of the two interfaces below under the {@link SHARING} key, and shared
 * state (`src/shared/`) talks to that interface only, never to a concrete policy.
 *
 * - `manual` offers {@link SessionSharing}: its sticky sessions (routing key → workers).
 * - `cache_aware` offers {@link PrefixSharing}: where it sent prompt prefixes.
 *
 * @module
 * @internal
 */
import type { Worker } from '../workers/worker.js';
import type { Policy, SelectRequest } from './policy.js';

/** @internal The key of the method a policy that can share offers its port under. */
export const SHARING: unique symbol = Symbol('fleetroute.sharing');

/** @internal Where a session is placed: its primary worker and, after a failover, its secondary. */
export interface SessionPlacement {
  readonly primary: string;
  readonly secondary: string | undefined;
}

/** @internal What a policy that keeps sticky sessions lets shared state read and write. */
export interface SessionSharing {
  readonly kind: 'sessions';
  /** How long a session is kept after its last use (ms): the policy's idle TTL. */
  readonly ttlMs: number;
  /** The routing key `select` would place `request` under; `undefined` when it has none. O(1). */
  keyOf(request: SelectRequest): string | undefined;
  /** Where `key` is placed now (no TTL check, not counted as a use), or `undefined`. O(1). */
  placementOf(key: string): SessionPlacement | undefined;
  /** Takes another router's placement of `key` as the policy's own (a use of the key). O(1). */
  adopt(key: string, primary: string, secondary: string | undefined): void;
}

/** @internal What a policy that places prompt prefixes lets shared state read and write. */
export interface PrefixSharing {
  readonly kind: 'prefixes';
  /**
   * Whether `model`'s requests are scored from the engines' KV events: then what routers sent
   * where is not what decides, and the shared index is not read for them. O(1).
   */
  usesEvents(model: string): boolean;
  /**
   * Takes a placement another router made — `url` was sent `prefix` (text or tokens) of a
   * request for `model` — as if this policy had routed it, among `workers` (the model's
   * candidates). Cost: one descent and insert of the policy's tree.
   */
  remember(
    workers: readonly Worker[],
    model: string,
    prefix: string | ArrayLike<number>,
    url: string,
  ): void;
}

/** @internal What a policy can share: sessions or prefix placements. */
export type PlacementSharing = SessionSharing | PrefixSharing;

/** @internal A policy that offers its placements for sharing. */
export interface SharingPolicy extends Policy {
  /** The policy's port: the same object on every call. */
  [SHARING](): PlacementSharing;
}

/** @internal The port `policy` offers, or `undefined` when it shares nothing. O(1). */
export function sharingOf(policy: Policy): PlacementSharing | undefined {
  const offer = (policy as Partial<SharingPolicy>)[SHARING];
  return typeof offer === 'function' ? offer.call(policy) : undefined;
}
