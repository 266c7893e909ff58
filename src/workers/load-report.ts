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
  /**
   * The LoRA adapters the engine reports (vLLM's `vllm:lora_requests_info`, and its residency
   * gauges where served): absent when the engine says nothing of adapters. Read by
   * `adapterAware` to route an adapter's requests where it is loaded.
   */
  readonly adapters?: AdapterReport;
}

/**
 * What an engine tells of its LoRA adapters. Names are model ids (at most
 * `MAX_MODEL_ID_LENGTH` characters; at most `MAX_ADAPTERS_PER_REPORT` per list); a reader drops
 * any other entry.
 *
 * @public
 */
export interface AdapterReport {
  /** Adapters with requests running (vLLM's `running_lora_adapters`). */
  readonly running: readonly string[];
  /** Adapters with requests waiting (vLLM's `waiting_lora_adapters`). */
  readonly waiting: readonly string[];
  /**
   * Adapters loaded in GPU memory, idle ones included (vLLM's `vllm:lora_adapter_loaded` with
   * `level="gpu"`); absent when the engine does not say (then `running` and `waiting` are all
   * that is known: an idle resident adapter is not listed).
   */
  readonly resident?: readonly string[];
  /**
   * Adapter slots in GPU memory (vLLM's `vllm:max_gpu_lora_adapters`, else the `max_lora` label,
   * the `--max-loras` flag); absent when unknown.
   */
  readonly maxAdapters?: number;
}

/** Most names one {@link AdapterReport} list holds; a reader drops the rest. @public */
export const MAX_ADAPTERS_PER_REPORT = 1024;
