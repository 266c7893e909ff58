/**
 * What a simulation reports: one {@link PolicyRun} per policy, gathered in a {@link Comparison}.
 *
 * @module
 */
import type { DisaggregationRule } from '../policies/conditional-disaggregation.js';
import type { PolicyName } from '../policies/policy.js';
import type { DisaggregationMode, DisaggregationRun, SimDisaggregation } from './disaggregation.js';
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
  /**
   * The policy's name (`cache_aware`, `round_robin`, …); in a comparison with KV events, the
   * variant's label (`cache_aware+events`, `cache_aware (1 router)`, …).
   */
  readonly policy: string;
  /** Requests in the workload, and how many completed (all of them unless some were unroutable). */
  readonly requests: number;
  readonly completed: number;
  /** Prompt tokens served from a worker's cache over all prompt tokens, 0 … 1. */
  readonly hitRate: number;
  /** Time to first token: arrival to the end of the request's prefill. */
  readonly ttftMs: Percentiles;
  /**
   * The time-to-first-token distribution, ms, at 1 % steps: entry `i` is the `i`-th percentile
   * (nearest rank; entry 0 the fastest request, entry 100 the slowest), so 101 numbers whatever
   * the request count; empty when no request completed.
   */
  readonly ttftQuantilesMs: readonly number[];
  /**
   * Completed requests and generated tokens per second of simulated time, from the first
   * arrival to the last completion; and `steadyRequestsPerSecond`, completions per second over
   * the middle half of the arrivals (from the time a quarter of the requests had arrived to the
   * time three quarters had): the rate served while the run carries its offered load, without
   * the ramp, the drain or a trace's sparse tail (0 when that window is empty).
   */
  readonly throughput: {
    readonly requestsPerSecond: number;
    readonly outputTokensPerSecond: number;
    readonly steadyRequestsPerSecond: number;
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
   * Prompt tokens routed to each worker (index = worker), their max/mean and coefficient of
   * variation: balance weighted by work, where {@link PolicyRun.load} counts requests. Even
   * request counts can hide uneven work (one worker given every long prompt); this shows it.
   * Every prompt token counts, cached or not.
   */
  readonly work: {
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
   * Routing decisions by the branch the policy took (`policy.explain()`: `cache_aware`'s
   * `cache_hit`, `cache_miss`, `event_overlap`, …), the counts an operator sees as
   * `fleetroute_decisions_total`; empty for policies that keep no branches.
   */
  readonly decisions: Readonly<Record<string, number>>;
  /**
   * Requests on each worker, sampled every `intervalMs` of simulated time from the first
   * arrival, as `series[worker][sample]`: `inFlight` (waiting or running), `waiting` (queued,
   * not yet admitted to a batch) and `running` (in the batch). When a run outgrows 1,000
   * samples, neighbouring samples merge keeping the larger of each series, so `inFlight` can be
   * less than `waiting + running` in a merged sample.
   */
  readonly timeline: {
    readonly intervalMs: number;
    readonly inFlight: readonly (readonly number[])[];
    readonly waiting: readonly (readonly number[])[];
    readonly running: readonly (readonly number[])[];
  };
  /**
   * Events the simulation processed: arrivals, engine steps, load polls and timeline samples.
   * This is what a run costs; it grows with requests and engine steps, not with idle simulated
   * time (polls and samples skip the stretches where no request is in flight).
   */
  readonly eventsProcessed: number;
  /**
   * With admission on (`SimulationOptions.admission`): how the requests fared at the routers.
   * Absent without it.
   */
  readonly admission?: AdmissionRun;
  /**
   * With a workload whose requests name LoRA adapters (`SimRequest.adapter`): how often engines
   * loaded one. Absent otherwise.
   */
  readonly adapters?: AdapterLoads;
  /**
   * With a disaggregated fleet (`SimulationOptions.disaggregation`): what the prefill and decode
   * legs did. Absent without it.
   */
  readonly disaggregation?: DisaggregationRun;
  /**
   * For trace arrivals: the earliest request `timestamp` (ms, on the trace's clock), subtracted
   * from every timestamp before the speedup so that the first arrival is at simulated time 0.
   * 0 for the other arrival processes and for a trace that starts at 0.
   */
  readonly timestampOffsetMs: number;
}

/**
 * LoRA adapter loads of one run: each time an engine started a request whose adapter it did not
 * hold (into a free slot, or evicting an idle adapter), costing `FleetModel.adapterLoadMs`.
 *
 * @public
 */
export interface AdapterLoads {
  /** Loads in all. */
  readonly loads: number;
  /** Loads per worker (index = worker). */
  readonly perWorker: readonly number[];
  /** The most and fewest loads of one worker. */
  readonly maxPerWorker: number;
  readonly minPerWorker: number;
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
  /**
   * Hit rate of one infinite cache shared by the whole fleet: no policy can do better (the bound;
   * {@link Comparison.oracle} is a reference, not a bound).
   */
  readonly ceiling: number;
  /** Estimated requests per second the fleet sustains at the ceiling hit rate. */
  readonly capacity: number;
  readonly runs: readonly PolicyRun[];
  /**
   * The greedy-oracle run (`policy: 'greedy-oracle'`), present unless `comparePolicies` was
   * given `oracle: false` (`simulate` never runs it): the same fleet, arrivals and seed, routed
   * with perfect knowledge of every engine — its cache, the prompt blocks that the requests
   * already routed there will publish once their prefill is done, and its queue. Each request
   * goes to the worker with the smallest estimated time to first token, counting the tokens it
   * would have to compute there twice: it stays with the worker holding its prefix (a
   * conversation, a group's system prompt, even one still in prefill) unless waiting there costs
   * more than twice the prefill saved. Ties go to the longest match, the fewest in flight, the
   * emptiest cache, then the lowest index. It is a greedy reference, not an upper bound: policies
   * beat it — it buys its hit rate with queueing (its TTFT is often higher than
   * `cache_aware`'s), and on a long trace at many workers, or near capacity behind several
   * routers, following every shared prefix gathers traffic on a few workers whose caches then
   * evict more (see docs/simulator.md). The bound on hit rate is {@link Comparison.ceiling}.
   * The field keeps its name; comparisons written before this run was renamed carry
   * `policy: 'oracle'`.
   */
  readonly oracle?: PolicyRun;
  /**
   * Present when the comparison ran `cache_aware` with and without the engines' KV events
   * (`kvEvents`): the delivery delay (ms) and the share of batches lost of the runs labelled
   * `cache_aware+events`.
   */
  readonly kvEvents?: { readonly delayMs: number; readonly loss: number };
  /**
   * With a disaggregated fleet: its pools, transfer cost, decode policy and rule (every field
   * filled in), and the modes the runs used.
   */
  readonly disaggregation?: Required<Omit<SimDisaggregation, 'mode' | 'rule' | 'decodePolicy'>> & {
    readonly rule: Required<DisaggregationRule>;
    readonly modes: readonly DisaggregationMode[];
    /** The decode leg's policy of each mode run. */
    readonly decodePolicy: Readonly<Partial<Record<DisaggregationMode, PolicyName>>>;
  };
  /** Engine restarts in every run (see `SimulationOptions.engineRestarts`), when any. */
  readonly engineRestarts?: number;
  /** How the comparison was produced, when the caller recorded it (the CLI does). */
  readonly run?: RunInfo;
}

/**
 * How a {@link Comparison} was produced: filled by the `fleetroute` command, absent from a
 * comparison built through the API unless its caller adds it.
 *
 * @public
 */
export interface RunInfo {
  /** The command line as given, program name first (`['fleetroute', 'simulate', …]`). */
  readonly argv: readonly string[];
  /** The fleetroute version that ran it (`version` of its package.json). */
  readonly version: string;
}

/**
 * How the requests of one run fared at admission. Every request is served (it reached a worker)
 * or rejected (turned away with a reason): `served + rejected = requests`. The run's
 * {@link PolicyRun.ttftMs} then covers the served requests, from their arrival at the router (the
 * wait included).
 *
 * @public
 */
export interface AdmissionRun {
  /** Requests that reached a worker, at once or after waiting in a router's queue. */
  readonly served: number;
  /** Of them, those that waited in the queue first. */
  readonly servedAfterWait: number;
  /** Requests turned away, by reason (`shed`, `queue_full`, `timeout`). */
  readonly rejected: Readonly<Record<'shed' | 'queue_full' | 'timeout', number>>;
  /** Time in the router's queue of the served requests (0 for those admitted at once), ms. */
  readonly queueWaitMs: Percentiles;
  /** Per priority, highest first: requests, served, and the served ones' time to first token. */
  readonly byPriority: readonly {
    readonly priority: number;
    readonly requests: number;
    readonly served: number;
    readonly ttftMs: Percentiles;
  }[];
  /**
   * Per tenant (`''` for requests without one), in name order: requests, served, the share of
   * all requests' prompt tokens it sent, and its share of the prompt tokens served **while
   * saturated** — by the requests that left a router's queue (the queue holds requests only while
   * every worker is full) — 0 … 1.
   */
  readonly tenants: readonly {
    readonly tenant: string;
    readonly requests: number;
    readonly served: number;
    readonly offeredShare: number;
    readonly saturatedShare: number;
  }[];
}
