/**
 * What a `KvEventSubscriber` feeds, what it tells of its stream and what it counts: the types a
 * caller of `fleetroute/kv-events` reads.
 *
 * @module
 */
import type { KvEvent } from '../cache/kv-event-store.js';
import type { KvEventTranslatorStats } from './translator.js';

/**
 * What a {@link KvEventSubscriber} feeds: `cache_aware`'s event mode, or anything with its
 * `applyKvEvents`.
 *
 * @public
 */
export interface KvEventTarget {
  applyKvEvents(workerUrl: string, events: readonly KvEvent[]): void;
}

/**
 * What happened to a subscriber's stream, as {@link KvEventSubscriberOptions.onEvent} hears it
 * (for metrics and alerts; `stats()` counts the same). Every event names the worker and the
 * endpoint.
 *
 * - `connected`: a publisher is there — its ZMTP handshake succeeded, or its first message came
 *   (a program that accepts the TCP connection and says nothing is no publisher);
 * - `disconnected`: a connected publisher's connection was lost (this clears the worker's
 *   blocks; a connection that never reached `connected` ends silently);
 * - `gap`: batches `from` … `to` were lost; `filled` when a replay brought them, else the
 *   worker's blocks were cleared;
 * - `restart`: the engine's sequence went backwards (cleared);
 * - `dropped`: a message was dropped (`reason`; an undecodable batch also clears);
 * - `targetError`: the target threw while events were applied (cleared).
 *
 * @public
 */
export type KvSubscriberEvent =
  | {
      readonly type: 'connected' | 'disconnected' | 'restart';
      readonly workerUrl: string;
      readonly endpoint: string;
    }
  | {
      readonly type: 'gap';
      readonly workerUrl: string;
      readonly endpoint: string;
      readonly from: bigint;
      readonly to: bigint;
      readonly filled: boolean;
    }
  | {
      readonly type: 'dropped';
      readonly workerUrl: string;
      readonly endpoint: string;
      readonly reason: string;
    }
  | {
      readonly type: 'targetError';
      readonly workerUrl: string;
      readonly endpoint: string;
      readonly error: unknown;
    };

/**
 * Where a {@link KvEventSubscriber} stands with its publisher: `connecting` until a publisher is
 * there (handshake done, or a first message), `connected`, `disconnected` after losing it (until
 * the next one is there), `closed`.
 *
 * @public
 */
export type KvEventSubscriberState = 'connecting' | 'connected' | 'disconnected' | 'closed';

/** What a {@link KvEventSubscriber} has seen since it opened. @public */
export interface KvEventSubscriberStats {
  readonly state: KvEventSubscriberState;
  /** Messages received on the live socket (valid or not). */
  readonly messages: number;
  /** Batches applied, live or replayed. */
  readonly batches: number;
  /** Messages dropped: wrong frames, an undecodable batch, another rank's batch. */
  readonly malformed: number;
  /** Times the sequence skipped ahead. */
  readonly gaps: number;
  /** Replays that filled a gap (or warmed up) from the engine's buffer. */
  readonly replays: number;
  /** Replays that failed: timed out, too long, or the buffer no longer held the gap. */
  readonly replayFailures: number;
  /** Times the sequence went backwards: the engine restarted. */
  readonly restarts: number;
  /**
   * Times the worker's blocks were cleared: for a gap, a restart, a lost batch, a lost
   * connection or a target that threw.
   */
  readonly clears: number;
  /**
   * Times the connection to a connected publisher was lost (each clears the worker's blocks).
   */
  readonly disconnects: number;
  /** Times the target threw while events were applied (counted, never thrown). */
  readonly targetErrors: number;
  /** The last sequence number applied (undefined: none yet). */
  readonly lastSeq: bigint | undefined;
  /** When the last batch was applied, on `clock` (undefined: none yet). */
  readonly lastBatchAt: number | undefined;
  /** The translator's counts: blocks stored and removed, orphans, skips. */
  readonly translator: KvEventTranslatorStats;
}
