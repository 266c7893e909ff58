/**
 * The priorities and tenants a simulation gives its requests: a seeded mix applied to any
 * workload, generated or a trace, and reproducible wherever the run is replayed (a worker thread
 * draws the same, from the same options).
 *
 * @module
 * @internal
 */

/** @internal The priority of the low-priority share (below the default 0: sheddable). */
export const LOW_PRIORITY = -1;

/** Salts that keep the priority and tenant draws of one request independent. */
const PRIORITY_SALT = 0x5bd1e995;
const TENANT_SALT = 0x27d4eb2f;

/** @internal The options the mix is drawn from (`SimulationOptions`' own). */
export interface MixOptions {
  readonly seed: number;
  readonly lowPriorityShare: number;
  readonly tenants: number;
  readonly heavyTenantFactor: number;
}

/**
 * @internal A uniform number in [0, 1) for request `id` of a run seeded `seed`, independent of
 * every other draw of the run (a hash, not a stream: the order requests are drawn in does not
 * matter). O(1).
 */
export function unitOf(seed: number, id: number, salt: number): number {
  let z = (Math.imul(seed ^ salt, 0x9e3779b1) + Math.imul(id + 1, 0x85ebca6b)) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  z = Math.imul(z ^ (z >>> 16), 0x27d4eb2d) >>> 0;
  return ((z ^ (z >>> 15)) >>> 0) / 4_294_967_296;
}

/**
 * @internal The priority and tenant of each request: `priorityOf(id)` is {@link LOW_PRIORITY}
 * for a `lowPriorityShare` of the requests, else `undefined` (the request's own); `tenantOf(id)`
 * is `tenant-i`, `tenant-0` drawn `heavyTenantFactor` times as often as each other, or
 * `undefined` with one tenant. Both O(1) and allocation-free but for the tenant's name.
 */
export class RequestMix {
  readonly #o: MixOptions;
  readonly #names: readonly string[];

  /** The mix of `o`, or `undefined` when it changes nothing (no low share, one tenant). */
  static of(o: MixOptions): RequestMix | undefined {
    return o.lowPriorityShare > 0 || o.tenants > 1 ? new RequestMix(o) : undefined;
  }

  private constructor(o: MixOptions) {
    this.#o = o;
    this.#names = Array.from({ length: o.tenants }, (_, i) => `tenant-${i}`);
  }

  /** {@link LOW_PRIORITY} or `undefined` (the request keeps its own). */
  priorityOf(id: number): number | undefined {
    const share = this.#o.lowPriorityShare;
    if (share === 0) return undefined;
    return unitOf(this.#o.seed, id, PRIORITY_SALT) < share ? LOW_PRIORITY : undefined;
  }

  /** The request's tenant, or `undefined` with one tenant (the request keeps its own). */
  tenantOf(id: number): string | undefined {
    const n = this.#o.tenants;
    if (n === 1) return undefined;
    const factor = this.#o.heavyTenantFactor;
    const x = unitOf(this.#o.seed, id, TENANT_SALT) * (factor + n - 1);
    if (x < factor) return this.#names[0];
    return this.#names[Math.min(n - 1, 1 + Math.floor(x - factor))];
  }
}
