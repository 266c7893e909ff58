/**
 * Every metric `fleetroute/prometheus` registers: its name (after the prefix), type, labels,
 * help text and buckets. One table, read by the adapter and checked against the docs.
 *
 * @module
 * @internal
 */

/** @internal A metric's type, as the adapter builds it. */
export type MetricKind = 'counter' | 'histogram' | 'gauge';

/** @internal One metric of the catalog. */
export interface MetricSpec {
  /** The name after the prefix (`decisions_total`). */
  readonly name: string;
  readonly kind: MetricKind;
  readonly labels: readonly string[];
  readonly help: string;
  /** Histograms: the upper bounds of the buckets (seconds, or a ratio). */
  readonly buckets?: readonly number[];
  /** Gauges: computed from the worker registry at each scrape (else set by events). */
  readonly scrape?: boolean;
}

/** Policy decision times: 1 µs … 10 ms. */
const SELECT_BUCKETS = [
  1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
];
/** Shares of a prompt: 0 … 1. */
const RATIO_BUCKETS = [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1];
/** LLM calls: 5 ms … 5 min. */
const ATTEMPT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
/**
 * Time to first token: 10 ms … 60 s (a cached prefix answers in tens of ms, a long prompt on a
 * queued engine in seconds, a saturated one in tens).
 */
const FIRST_TOKEN_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 10, 20, 30, 60];
/** Backoff delays: 1 ms … 30 s. */
const BACKOFF_BUCKETS = [0.001, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Load-polling rounds: 1 ms … 5 s. */
const POLL_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** @internal The catalog, in the order the metrics are registered. */
export const METRICS = {
  decisions: {
    name: 'decisions_total',
    kind: 'counter',
    labels: ['model', 'policy', 'branch'],
    help: 'Routing decisions, by model, policy and the branch the policy took.',
  },
  selections: {
    name: 'worker_selections_total',
    kind: 'counter',
    labels: ['worker', 'model'],
    help: 'Decisions that picked a worker, by worker URL and model.',
  },
  selectDuration: {
    name: 'select_duration_seconds',
    kind: 'histogram',
    labels: ['policy'],
    help: 'Time a policy took to pick a worker, in seconds.',
    buckets: SELECT_BUCKETS,
  },
  cacheMatch: {
    name: 'cache_match_ratio',
    kind: 'histogram',
    labels: ['model', 'policy'],
    help: 'Share of the prompt a prefix-matching policy found cached on the worker it scored (0-1).',
    buckets: RATIO_BUCKETS,
  },
  requests: {
    name: 'requests_total',
    kind: 'counter',
    labels: ['model', 'outcome'],
    help: 'Calls of execute, by model and how they ended (success, failed, error, no_worker, aborted, closed).',
  },
  requestDuration: {
    name: 'request_duration_seconds',
    kind: 'histogram',
    labels: ['outcome'],
    help: 'Time of a call of execute, retries and waits included, in seconds.',
    buckets: ATTEMPT_BUCKETS,
  },
  timeToFirstToken: {
    name: 'time_to_first_token_seconds',
    kind: 'histogram',
    labels: ['model'],
    help: 'Time from the start of a call of execute to its first output token, retries included, in seconds.',
    buckets: FIRST_TOKEN_BUCKETS,
  },
  promptTokens: {
    name: 'prompt_tokens_total',
    kind: 'counter',
    labels: ['model'],
    help: 'Prompt tokens of the answers, as the engines reported them, by model.',
  },
  completionTokens: {
    name: 'completion_tokens_total',
    kind: 'counter',
    labels: ['model'],
    help: 'Completion (output) tokens of the answers, as the engines reported them, by model.',
  },
  cachedPromptTokens: {
    name: 'cached_prompt_tokens_total',
    kind: 'counter',
    labels: ['model'],
    help: 'Prompt tokens the engines served from their prefix cache, by model (only engines that report them).',
  },
  attempts: {
    name: 'attempts_total',
    kind: 'counter',
    labels: ['worker', 'outcome'],
    help: 'Attempts of execute, by worker URL and outcome (success, status, error, aborted).',
  },
  attemptDuration: {
    name: 'attempt_duration_seconds',
    kind: 'histogram',
    labels: ['outcome'],
    help: 'Time from lease to outcome of an attempt, in seconds.',
    buckets: ATTEMPT_BUCKETS,
  },
  retries: {
    name: 'retries_total',
    kind: 'counter',
    labels: ['cause'],
    help: "Retries scheduled by execute, by the failed attempt's cause (status, error).",
  },
  retryBackoff: {
    name: 'retry_backoff_seconds',
    kind: 'histogram',
    labels: [],
    help: 'Delay before a retry, in seconds.',
    buckets: BACKOFF_BUCKETS,
  },
  noWorker: {
    name: 'no_worker_total',
    kind: 'counter',
    labels: ['model', 'reason'],
    help: 'Requests no worker was available for, by model and reason (unknown_model, unavailable).',
  },
  healthChecks: {
    name: 'health_checks_total',
    kind: 'counter',
    labels: ['worker', 'result'],
    help: 'Health probes, by worker URL and result (ok, fail, timeout).',
  },
  statusTransitions: {
    name: 'worker_status_transitions_total',
    kind: 'counter',
    labels: ['worker', 'from', 'to'],
    help: 'Worker status changes, by worker URL, old and new status.',
  },
  circuitTransitions: {
    name: 'circuit_transitions_total',
    kind: 'counter',
    labels: ['worker', 'from', 'to'],
    help: 'Circuit breaker transitions, by worker URL, old and new state.',
  },
  loadPolls: {
    name: 'load_polls_total',
    kind: 'counter',
    labels: ['result'],
    help: 'Worker load polls, by result (ok: a report arrived; fail: none did).',
  },
  loadPollDuration: {
    name: 'load_poll_duration_seconds',
    kind: 'histogram',
    labels: [],
    help: 'Duration of a load-polling round, in seconds.',
    buckets: POLL_BUCKETS,
  },
  staleReports: {
    name: 'load_reports_stale',
    kind: 'gauge',
    labels: [],
    help: 'Ready workers whose last load report is older than staleAfterMs, as of the last polling round.',
  },
  oldestReportAge: {
    name: 'load_report_oldest_age_seconds',
    kind: 'gauge',
    labels: [],
    help: 'Age of the oldest last load report among the ready workers, as of the last polling round, in seconds.',
  },
  sharedStateTransitions: {
    name: 'shared_state_transitions_total',
    kind: 'counter',
    labels: ['part', 'state'],
    help: 'Shared state parts (loads, sessions, prefixIndex) changing to degraded or back to ok.',
  },
  sharedStateDegraded: {
    name: 'shared_state_degraded',
    kind: 'gauge',
    labels: ['part'],
    help: '1 while a part of shared state routes on local state alone (degraded), 0 once it recovered.',
  },
  admissions: {
    name: 'admissions_total',
    kind: 'counter',
    labels: ['model', 'outcome', 'reason'],
    help: 'Requests through admission control, by model, outcome (admitted, rejected, aborted, closed) and reason (shed, queue_full, timeout, busy; none for the others).',
  },
  admissionWait: {
    name: 'admission_wait_seconds',
    kind: 'histogram',
    labels: ['outcome'],
    help: 'Time a request waited in the admission queue before it left it, by outcome, in seconds.',
    buckets: FIRST_TOKEN_BUCKETS,
  },
  admissionQueued: {
    name: 'admission_queued_requests',
    kind: 'gauge',
    labels: [],
    help: 'Requests waiting in the admission queue, every model together.',
    scrape: true,
  },
  circuitState: {
    name: 'worker_circuit_state',
    kind: 'gauge',
    labels: ['worker'],
    help: "A worker's circuit breaker state: 0 closed, 1 open, 2 half_open.",
    scrape: true,
  },
  up: {
    name: 'worker_up',
    kind: 'gauge',
    labels: ['worker'],
    help: '1 when the worker is ready, else 0.',
    scrape: true,
  },
  status: {
    name: 'worker_status',
    kind: 'gauge',
    labels: ['worker', 'status'],
    help: "1 for the worker's status, 0 for the other statuses.",
    scrape: true,
  },
  inFlight: {
    name: 'worker_in_flight_requests',
    kind: 'gauge',
    labels: ['worker'],
    help: "Requests in flight on the worker (leases taken and not released; with shared state, other routers' too).",
    scrape: true,
  },
  prefilling: {
    name: 'worker_prefilling_requests',
    kind: 'gauge',
    labels: ['worker'],
    help: "Requests in flight on the worker still awaiting their first token (with shared state, other routers' too).",
    scrape: true,
  },
  workers: {
    name: 'workers',
    kind: 'gauge',
    labels: ['model', 'status'],
    help: 'Workers serving each model (by name or as a wildcard), by status.',
    scrape: true,
  },
} as const satisfies Record<string, MetricSpec>;

/** @internal A key of {@link METRICS}. */
export type MetricKey = keyof typeof METRICS;
