/**
 * What a simulation reports: one {@link PolicyRun} per policy, gathered in a {@link Comparison}.
 *
 * @module
 */
import type { FleetModel } from './fleet-model.js';

/** Percentiles of a distribution, in ms. @public */
export interface Percentiles {
  readonly p50: number;
  readonly p90: number;
  readonly p99: number;
  readonly mean: number;
}

/**
 * The outcome of one policy on one workload.
 *
 * @public
 */
export interface PolicyRun {
  /** The policy's name (`cache_aware`, `round_robin`, …). */
  readonly policy: string;
  /** Requests in the workload, and how many completed (all of them unless some were unroutable). */
  readonly requests: number;
  readonly completed: number;
  /** Prompt tokens served from a worker's cache over all prompt tokens, 0 … 1. */
  readonly hitRate: number;
  /** Time to first token: arrival to the end of the request's prefill. */
  readonly ttftMs: Percentiles;
  /** Completed requests and generated tokens per second of simulated time. */
  readonly throughput: {
    readonly requestsPerSecond: number;
    readonly outputTokensPerSecond: number;
  };
  /** Simulated time from the first arrival to the last completion, ms. */
  readonly makespanMs: number;
  /**
   * Requests routed to each worker (index = worker), their max/mean and coefficient of variation
   * (standard deviation over mean).
   */
  readonly load: {
    readonly perWorker: readonly number[];
    readonly maxOverMean: number;
    readonly cv: number;
  };
  /**
   * Share of requests sent to a worker that held the longest cached prefix at the time, among
   * the requests for which some worker held one; `undefined` when none did.
   */
  readonly precision: number | undefined;
  /** Wall-clock CPU time of the routing decision (`router.select`) per request, µs. */
  readonly routingMicrosPerRequest: number;
  /**
   * Requests in flight (waiting or running) on each worker, sampled every `intervalMs` of
   * simulated time from the first arrival: `inFlight[worker][sample]`.
   */
  readonly timeline: {
    readonly intervalMs: number;
    readonly inFlight: readonly (readonly number[])[];
  };
  /**
   * Events the simulation processed: arrivals, engine steps, load polls and timeline samples.
   * This is what a run costs; it grows with requests and engine steps, not with idle simulated
   * time (polls and samples skip the stretches where no request is in flight).
   */
  readonly eventsProcessed: number;
  /**
   * For trace arrivals: the earliest request `timestamp` (ms, on the trace's clock), subtracted
   * from every timestamp before the speedup so that the first arrival is at simulated time 0.
   * 0 for the other arrival processes and for a trace that starts at 0.
   */
  readonly timestampOffsetMs: number;
}

/**
 * Every policy on one workload, fleet and arrival process.
 *
 * @public
 */
export interface Comparison {
  readonly workload: {
    readonly name: string;
    readonly description: string;
    readonly requests: number;
    readonly parameters: Readonly<Record<string, number | string>>;
  };
  readonly fleet: FleetModel;
  /**
   * How requests arrive, in words (`Poisson, 57.3 req/s (80 % of capacity)`); for a trace
   * that does not start at 0, it says which offset was subtracted.
   */
  readonly arrivals: string;
  /** The offset subtracted from the trace timestamps (see {@link PolicyRun.timestampOffsetMs}). */
  readonly timestampOffsetMs: number;
  /** Independent routers sharing the fleet (requests spread over them round-robin). */
  readonly routers: number;
  readonly seed: number;
  /** Hit rate of one infinite cache shared by the whole fleet: no policy can do better. */
  readonly ceiling: number;
  /** Estimated requests per second the fleet sustains at the ceiling hit rate. */
  readonly capacity: number;
  readonly runs: readonly PolicyRun[];
}
