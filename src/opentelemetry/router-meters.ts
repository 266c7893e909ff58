/**
 * `RouterMeters`: a router's observation events as OpenTelemetry metrics — decisions, attempts,
 * retries, select time — and the duration of each traced call.
 *
 * @module
 * @internal
 */
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { AttemptEvent, DecisionEvent, RetryScheduledEvent } from '../router/observations.js';
import type {
  OpenTelemetryAttributes,
  OpenTelemetryCounter,
  OpenTelemetryHistogram,
  OpenTelemetryMeter,
} from './api-types.js';
import { boundedErrorType, serverOf } from './attributes.js';

/** The GenAI conventions' buckets for `gen_ai.client.operation.duration` (s). */
const OPERATION_BUCKETS = [
  0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];

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
  readonly #attempts: OpenTelemetryCounter;
  readonly #retries: OpenTelemetryCounter;
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

  /** Records one traced call's duration. */
  operation(end: OperationEnd): void {
    const attributes: OpenTelemetryAttributes = { ...this.#operationBase };
    const model = this.knownModel(end.model);
    if (model !== undefined) attributes['gen_ai.request.model'] = model;
    if (end.errorType !== undefined) attributes['error.type'] = boundedErrorType(end.errorType);
    this.#operation.record(end.seconds, attributes);
  }

  /** `model` when the `workers` registry serves it by name; `undefined` otherwise. Cost: O(models). */
  knownModel(model: string | undefined): string | undefined {
    if (model === undefined || this.#workers === undefined) return undefined;
    return this.#workers.getModels().includes(model) ? model : undefined;
  }
}
