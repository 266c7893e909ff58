/**
 * What a router's admission control reports: the outcome of each request (the `admission`
 * observation event) and its figures (`Router.stats().admission`).
 *
 * @module
 */
import type { SaturatedReason } from '../core/errors.js';

/**
 * How one request fared at admission (the `admission` observation event):
 *
 * - `admitted`: a worker had room, at once or after a wait in the queue (`waitedMs`);
 * - `rejected`: turned away with `SATURATED` (`reason`: `shed`, `queue_full`, `timeout` or `busy`);
 * - `aborted`: its caller's signal ended its wait (it left the queue at once);
 * - `closed`: the router closed while it waited (`CLOSED`).
 *
 * @public
 */
export interface AdmissionEvent {
  readonly type: 'admission';
  readonly model: string | undefined;
  readonly outcome: 'admitted' | 'rejected' | 'aborted' | 'closed';
  /** For `rejected`: how it was turned away. */
  readonly reason: SaturatedReason | undefined;
  readonly priority: number;
  /** Whether it waited in the queue. */
  readonly queued: boolean;
  /** How long it waited in the queue (ms; 0 when it did not). */
  readonly waitedMs: number;
  /** Requests left in the router's queues after this one. */
  readonly depth: number;
}

/** Figures of a router's admission, from `Router.stats()`. @public */
export interface AdmissionStats {
  /** Requests waiting now, every pool together. */
  readonly queued: number;
  /** Requests admitted at once. */
  readonly admitted: number;
  /** Requests admitted after a wait in the queue. */
  readonly admittedAfterWait: number;
  /** Requests turned away, by reason. */
  readonly rejected: Readonly<Record<SaturatedReason, number>>;
  /** Waits their callers aborted. */
  readonly aborted: number;
  /** Waits ended by `close()`. */
  readonly closed: number;
}
