/**
 * The registry's event types: one event per successful mutation.
 *
 * @module
 */
import type { Worker } from '../workers/worker.js';
import type { WorkerStatus } from '../workers/worker-spec.js';

interface EventBase {
  /** 1 for the registry's first event, +1 for each later one. Compare with `snapshot().seq`. */
  readonly seq: number;
  /** The worker the event is about. */
  readonly workerId: string;
}

/** A worker joined the registry. `status` is its status at that moment. @public */
export interface WorkerRegisteredEvent extends EventBase {
  readonly type: 'registered';
  readonly worker: Worker;
  readonly status: WorkerStatus;
}

/** A worker left the registry. `worker` is its last revision, now with `live === false`. @public */
export interface WorkerRemovedEvent extends EventBase {
  readonly type: 'removed';
  readonly worker: Worker;
}

/** A worker's spec was replaced (same id, same URL, `revision` + 1). @public */
export interface WorkerReplacedEvent extends EventBase {
  readonly type: 'replaced';
  readonly old: Worker;
  readonly new: Worker;
}

/** A worker's status changed from `from` to `to` (never equal). @public */
export interface WorkerStatusChangedEvent extends EventBase {
  readonly type: 'statusChanged';
  readonly worker: Worker;
  readonly from: WorkerStatus;
  readonly to: WorkerStatus;
}

/**
 * Everything the registry reports, discriminated on `type`. Per worker id, `registered` comes
 * first and `removed` last. `Worker` objects in events are the live handles; their `toJSON()`
 * never includes the API key.
 *
 * @public
 */
export type WorkerEvent =
  | WorkerRegisteredEvent
  | WorkerRemovedEvent
  | WorkerReplacedEvent
  | WorkerStatusChangedEvent;

/** The `type` of a {@link WorkerEvent}. @public */
export type WorkerEventType = WorkerEvent['type'];

/**
 * Yielded by {@link WorkerRegistry.events} when the consumer fell behind and `missed` events
 * were dropped (the oldest first). Resynchronise from `registry.snapshot()`, then keep reading;
 * events with `seq <= snapshot.seq` are already reflected in the snapshot.
 *
 * @public
 */
export interface LaggedEvent {
  readonly type: 'lagged';
  readonly missed: number;
}

/** Listener signatures for `registry.on(...)`. @public */
export interface WorkerEventMap {
  event: (event: WorkerEvent) => void;
  registered: (event: WorkerRegisteredEvent) => void;
  removed: (event: WorkerRemovedEvent) => void;
  replaced: (event: WorkerReplacedEvent) => void;
  statusChanged: (event: WorkerStatusChangedEvent) => void;
}
