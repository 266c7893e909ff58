/**
 * `Transport`: the only way the router talks to workers. The core does no I/O of its own; the
 * caller supplies a transport (or uses the ready HTTP one from `fleetroute/http`).
 *
 * @module
 */
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';

/**
 * How the router reaches workers. Every method gets an `AbortSignal` that fires when the call's
 * timeout expires or the router closes: honour it, and settle soon after it fires. A method may
 * throw or reject; the router treats that as a failed probe or a missing report, never as fatal.
 *
 * @public
 */
export interface Transport {
  /** Whether the worker is healthy now (for vLLM and SGLang: `GET /health` answers 2xx). */
  probe(worker: Worker, signal: AbortSignal): Promise<boolean>;
  /** The worker's current load, or `undefined` when it reports none. */
  loads?(worker: Worker, signal: AbortSignal): Promise<LoadReport | undefined>;
  /** Model ids the worker serves (for vLLM and SGLang: `GET /v1/models`). */
  models?(worker: Worker, signal: AbortSignal): Promise<string[]>;
}
