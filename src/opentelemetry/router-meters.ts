/**
 * `RouterMeters`: a router's observation events as OpenTelemetry metrics — decisions, attempts,
 * retries, select time, time to first chunk, token usage — the duration of each traced call, and
 * each worker's in-flight and prefilling requests, observed at collection.
 *
 * @module
 * @internal
 */
import type { AdmissionEvent } from '../admission/admission-events.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type {
  AttemptEvent,
  DecisionEvent,
  FirstTokenEvent,
  RetryScheduledEvent,
  UsageEvent,
} from '../router/observations.js';
import type { Worker } from '../workers/worker.js';
import type {
  OpenTelemetryAttributes,
  OpenTelemetryCounter,
  OpenTelemetryHistogram,
  OpenTelemetryMeter,
  OpenTelemetryObservable,
  OpenTelemetryObservableResult,
} from './api-types.js';
import { boundedErrorType, serverOf } from './attributes.js';

/**
 * The GenAI conventions' buckets for `gen_ai.client.operation.duration`, also those of
 * `gen_ai.client.operation.time_to_first_chunk` (s).
 */
const OPERATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

/** The GenAI conventions' buckets for `gen_ai.client.token.usage` ({token}). */
const TOKEN_BUCKETS = [
  1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
];

/** @internal The instrument names this module creates, as the docs list them. */
export const METER_NAMES = {
  timeToFirstChunk: 'gen_ai.client.operation.time_to_first_chunk',
  tokenUsage: 'gen_ai.client.token.usage',
  cachedInputTokens: 'fleetroute.usage.cache_read.input_tokens',
  inFlight: 'fleetroute.worker.in_flight',
  prefilling: 'fleetroute.worker.prefilling',
} as const;

/** A policy decides in microseconds: buckets from 1 µs to 10 ms (s). */
const SELECT_BUCKETS = [
  1e-6, 2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4, 2.5e-4, 5e-4, 1e-3, 2.5e-3, 5e-3, 1e-2,
];

/** @internal What a traced call ended with, for `gen_ai.client.operation.duration`. */
export interface OperationEnd {
  readonly model: string | undefined;
  /** `undefined`: it succeeded. */
  readonly errorType: string | undefined;
  readonly seconds: number;
}

/**
 * @internal The instruments, created once on one meter, and the listeners that feed them. Every
 * attribute value comes from registry data (a worker's address, a model the `workers` registry
 * serves, the policy and its branch) or a fixed set (outcome, cause, `error.type`), never from a
 * request. Cost per event: one attributes object and one instrument call.
 */
export class RouterMeters {
  readonly #decisions: OpenTelemetryCounter;
  readonly #firstChunk: OpenTelemetryHistogram;
  readonly #tokens: OpenTelemetryHistogram;
  readonly #cached: OpenTelemetryCounter;
  /** The per-worker instruments and their callbacks; none without `workers` or an observable API. */
  readonly #observed: [OpenTelemetryObservable, (result: OpenTelemetryObservableResult) => void][] =
    [];
  readonly #attempts: OpenTelemetryCounter;
  readonly #retries: OpenTelemetryCounter;
  readonly #admissions: OpenTelemetryCounter;
  readonly #select: OpenTelemetryHistogram;
  readonly #operation: OpenTelemetryHistogram;
  readonly #workers: WorkerRegistry | undefined;
  /** The attributes every operation point carries. */
  readonly #operationBase: OpenTelemetryAttributes;

  constructor(
    meter: OpenTelemetryMeter,
    workers: WorkerRegistry | undefined,
    operationBase: OpenTelemetryAttributes,
  ) {
    this.#workers = workers;
    this.#operationBase = operationBase;
    this.#decisions = meter.createCounter('fleetroute.decisions', {
      description: 'Routing decisions, by policy, branch and model',
      unit: '{decision}',
    });
    this.#attempts = meter.createCounter('fleetroute.attempts', {
      description: 'Attempts of Router.execute, by outcome and worker',
      unit: '{attempt}',
    });
    this.#retries = meter.createCounter('fleetroute.retries', {
      description: 'Retries scheduled by Router.execute, by cause',
      unit: '{retry}',
    });
    this.#admissions = meter.createCounter('fleetroute.admissions', {
      description: 'Requests through admission control, by outcome and reason',
      unit: '{request}',
    });
    this.#select = meter.createHistogram('fleetroute.select.duration', {
      description: 'Time a policy took to pick a worker',
      unit: 's',
      advice: { explicitBucketBoundaries: SELECT_BUCKETS },
    });
    this.#operation = meter.createHistogram('gen_ai.client.operation.duration', {
      description: 'Duration of a routed call, all attempts included',
      unit: 's',
      advice: { explicitBucketBoundaries: OPERATION_BUCKETS },
    });
    this.#firstChunk = meter.createHistogram(METER_NAMES.timeToFirstChunk, {
      description:
        'Time from the start of a routed call to its first output token, retries included',
      unit: 's',
      advice: { explicitBucketBoundaries: OPERATION_BUCKETS },
    });
    this.#tokens = meter.createHistogram(METER_NAMES.tokenUsage, {
      description: 'Input and output tokens of an answer, as the engine reported them',
      unit: '{token}',
      advice: { explicitBucketBoundaries: TOKEN_BUCKETS },
    });
    this.#cached = meter.createCounter(METER_NAMES.cachedInputTokens, {
      description: "Input tokens served from the engine's prefix cache",
      unit: '{token}',
    });
    if (workers !== undefined && typeof meter.createObservableUpDownCounter === 'function') {
      this.#observe(
        meter.createObservableUpDownCounter(METER_NAMES.inFlight, {
          description: 'Requests in flight on a worker (leases taken and not released)',
          unit: '{request}',
        }),
        workers,
        (w) => w.load,
      );
      this.#observe(
        meter.createObservableUpDownCounter(METER_NAMES.prefilling, {
          description: 'Requests in flight on a worker still awaiting their first token',
          unit: '{request}',
        }),
        workers,
        (w) => w.prefilling,
      );
    }
  }

  /** Removes the per-worker callbacks: those instruments report nothing more. Idempotent. */
  close(): void {
    for (const [instrument, callback] of this.#observed.splice(0))
      instrument.removeCallback(callback);
  }

  /** The `decision` listener: one decision counted, its select time recorded. */
  readonly decision = (event: DecisionEvent): void => {
    const attributes: OpenTelemetryAttributes = { 'fleetroute.policy': event.policy };
    if (event.branch !== undefined) attributes['fleetroute.branch'] = event.branch;
    const model = this.knownModel(event.model);
    if (model !== undefined) attributes['gen_ai.request.model'] = model;
    this.#decisions.add(1, attributes);
    this.#select.record(event.durationMs / 1000, attributes);
  };

  /** The `attempt` listener. */
  readonly attempt = (event: AttemptEvent): void => {
    const attributes: OpenTelemetryAttributes = { 'fleetroute.outcome': event.outcome };
    const server = serverOf(event.worker);
    if (server !== undefined) {
      attributes['server.address'] = server.address;
      attributes['server.port'] = server.port;
    }
    this.#attempts.add(1, attributes);
  };

  /** The `retry` listener. */
  readonly retry = (event: RetryScheduledEvent): void => {
    this.#retries.add(1, { 'fleetroute.retry.cause': event.cause });
  };

  /** The `admission` listener: one request's outcome at admission (and why it was turned away). */
  readonly admission = (event: AdmissionEvent): void => {
    const attributes: OpenTelemetryAttributes = { 'fleetroute.outcome': event.outcome };
    if (event.reason !== undefined) attributes['fleetroute.admission.reason'] = event.reason;
    const model = this.knownModel(event.model);
    if (model !== undefined) attributes['gen_ai.request.model'] = model;
    this.#admissions.add(1, attributes);
  };

  /** The `firstToken` listener: the call's wait for its first token. */
  readonly firstToken = (event: FirstTokenEvent): void => {
    this.#firstChunk.record(event.timeToFirstTokenMs / 1000, this.#modelPoint(event.model));
  };

  /** The `usage` listener: input and output tokens, and the cached input tokens when reported. */
  readonly usage = (event: UsageEvent): void => {
    const attributes = this.#modelPoint(event.model);
    this.#tokens.record(event.promptTokens, { ...attributes, 'gen_ai.token.type': 'input' });
    this.#tokens.record(event.completionTokens, { ...attributes, 'gen_ai.token.type': 'output' });
    if (event.cachedTokens !== undefined) this.#cached.add(event.cachedTokens, attributes);
  };

  /** Records one traced call's duration. */
  operation(end: OperationEnd): void {
    const attributes = this.#modelPoint(end.model);
    if (end.errorType !== undefined) attributes['error.type'] = boundedErrorType(end.errorType);
    this.#operation.record(end.seconds, attributes);
  }

  /** The operation's attributes, with the model when `workers` serves it by name. */
  #modelPoint(model: string | undefined): OpenTelemetryAttributes {
    const attributes: OpenTelemetryAttributes = { ...this.#operationBase };
    const known = this.knownModel(model);
    if (known !== undefined) attributes['gen_ai.request.model'] = known;
    return attributes;
  }

  /**
   * Reports `read(worker)` for every worker of `workers` at each collection, summed by
   * `server.address` and `server.port` (two workers behind one address report one point).
   * Cost per collection: O(workers).
   */
  #observe(
    instrument: OpenTelemetryObservable,
    workers: WorkerRegistry,
    read: (worker: Worker) => number,
  ): void {
    const callback = (result: OpenTelemetryObservableResult): void => {
      const points = new Map<string, { attributes: OpenTelemetryAttributes; value: number }>();
      for (const worker of workers.getAll()) {
        const server = serverOf(worker);
        const key = server === undefined ? '' : `${server.address}\u0000${server.port}`;
        const point = points.get(key);
        if (point !== undefined) point.value += read(worker);
        else {
          const attributes: OpenTelemetryAttributes =
            server === undefined
              ? {}
              : { 'server.address': server.address, 'server.port': server.port };
          points.set(key, { attributes, value: read(worker) });
        }
      }
      for (const { attributes, value } of points.values()) result.observe(value, attributes);
    };
    instrument.addCallback(callback);
    this.#observed.push([instrument, callback]);
  }

  /** `model` when the `workers` registry serves it by name; `undefined` otherwise. Cost: O(models). */
  knownModel(model: string | undefined): string | undefined {
    if (model === undefined || this.#workers === undefined) return undefined;
    return this.#workers.getModels().includes(model) ? model : undefined;
  }
}
