/**
 * The figures of `Router.stats()`: the router's own counters, and their assembly with its parts'
 * figures and the workers' breakers into one plain object (a `RouterStats`).
 *
 * @module
 */
import type { AdmissionStats } from '../admission/admission-events.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { CircuitState } from '../resilience/circuit-breaker.js';
import type { HealthLoopStats } from './health-loop.js';
import type { LoadPollerStats } from './load-poller.js';
import type { ModelDiscoveryStats } from './model-discovery.js';

/** Counters from {@link Router.stats}: a plain object built per call. @public */
export interface RouterStats {
  readonly selects: number;
  readonly noWorker: number;
  readonly executions: number;
  readonly attempts: number;
  readonly retries: number;
  readonly leakedLeases: number;
  readonly health: {
    readonly probes: number;
    readonly failures: number;
    readonly timeouts: number;
    readonly transitions: number;
  };
  readonly loads: {
    readonly rounds: number;
    readonly polls: number;
    readonly reports: number;
    readonly failures: number;
  };
  /** Model discovery (`discoverModels`): calls made, workers whose models were recorded, failures. */
  readonly models: {
    readonly calls: number;
    readonly discovered: number;
    readonly failures: number;
  };
  /** Breaker state per worker id. */
  readonly circuits: Readonly<Record<string, CircuitState>>;
  /**
   * Workers cooling down after a `Retry-After` (`CircuitBreaker.coolDown`), by id: the time left
   * in ms. Workers without a cooldown are absent.
   */
  readonly cooldowns: Readonly<Record<string, number>>;
  /** Admission control's figures (the `admission` option); `undefined` when it is off. */
  readonly admission: AdmissionStats | undefined;
}

/** @internal The router's own counters: one object per router, counted in place. */
export class RouterCounters {
  selects = 0;
  noWorker = 0;
  executions = 0;
  attempts = 0;
  retries = 0;

  /** Counts one attempt made, one retry scheduled, or one call that found no worker at all. */
  count(what: 'attempts' | 'retries' | 'noWorker'): void {
    if (what === 'attempts') this.attempts++;
    else if (what === 'retries') this.retries++;
    else this.noWorker++;
  }
}

/** @internal What the router's parts have counted: `undefined` for a part that is off. */
export interface RouterParts {
  readonly leakedLeases: number;
  readonly health: Readonly<HealthLoopStats> | undefined;
  readonly loads: Readonly<LoadPollerStats> | undefined;
  readonly models: Readonly<ModelDiscoveryStats> | undefined;
  readonly admission: AdmissionStats | undefined;
}

/**
 * @internal The stats of a router, shaped as `RouterStats` (which `Router.stats` checks): its
 * counters, its parts' figures (0 for a part that is off), and the breaker state and cooldown of
 * every worker of `registry`. Cost: O(workers); builds plain objects, never hands out a live one.
 */
export function routerStats(
  counters: RouterCounters,
  parts: RouterParts,
  registry: WorkerRegistry,
): RouterStats {
  const circuits: Record<string, CircuitState> = {};
  const cooldowns: Record<string, number> = {};
  for (const worker of registry.getAll()) {
    const breaker = worker.circuitBreaker;
    circuits[worker.id] = breaker.state;
    const cooldownMs = breaker.cooldownMs;
    if (cooldownMs > 0) cooldowns[worker.id] = cooldownMs;
  }
  const h = parts.health;
  const l = parts.loads;
  const d = parts.models;
  return {
    selects: counters.selects,
    noWorker: counters.noWorker,
    executions: counters.executions,
    attempts: counters.attempts,
    retries: counters.retries,
    leakedLeases: parts.leakedLeases,
    health: {
      probes: h?.probes ?? 0,
      failures: h?.failures ?? 0,
      timeouts: h?.timeouts ?? 0,
      transitions: h?.transitions ?? 0,
    },
    loads: {
      rounds: l?.rounds ?? 0,
      polls: l?.polls ?? 0,
      reports: l?.reports ?? 0,
      failures: l?.failures ?? 0,
    },
    models: {
      calls: d?.calls ?? 0,
      discovered: d?.discovered ?? 0,
      failures: d?.failures ?? 0,
    },
    circuits,
    cooldowns,
    admission: parts.admission,
  };
}
