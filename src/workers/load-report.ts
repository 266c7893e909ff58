/**
 * `LoadReport`: one worker's load as its engine reports it — what a transport reads and what the
 * load-aware policies consume.
 *
 * @module
 */

/**
 * One worker's polled load. Every field is optional; a negative or non-finite value is ignored
 * as if absent.
 *
 * @public
 */
export interface LoadReport {
  /** KV-cache usage, 0 … 1 (values above 1 are read as 1). */
  readonly tokenUsage?: number;
  /** Prompt tokens waiting to be prefilled. */
  readonly queuedTokens?: number;
  /** Requests running. */
  readonly runningRequests?: number;
  /** Requests waiting in the engine's queue. */
  readonly waitingRequests?: number;
  /** Generated tokens per second. */
  readonly throughput?: number;
  /** When the observation was made (ms, caller's clock); informational. */
  readonly at?: number;
  /**
   * When the engine's process started (ms since the epoch), as its metrics tell it (vLLM's
   * `process_start_time_seconds`). A router compares it per worker between reports: a change from
   * a value it saw before means the engine restarted, and its prefix cache is empty (the first
   * value seen is not a restart).
   */
  readonly startedAt?: number;
}
