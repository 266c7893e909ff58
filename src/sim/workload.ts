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
  /**
   * The LoRA adapter the request asks for (its name, at most 256 characters): the router sees it
   * as the request's `model`; an engine loads the adapter into one of its `maxLoras` slots
   * before the request runs, and keys its prefix cache by it. @defaultValue none: the base model
   */
  readonly adapter?: string;
  /** The affinity key a client would send (a group, user or session id). */
  readonly routingKey?: string;
  /**
   * The priority a client would send (`SelectRequest.priority`: an integer in ±1,000,000, higher
   * first; with admission on, negative ones are shed first while saturated).
   * `SimulationOptions.lowPriorityShare` overrides it for the requests it draws.
   * @defaultValue 0
   */
  readonly priority?: number;
  /**
   * The tenant a client would send (`SelectRequest.tenant`, at most 256 characters), which
   * admission shares room fairly between. `SimulationOptions.tenants` overrides it.
   * @defaultValue none
   */
  readonly tenant?: string;
  /** Arrival time in ms from the start, for trace-driven arrivals. */
  readonly timestamp?: number;
  /**
   * The id of a request that must complete before this one is sent (the previous turn of a
   * conversation). It then arrives at `max(its own arrival, that completion + delayMs)`.
   */
  readonly after?: number;
  /**
   * Think time, ms: how long after the completion of `after` the request is sent (a user
   * reading the answer, a tool running). Only with `after`; a finite number ≥ 0.
   * @defaultValue 0
   */
  readonly delayMs?: number;
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

/**
 * @internal The key of a workload's {@link WorkloadRecipe}: a non-enumerable property, so a
 * spread copy (`{ ...workload, requests: fewer }`) never carries a recipe that no longer fits.
 * `Symbol.for`, so the ESM and CJS builds read each other's workloads.
 */
export const WORKLOAD_RECIPE: unique symbol = Symbol.for('fleetroute.workload.recipe');

/**
 * @internal How to build a workload again elsewhere (in a worker thread): the generator and its
 * resolved options, or the Mooncake trace (its text, or the path it was read from) and the
 * reader's resolved options. Plain data only, so it can be posted to another thread.
 */
export type WorkloadRecipe =
  | {
      readonly generator: 'shared-prefix' | 'chat' | 'hot-prefix' | 'zero-reuse' | 'agent' | 'lora';
      readonly options: Readonly<Record<string, number | boolean>>;
    }
  | {
      readonly generator: 'mooncake';
      readonly source: { readonly text: string } | { readonly path: string };
      readonly options: Readonly<Record<string, number | string | undefined>>;
    };

/** @internal The recipe a built-in generator or the trace reader gave `workload`, if any. O(1). */
export function recipeOf(workload: Workload): WorkloadRecipe | undefined {
  const own = Object.getOwnPropertyDescriptor(workload, WORKLOAD_RECIPE);
  return own === undefined ? undefined : (own.value as WorkloadRecipe);
}
