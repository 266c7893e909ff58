/**
 * What the simulator replays: a list of requests with their prompt tokens, output lengths and
 * the affinity key a real client would send.
 *
 * @module
 */

/**
 * One request of a workload.
 *
 * @public
 */
export interface SimRequest {
  /** Position in the workload, from 0. */
  readonly id: number;
  /** Prompt length in tokens (`tokens().length`). */
  readonly promptLength: number;
  /**
   * The prompt's token ids. Generated workloads return a stored array; a trace builds it on each
   * call from its block ids, so a long trace never holds every prompt in memory at once.
   */
  tokens(): Uint32Array;
  /** Tokens to generate (at least 1). */
  readonly outputLength: number;
  /**
   * The generated token ids, when the workload knows them (a chat answer that the next turn
   * repeats). The engine caches prompt + output at completion when given; otherwise only the
   * prompt stays cached.
   */
  readonly outputTokens?: Uint32Array;
  /** The affinity key a client would send (a group, user or session id). */
  readonly routingKey?: string;
  /** Arrival time in ms from the start, for trace-driven arrivals. */
  readonly timestamp?: number;
  /**
   * The id of a request that must complete before this one is sent (the previous turn of a
   * conversation). It then arrives at `max(its own arrival, that completion)`.
   */
  readonly after?: number;
}

/**
 * A named list of requests, in the order a client would send them.
 *
 * @public
 */
export interface Workload {
  /** Short name (`shared-prefix`, `chat`, …). */
  readonly name: string;
  /** One line for reports. */
  readonly description: string;
  /** The requests; `requests[i].id === i`. */
  readonly requests: readonly SimRequest[];
  /** The generator's parameters, for reports. */
  readonly parameters: Readonly<Record<string, number | string>>;
}
