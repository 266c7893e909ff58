/**
 * fleetroute: route LLM inference requests across a fleet of model-server workers.
 *
 * @packageDocumentation
 */

export type { AdmissionEvent, AdmissionStats } from './admission/admission-events.js';
export type { AdmissionConfig } from './admission/admission-options.js';
export type { BlockHashOptions } from './cache/block-hashes.js';
export { blockHashes } from './cache/block-hashes.js';
export type { KvEvent } from './cache/kv-event-store.js';
export type { TenantTreeStats } from './cache/radix-tree.js';
export type { FleetRouteErrorCode, NoWorkerReason, SaturatedReason } from './core/errors.js';
export { ERROR_MESSAGES, FleetRouteError } from './core/errors.js';
export type { RequestHeaders } from './core/headers.js';
export type { Logger, LogLevel, WarningCode } from './core/logger.js';
export type { AdapterAwareConfig, AdapterSelector } from './policies/adapter-aware.js';
export { adapterAware } from './policies/adapter-aware.js';
export type { BucketConfig } from './policies/bucket.js';
export { BucketPolicy } from './policies/bucket.js';
export type {
  CacheAwareConfig,
  CacheAwareReason,
  CacheAwareStats,
} from './policies/cache-aware.js';
export { CacheAwarePolicy } from './policies/cache-aware.js';
export type { DisaggregationRule } from './policies/conditional-disaggregation.js';
export type { ConsistentHashingConfig } from './policies/consistent-hashing.js';
export { ConsistentHashingPolicy } from './policies/consistent-hashing.js';
export type { PolicyClassMap, PolicyConfigMap } from './policies/create-policy.js';
export { createPolicy, POLICY_NAMES } from './policies/create-policy.js';
export type { LeastLoadConfig } from './policies/least-load.js';
export { LeastLoadPolicy } from './policies/least-load.js';
export type { ManualConfig, ManualMode } from './policies/manual.js';
export { MANUAL_MODES, ManualPolicy } from './policies/manual.js';
export type { PassthroughConfig } from './policies/passthrough.js';
export { PassthroughPolicy } from './policies/passthrough.js';
export type {
  Policy,
  PolicyExplanation,
  PolicyName,
  PredictedTtft,
  RequestLeg,
  SelectRequest,
  WorkerRestart,
} from './policies/policy.js';
export { ROUTING_KEY_HEADER, TARGET_WORKER_HEADER } from './policies/policy.js';
export type { PowerOfTwoConfig } from './policies/power-of-two.js';
export { PowerOfTwoPolicy } from './policies/power-of-two.js';
export type { PrefixHashConfig } from './policies/prefix-hash.js';
export { PrefixHashPolicy } from './policies/prefix-hash.js';
export type { RandomConfig } from './policies/random.js';
export { RandomPolicy } from './policies/random.js';
export type { RoundRobinConfig } from './policies/round-robin.js';
export { RoundRobinPolicy } from './policies/round-robin.js';
export type { PairPolicies, WorkerPair } from './policies/select-pair.js';
export { selectPair } from './policies/select-pair.js';
export type { CommonPolicyConfig } from './policies/support/config.js';
export type { StreamItem } from './registry/event-stream.js';
export type {
  EventsOptions,
  RegisterOrReplaceResult,
  RegistrySnapshot,
  RegistryStats,
  RevisionOptions,
  StatusTransition,
  TransitionOptions,
  WorkerRegistryOptions,
} from './registry/registry-options.js';
export type {
  LaggedEvent,
  WorkerEvent,
  WorkerEventMap,
  WorkerEventType,
  WorkerRegisteredEvent,
  WorkerRemovedEvent,
  WorkerReplacedEvent,
  WorkerStatusChangedEvent,
} from './registry/worker-event.js';
export { WorkerRegistry } from './registry/worker-registry.js';
export type { CircuitBreakerSnapshot, CircuitState } from './resilience/circuit-breaker.js';
export { CircuitBreaker } from './resilience/circuit-breaker.js';
export type {
  CircuitBreakerConfig,
  CircuitWindowConfig,
  ResolvedCircuitBreakerConfig,
} from './resilience/circuit-breaker-config.js';
export { DEFAULT_FAILURE_STATUSES } from './resilience/circuit-breaker-config.js';
export type { Clock } from './resilience/clock.js';
export { monotonicClock } from './resilience/clock.js';
export type { HealthConfig, ResolvedHealthConfig } from './resilience/health-config.js';
export type { ResolvedRetryConfig, RetryConfig } from './resilience/retry-config.js';
export type { HashRingOptions, RingAccept, RingLoadOf } from './ring/hash-ring.js';
export { DEFAULT_VIRTUAL_NODES, HashRing } from './ring/hash-ring.js';
export type {
  AttemptEvent,
  CircuitChangedEvent,
  DecisionEvent,
  ExecutedEvent,
  FirstTokenEvent,
  LoadsPolledEvent,
  NoWorkerEvent,
  ProbeEvent,
  RetryScheduledEvent,
  RouterEventMap,
  RouterObservation,
  RouterObservationType,
  UsageEvent,
  WorkerRestartedEvent,
  WorkerStatusEvent,
} from './router/observations.js';
export type { ReadyOptions } from './router/readiness.js';
export { backoffDelay } from './router/retry.js';
export type {
  AttemptContext,
  RetryDecision,
  RetryErrorOutcome,
  RetryEvent,
  RetryOutcome,
  RetryStatusOutcome,
  ShouldRetry,
  TokenUsage,
} from './router/retry-decision.js';
export { defaultShouldRetry } from './router/retry-decision.js';
export type { LeasePair, RouterStats } from './router/router.js';
export { Router } from './router/router.js';
export type {
  LoadPollingConfig,
  ResolvedLoadPollingConfig,
  RouterOptions,
  RouterRetryConfig,
} from './router/router-options.js';
export type {
  RouterSharedState,
  SharedStateEvent,
  SharedStateHost,
} from './router/shared-state.js';
export type { MemorySharedStoreOptions } from './shared/memory-store.js';
export { MemorySharedStore } from './shared/memory-store.js';
export { SharedState } from './shared/shared-state.js';
export type {
  SharedLoadsConfig,
  SharedPrefixIndexConfig,
  SharedSessionsConfig,
  SharedStateOptions,
} from './shared/shared-state-options.js';
export type {
  SharedLoadStats,
  SharedLookupStats,
  SharedStateStats,
} from './shared/shared-state-stats.js';
export type {
  LoadEntry,
  LoadSync,
  LoadSyncReply,
  PrefixHolder,
  SessionRecord,
  SharedStore,
} from './shared/shared-store.js';
export type { Transport } from './transport/transport.js';
export {
  DATA_PARALLEL_RANK_HEADER,
  type DataParallelHint,
  dataParallelHint,
} from './workers/data-parallel.js';
export type { LeaseOutcome } from './workers/lease-state.js';
export type { AdapterReport, LoadReport } from './workers/load-report.js';
export { MAX_ADAPTERS_PER_REPORT } from './workers/load-report.js';
export type { RoutingState, WorkerInfo } from './workers/worker.js';
export { Worker, WorkerLease } from './workers/worker.js';
export type { RuntimeType, WorkerSpec, WorkerStatus, WorkerType } from './workers/worker-spec.js';
export {
  CONNECTION_MODES,
  MAX_MODEL_ID_LENGTH,
  MAX_MODELS_PER_WORKER,
  RUNTIME_TYPES,
  WORKER_STATUSES,
  WORKER_TYPES,
} from './workers/worker-spec.js';
export type { ConnectionMode, ParsedWorkerUrl } from './workers/worker-url.js';
export { MAX_URL_LENGTH, parseWorkerUrl } from './workers/worker-url.js';
