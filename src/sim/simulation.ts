/**
 * `simulate`: replays a workload against a simulated fleet, routed by one policy through the
 * public `Router`, and measures what users feel — cache hits, time to first token, balance — and
 * what the router costs.
 *
 * The router sees only what a real one sees: the requests (tokens and routing key), its own
 * leases (released at completion), and, every `loadPollIntervalMs`, load reports like the ones a
 * metrics endpoint gives. It never reads the simulated caches.
 *
 * @module
 */
import type { PolicyRun } from './result.js';
import { SimRouters } from './sim-routers.js';
import type { SimulationOptions } from './simulation-options.js';
import { type ResolvedSimulationOptions, resolveSimulationOptions } from './simulation-options.js';
import { SimulationRun } from './simulation-run.js';

/**
 * Runs one policy on `options.workload` over the simulated fleet and reports the outcome.
 * Deterministic for a given seed, except `routingMicrosPerRequest` (wall-clock time).
 *
 * Every option is checked before anything is built: the workload completely (each request's
 * fields, its `tokens()`, and that an `after` names an earlier request), then the policy's
 * configuration. Trace timestamps are rebased so the first arrival is at simulated time 0
 * (`timestampOffsetMs` says by how much). Whatever happens during the run, every router and
 * registry it built is closed before `simulate` settles.
 *
 * @example
 * ```ts
 * const run = await simulate({ workload: generatedSharedPrefix(), policy: 'cache_aware' });
 * console.log(run.hitRate, run.ttftMs.p50, run.eventsProcessed);
 * ```
 * @returns the run's {@link PolicyRun}.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for an invalid option or a malformed
 *   workload, naming the field (`workload.requests[3].promptLength`); `TRANSPORT_FAILED` when
 *   `sharedState` names a Redis that does not answer; an error thrown by `onProgress`, as is.
 * Cost: O(requests × (prompt blocks + workers when `precision`)) plus O(engine steps × batch);
 * independent of the span of simulated time (idle stretches cost nothing). The workload check
 * adds O(requests + prompt tokens).
 * @public
 */
export async function simulate(options: SimulationOptions): Promise<PolicyRun> {
  return simulateResolved(resolveSimulationOptions(options));
}

/**
 * @internal `simulate` on options already resolved (`comparePolicies` resolves every policy's
 * before it runs the first).
 */
export async function simulateResolved(o: ResolvedSimulationOptions): Promise<PolicyRun> {
  const run = new SimulationRun(o);
  const routers = new SimRouters();
  try {
    await routers.open(o, run.urls, run.clock);
    await run.run(routers);
  } catch (error) {
    await routers.close().catch(() => undefined);
    throw error;
  }
  await routers.close();
  return run.result();
}
