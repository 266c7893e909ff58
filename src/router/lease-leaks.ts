/**
 * `LeaseLeaks`: releases the load of a lease garbage-collected without `release()`, and reports
 * it (the router's `reportLeakedLeases` option).
 *
 * @module
 * @internal
 */
import { type Logger, log } from '../core/logger.js';
import type { LeaseState } from '../workers/lease-state.js';
import { leaseStateOf, type WorkerLease } from '../workers/worker.js';

/**
 * @internal A finaliser per lease handed out: a lease collected before its release ends its state
 * (load back, no outcome for the breaker), is counted, and is reported as a warning
 * (`FLEETROUTE_LEASE_LEAK`). Cost: one finalisation-registry entry per lease.
 */
export class LeaseLeaks {
  /** Leases collected without release so far. */
  count = 0;
  readonly #registry: FinalizationRegistry<LeaseState>;

  constructor(logger: Logger | undefined) {
    this.#registry = new FinalizationRegistry((state) => {
      if (state.end(undefined)) {
        this.count++;
        log(
          logger,
          'warn',
          'FLEETROUTE_LEASE_LEAK',
          `a lease on ${state.url} was garbage-collected without release(); its load was released`,
          { url: state.url },
        );
      }
    });
  }

  /** Watches `lease` until it is collected. */
  watch(lease: WorkerLease): void {
    this.#registry.register(lease, leaseStateOf(lease));
  }
}
