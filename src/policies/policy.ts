/**
 * The `Policy` contract every routing policy implements, and the request it routes.
 *
 * @module
 */

import type { RequestHeaders } from '../core/headers.js';
import type { HashRing } from '../ring/hash-ring.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';

/** Names accepted by `createPolicy`. @public */
export type PolicyName =
  | 'random'
  | 'round_robin'
  | 'power_of_two'
  | 'least_load'
  | 'consistent_hashing'
  | 'prefix_hash'
  | 'cache_aware'
  | 'bucket'
  | 'manual'
  | 'passthrough';

/** Which leg of a request a policy is choosing for (prefill/decode disaggregation). @public */
export type RequestLeg = 'single' | 'prefill' | 'decode';

/**
 * What a policy may look at to route one request. Every field is optional; a policy uses what it
 * needs and ignores the rest.
 *
 * @public
 */
export interface SelectRequest {
  /** The model the request names. */
  readonly model?: string;
  /** The prompt as text (cache- and prefix-aware policies key on it when there are no tokens). */
  readonly text?: string;
  /** The prompt as token ids. Non-integers and negatives are read as 0. */
  readonly tokens?: ArrayLike<number>;
  /** Request headers: `x-fleetroute-routing-key`, `x-fleetroute-target-worker`, authorization… */
  readonly headers?: RequestHeaders;
  /** Explicit routing key (sessions, users); wins over the routing-key header. */
  readonly routingKey?: string;
  /**
   * The leg being routed: set by `selectPair`; given to `Router.execute` or `select`, it routes
   * that leg among the model's workers of its type with the router's `prefillPolicy` /
   * `decodePolicy`. @defaultValue 'single'
   */
  readonly leg?: RequestLeg;
  /** A ring over the candidates (for example `registry.getHashRing(model)`), saving a rebuild. */
  readonly ring?: HashRing;
  /**
   * How important the request is, for a router's admission control (its `admission` option): an
   * integer in [-1,000,000, 1,000,000], higher first. While the fleet is saturated, a higher
   * priority band is always served before a lower one, and requests below the admission's
   * `shedBelowPriority` (negative ones, by default) are turned away at once. Policies ignore it.
   * @defaultValue 0
   */
  readonly priority?: number;
  /**
   * Who sent the request, for fairness between tenants within a priority band while the fleet is
   * saturated (a string of at most 256 characters). Policies ignore it.
   * @defaultValue '' (one tenant)
   */
  readonly tenant?: string;
  /**
   * The request's size as admission counts it (an integer ≥ 0): against the queue's
   * `maxQueuedSize`, and as the service a tenant receives when it is served.
   * @defaultValue the number of `tokens`, else the length of `text`, else 0
   */
  readonly size?: number;
}

/**
 * A routing policy. `select` returns an **available** worker (live, `ready`, breaker admits)
 * from `workers`, or `undefined`; it never throws for an empty or odd list, and reads each
 * candidate's routing state at most once per call. Every policy counts its pick with
 * `worker.incrementProcessed()`.
 *
 * @public
 */
/** What a policy tells of its last decision (see {@link Policy.explain}). @public */
export interface PolicyExplanation {
  /** The branch taken: `cache_aware`'s reason (`cache_hit`, `cache_miss`, …). */
  readonly branch: string;
  /** The share of the prompt its match covered (0 … 1), when the branch scored a match. */
  readonly matched: number | undefined;
  /**
   * The share of the prompt (0 … 1) the policy believes the **picked** worker holds, when it
   * scored one: `matched` when the pick is a holder of the whole match, less when it is a holder
   * of part of it, 0 when it holds none (a miss placement, an overloaded holder passed over).
   * `undefined` when the policy does not say. What conditional disaggregation reads.
   */
  readonly held?: number | undefined;
  /**
   * `cache_aware` with `decideBy: 'ttft'`, when the decision compared candidates: the predicted
   * figures of the winner and of the runner-up (the next lowest prediction; `undefined` when
   * the winner was the only candidate scored). Absent otherwise.
   */
  readonly predicted?:
    | { readonly winner: PredictedTtft; readonly runnerUp: PredictedTtft | undefined }
    | undefined;
}

/** One candidate's predicted time to first token, as `cache_aware` scored it. @public */
export interface PredictedTtft {
  /** The worker's URL. */
  readonly url: string;
  /** Prefill work queued ahead of the request there (tokens). */
  readonly queuedTokens: number;
  /** The prompt's tokens that worker does not hold (tokens). */
  readonly uncachedTokens: number;
  /** The worker's prefill speed (tokens per second): learned from first tokens, else the prior. */
  readonly tokensPerSecond: number;
  /** Predicted time to first token: (queued + uncached) / speed (ms). */
  readonly ttftMs: number;
}

export interface Policy {
  /** The policy's name. */
  readonly name: PolicyName;
  /**
   * Picks a worker for `request` among `workers`.
   *
   * @returns an available member of `workers`, or `undefined` when none fits.
   */
  select(workers: readonly Worker[], request?: SelectRequest): Worker | undefined;
  /**
   * Why the last `select` picked what it did: its branch, and for prefix-matching policies the
   * share of the prompt matched. The same object is reused by the next `select`: read it at
   * once. O(1), allocates nothing. Policies that keep no branches leave it out.
   */
  explain?(): PolicyExplanation | undefined;
  /** Feeds polled loads, keyed by worker URL. Unknown URLs are kept until `removeWorker`. */
  updateLoads?(reports: ReadonlyMap<string, LoadReport>): void;
  /** Forgets everything held for one worker. */
  removeWorker?(url: string): void;
  /**
   * The engine behind this worker restarted: forget what you believed its cache held. The
   * worker stays a candidate; what the policy keeps that does not model the engine's cache
   * (loads, sessions, ring positions) stays too. A `Router` calls it on every policy when its
   * health loop sees a ready worker fail and come back, or when a load report's `startedAt`
   * changes (see the `workerRestarted` observation event); `restart` says which, and so how much
   * of what the policy learned is stale (see {@link WorkerRestart}). Policies that model no cache
   * leave it out.
   */
  workerRestarted?(url: string, restart: WorkerRestart): void;
  /** Forgets all per-worker and per-key state. */
  reset?(): void;
  /** Releases resources; the policy may not be used afterwards. */
  close?(): void;
}

/**
 * How an engine restart was seen, passed to {@link Policy.workerRestarted}: it tells a policy how
 * much of what it learned about the worker's cache is stale.
 *
 * @public
 */
export interface WorkerRestart {
  /**
   * - `health`: the health loop took the worker out of `ready` on failed probes, and it is
   *   `ready` again. Nothing was routed to it in between, so everything learned about its cache
   *   before is stale.
   * - `start_time`: a load report's `startedAt` (the engine's `process_start_time_seconds`)
   *   differs from the one in the worker's report before, and the worker never left `ready`. The
   *   engine restarted at some point after that earlier report, so what the policy learned
   *   before it is stale, while what it sent the worker since may be in the new cache. A `Router`
   *   calls the hook while it delivers the round of reports that shows the change, before that
   *   round's `updateLoads`.
   */
  readonly detectedBy: 'health' | 'start_time';
}

/** Header carrying an explicit routing key. @public */
export const ROUTING_KEY_HEADER = 'x-fleetroute-routing-key';
/** Header naming the worker (by URL or id) a request must go to. @public */
export const TARGET_WORKER_HEADER = 'x-fleetroute-target-worker';
