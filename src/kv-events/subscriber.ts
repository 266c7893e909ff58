/**
 * `KvEventSubscriber`: one engine publisher (one data-parallel rank) followed over ZMQ — its
 * batches decoded, checked for gaps and restarts, translated and handed to a policy's event mode.
 *
 * @module
 */
import type { KvEvent } from '../cache/kv-event-store.js';
import { hasKvKeyPath } from '../cache/kv-key-target.js';
import { FleetRouteError } from '../core/errors.js';
import { type LogLevel, log, type WarningCode } from '../core/logger.js';
import { decodeKvEventBatch, type EngineEvent, type EngineEventBatch } from './batch-decoder.js';
import { type KvEventMessage, readKvEventFrames } from './frames.js';
import { loadMsgpackDecode, type MsgpackDecode } from './msgpack.js';
import { PublisherSocket } from './publisher-socket.js';
import { ReplayClient, type ReplayEnd } from './replay-client.js';
import { KvSequence } from './sequence.js';
import type {
  KvEventSubscriberState,
  KvEventSubscriberStats,
  KvEventTarget,
  KvSubscriberEvent,
} from './subscriber-events.js';
import {
  type KvEventSubscriberOptions,
  type ResolvedKvSubscriberOptions,
  resolveKvSubscriberOptions,
} from './subscriber-options.js';
import { KvEventTranslator, type KvKeySink } from './translator.js';
import { loadZeromq, type Zmq } from './zeromq.js';

/** How a replay went: as it ended, or `holes` when it ended but some batches were lost. */
type ReplayOutcome = ReplayEnd | 'holes';

/** The counts `stats()` reports, kept as they happen. */
interface Counts {
  messages: number;
  batches: number;
  malformed: number;
  gaps: number;
  replays: number;
  replayFailures: number;
  restarts: number;
  clears: number;
  disconnects: number;
  targetErrors: number;
}

/**
 * Follows one engine's KV-event publisher (one data-parallel rank) and keeps a policy's view of
 * that worker's cache equal to what the engine holds — or cleared, never wrong:
 *
 * - each message is `[topic, seq, payload]` ({@link readKvEventFrames}); its batch is decoded
 *   ({@link decodeKvEventBatch}), translated ({@link KvEventTranslator}) and applied with
 *   `target.applyKvEvents(workerUrl, …)`;
 * - a sequence that skips ahead is a gap: filled from the engine's replay socket when
 *   `replayEndpoint` is given, else the worker's blocks are cleared and the stream is followed
 *   from there;
 * - a sequence that goes backwards is an engine restart: the worker's blocks are cleared;
 * - a message that cannot be read is counted and dropped, never thrown; one whose batch alone is
 *   unreadable is a lost batch (cleared);
 * - a lost connection clears the worker's blocks (the engine may have died, or restarted: what
 *   follows cannot be told apart from what the old connection still had queued), and a fresh
 *   socket takes over; a publisher that is not there yet, or went away, is reconnected to with
 *   backoff;
 * - a target that throws is counted (`targetErrors`) and the worker cleared; the subscriber goes
 *   on.
 *
 * Build one with {@link KvEventSubscriber.open}; {@link KvEventSubscriber.close} leaves no socket
 * or timer. Cost per batch: the decode, one xxh64 per `pageSize` tokens stored, O(1) per block.
 *
 * @example
 * ```ts
 * const subscriber = await KvEventSubscriber.open({
 *   workerUrl: 'http://10.0.0.5:8000',
 *   endpoint: 'tcp://10.0.0.5:5557',
 *   target: policy, // createPolicy('cache_aware')
 * });
 * // … later
 * await subscriber.close();
 * ```
 * @public
 */
export class KvEventSubscriber {
  readonly #o: ResolvedKvSubscriberOptions;
  readonly #decode: MsgpackDecode;
  readonly #translator: KvEventTranslator;
  /** The key path into `applyKvKeys`, when the target has one. */
  readonly #sink: KvKeySink | undefined;
  readonly #sequence = new KvSequence();
  readonly #publisher: PublisherSocket;
  readonly #replay: ReplayClient | undefined;
  readonly #counts: Counts = {
    messages: 0,
    batches: 0,
    malformed: 0,
    gaps: 0,
    replays: 0,
    replayFailures: 0,
    restarts: 0,
    clears: 0,
    disconnects: 0,
    targetErrors: 0,
  };
  #state: KvEventSubscriberState = 'connecting';
  #closed = false;
  #loop: Promise<void> = Promise.resolve();
  #lastBatchAt: number | undefined;

  /**
   * Loads `zeromq`, `@msgpack/msgpack` and the hash function, connects to the publisher and
   * starts following it. Resolves once the socket is set up, not when the publisher answers: a
   * publisher that is not up yet is connected to when it comes.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` (as a rejection) naming a bad option;
   *   `MISSING_DEPENDENCY` when `zeromq` or `@msgpack/msgpack` is not installed.
   */
  static async open(options: KvEventSubscriberOptions): Promise<KvEventSubscriber> {
    // Validate everything before loading anything.
    resolveKvSubscriberOptions(options);
    const { zmq, decode } = await loadKvPeers();
    return KvEventSubscriber.openWith(options, zmq, decode);
  }

  /**
   * @internal {@link KvEventSubscriber.open} over the given socket library and decoder (tests
   * drive the sequence logic over in-memory sockets).
   */
  static async openWith(
    options: KvEventSubscriberOptions,
    zmq: Zmq,
    decode: MsgpackDecode,
  ): Promise<KvEventSubscriber> {
    const o = resolveKvSubscriberOptions(options);
    const translator = await KvEventTranslator.create({
      pageSize: o.pageSize,
      maxBlocks: o.maxBlocks,
      ...(o.model === undefined ? {} : { model: o.model }),
    });
    return new KvEventSubscriber(o, zmq, decode, translator);
  }

  private constructor(
    o: ResolvedKvSubscriberOptions,
    zmq: Zmq,
    decode: MsgpackDecode,
    translator: KvEventTranslator,
  ) {
    this.#o = o;
    this.#decode = decode;
    this.#translator = translator;
    this.#sink = keySinkOf(o.target, o.workerUrl);
    const maxMessageSize = o.limits.maxPayloadBytes + 1_024;
    this.#replay =
      o.replayEndpoint === undefined
        ? undefined
        : new ReplayClient(zmq, {
            endpoint: o.replayEndpoint,
            timeoutMs: o.replayTimeoutMs,
            deadlineMs: o.replayDeadlineMs,
            maxBatches: o.maxReplayBatches,
            reconnectIntervalMs: o.reconnectIntervalMs,
            reconnectMaxIntervalMs: o.reconnectMaxIntervalMs,
            limits: o.limits,
          });
    try {
      this.#publisher = new PublisherSocket(
        zmq,
        {
          endpoint: o.endpoint,
          topic: o.topic,
          highWaterMark: o.highWaterMark,
          // A bigger frame is an error of the peer: libzmq drops its connection and reconnects.
          maxMessageSize,
          reconnectIntervalMs: o.reconnectIntervalMs,
          reconnectMaxIntervalMs: o.reconnectMaxIntervalMs,
        },
        { connected: () => this.#onConnected(), lost: () => this.#onLost() },
      );
    } catch (cause) {
      throw new FleetRouteError(
        'INVALID_ARGUMENT',
        `kvEventSubscriber could not connect to ${o.endpoint}`,
        { cause },
      );
    }
    this.#loop = this.#run();
  }

  /** The worker URL the events are applied to. */
  get workerUrl(): string {
    return this.#o.workerUrl;
  }

  /** The publisher endpoint followed (rank-offset). */
  get endpoint(): string {
    return this.#o.endpoint;
  }

  /** The counts so far (a fresh object). O(1). */
  stats(): KvEventSubscriberStats {
    return {
      state: this.#state,
      ...this.#counts,
      lastSeq: this.#sequence.last,
      lastBatchAt: this.#lastBatchAt,
      translator: this.#translator.stats(),
    };
  }

  /**
   * Stops following: closes the sockets (pending messages are dropped) and waits for the
   * receive loop to end. The worker's blocks are left in the target (a `KvEventFeed` clears
   * them when the registry removes the worker). Idempotent.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#state = 'closed';
      this.#publisher.close();
      this.#replay?.close();
    }
    await this.#loop;
  }

  // ── The connection ──────────────────────────────────────────────────────────────────────

  #onConnected(): void {
    this.#state = 'connected';
    this.#report({ type: 'connected', ...this.#at });
  }

  /**
   * The publisher went away: the engine may have died (its cache with it) or restarted, and what
   * comes next cannot be told apart from what the old connection still had queued. So the
   * worker's blocks are cleared, and a fresh socket (with nothing queued) takes over; the first
   * batch it brings starts the sequence again (warmed up from the replay socket when there is
   * one).
   */
  #onLost(): void {
    this.#state = 'disconnected';
    this.#counts.disconnects++;
    this.#report({ type: 'disconnected', ...this.#at });
    this.#replay?.close();
    this.#sequence.connectionLost();
    this.#clear();
  }

  // ── The stream ──────────────────────────────────────────────────────────────────────────

  async #run(): Promise<void> {
    for (;;) {
      const received = await this.#publisher.receive();
      if (received === undefined) return;
      this.#counts.messages++;
      await this.#onMessage(received.frames, received.generation);
    }
  }

  /** Whether work begun for a message of `generation` still counts. */
  #current(generation: number): boolean {
    return !this.#closed && generation === this.#publisher.generation;
  }

  async #onMessage(frames: readonly Uint8Array[], generation: number): Promise<void> {
    let message: KvEventMessage;
    try {
      message = readKvEventFrames(frames, this.#o.limits);
    } catch (error) {
      this.#drop(error instanceof Error ? error.message : 'unreadable frames');
      return;
    }
    const { seq } = message;
    if (seq < 0n) {
      this.#drop(`negative sequence number ${seq} on the live socket`);
      return;
    }
    const canWarmUp = this.#o.warmup && this.#replay !== undefined;
    const { restart, step } = this.#sequence.live(seq, canWarmUp);
    if (restart !== undefined) {
      this.#counts.restarts++;
      if (restart === 'backwards') this.#report({ type: 'restart', ...this.#at });
      this.#clear();
    }
    if (step.kind === 'duplicate') return;
    let replayed: ReplayOutcome | undefined;
    if (step.kind === 'warmup') replayed = await this.#replayFrom(0n, true, generation);
    else if (step.kind === 'gap') {
      this.#counts.gaps++;
      if (this.#replay !== undefined)
        replayed = await this.#replayFrom(step.from, false, generation);
    }
    if (!this.#current(generation)) return;
    // No replay, or one that failed: what the gap held is lost (a replay with holes cleared).
    if (step.kind === 'gap' && replayed !== 'ended' && replayed !== 'holes') this.#clear();
    const settled = this.#sequence.settle(seq);
    if (settled === 'short') {
      // The replay ended before this batch: the batches between are lost.
      if (replayed === 'ended') {
        // Counted as a replay that filled the gap; it did not reach this batch.
        this.#counts.replays--;
        this.#counts.replayFailures++;
      }
      this.#clear();
    }
    if (step.kind === 'gap') this.#reportGap(step, settled === 'short' ? 'short' : replayed);
    if (settled !== 'covered') this.#apply(message, true);
  }

  /**
   * A gap is filled only when its replay ended with every batch, up to the live one; anything
   * else is reported unfilled, with the `FLEETROUTE_KV_GAP` warning (the worker was cleared).
   */
  #reportGap(
    { from, to }: { readonly from: bigint; readonly to: bigint },
    outcome: ReplayOutcome | 'short' | undefined,
  ): void {
    const filled = outcome === 'ended';
    let why = '';
    if (outcome === undefined) why = ' (no replay endpoint)';
    else if (outcome === 'expired')
      why = ` and the replay ran past replayDeadlineMs (${this.#o.replayDeadlineMs} ms)`;
    else if (outcome === 'holes') why = ' and the replay brought them only in part';
    else if (outcome === 'short') why = ' and the replay ended before the live batch';
    else if (!filled) why = ' and the replay failed';
    this.#report({ type: 'gap', ...this.#at, from, to, filled }, why);
  }

  /**
   * Asks the replay socket for every buffered batch from `from` on and applies them in order,
   * up to the end marker. A warm-up (`warmup`) takes whatever the buffer starts with; a gap
   * replay must start exactly at `from`, else the buffer lost it and the worker is cleared
   * before the rest is applied.
   *
   * @returns `ended` when the replay brought everything from `from`, `holes` when it ended but
   *   the worker was cleared on the way (batches missing, undecodable, or a target that threw),
   *   else how it failed (the worker is left for the caller to clear).
   */
  async #replayFrom(from: bigint, warmup: boolean, generation: number): Promise<ReplayOutcome> {
    const sequence = this.#sequence;
    sequence.replayStart(from, warmup);
    const clears = this.#counts.clears;
    const end = await this.#replay!.run(from, {
      wanted: () => this.#current(generation),
      batch: (message) => {
        const at = sequence.replayed(message.seq);
        if (at === 'stale') return;
        if (at === 'hole') this.#clear();
        this.#apply(message, false);
      },
    });
    if (end === 'abandoned') return end;
    if (end === 'failed' || end === 'expired') {
      this.#counts.replayFailures++;
      return end;
    }
    // Cleared on the way — a hole, an undecodable batch, a target that threw: not all filled.
    const holes = this.#counts.clears !== clears;
    if (holes) this.#counts.replayFailures++;
    else this.#counts.replays++;
    sequence.replayEnd();
    return holes ? 'holes' : 'ended';
  }

  /**
   * Applies one batch. An undecodable batch is a lost batch: what it held is unknown, so the
   * worker's blocks are cleared.
   */
  #apply({ seq, payload }: KvEventMessage, live: boolean): void {
    this.#sequence.applied(seq, live);
    let batch: EngineEventBatch;
    try {
      batch = decodeKvEventBatch(payload, this.#decode, this.#o.limits);
    } catch (error) {
      this.#drop(
        `batch ${seq} could not be decoded (${error instanceof Error ? error.message : 'unreadable'}); the worker's blocks are cleared`,
      );
      this.#clear();
      return;
    }
    const rank = this.#o.dpRank;
    if (
      rank !== undefined &&
      batch.dataParallelRank !== undefined &&
      batch.dataParallelRank !== rank
    ) {
      this.#drop(`batch ${seq} names data-parallel rank ${batch.dataParallelRank}, not ${rank}`);
      return;
    }
    if (batch.events.length > 0) this.#deliver(batch.events);
    this.#counts.batches++;
    try {
      this.#lastBatchAt = this.#o.clock();
    } catch {
      // A clock that throws leaves the time of the last batch unknown; the stream goes on.
      this.#lastBatchAt = undefined;
    }
  }

  /** Translates and hands events to the target; a target that throws is reported and cleared. */
  #deliver(events: readonly EngineEvent[]): void {
    try {
      const sink = this.#sink;
      if (sink !== undefined) this.#translator.translateKeys(events, sink);
      else {
        // Anything but cache_aware gets the public events (bigint hashes).
        const out = this.#translator.translate(events);
        if (out.length > 0) this.#o.target.applyKvEvents(this.#o.workerUrl, out);
      }
    } catch (error) {
      // What the target holds for the worker is unknown now.
      this.#targetThrew(error);
      this.#clear();
    }
  }

  /**
   * Forgets the worker's blocks and the sequence: the next batch starts a new one. A target that
   * throws on the clear is reported; what it holds stays unknown.
   */
  #clear(): void {
    this.#counts.clears++;
    this.#sequence.cleared();
    this.#translator.clear();
    try {
      this.#o.target.applyKvEvents(this.#o.workerUrl, CLEARED);
    } catch (error) {
      this.#targetThrew(error);
    }
  }

  // ── Telling what happened ───────────────────────────────────────────────────────────────

  #targetThrew(error: unknown): void {
    this.#counts.targetErrors++;
    this.#report({ type: 'targetError', ...this.#at, error });
  }

  /** Counts a dropped message and reports it (the log line: the first and every 1,000th). */
  #drop(why: string): void {
    this.#report({ type: 'dropped', ...this.#at, reason: why });
  }

  /**
   * Tells `onEvent` (a hook that throws is ignored) and the logger, from one event; `why` says
   * why a gap was not filled.
   */
  #report(event: KvSubscriberEvent, why = ''): void {
    if (event.type === 'dropped') this.#counts.malformed++;
    const hook = this.#o.onEvent;
    if (hook !== undefined) {
      try {
        hook(event);
      } catch {
        // The hook is the caller's; the stream goes on.
      }
    }
    switch (event.type) {
      case 'disconnected':
        this.#log(
          'warn',
          'FLEETROUTE_KV_DISCONNECTED',
          "lost the engine's kv event publisher; its blocks are cleared",
        );
        break;
      case 'gap':
        if (!event.filled)
          this.#log(
            'warn',
            'FLEETROUTE_KV_GAP',
            `kv event batches ${event.from} to ${event.to} were lost${why}; the worker's blocks are cleared`,
          );
        break;
      case 'restart':
        this.#log('info', 'FLEETROUTE_KV_RESTART', 'the engine restarted; its blocks are cleared');
        break;
      case 'dropped':
        if ((this.#counts.malformed - 1) % 1_000 === 0)
          this.#log(
            'warn',
            'FLEETROUTE_KV_DROPPED',
            `kv event message dropped: ${event.reason} (${this.#counts.malformed} so far)`,
          );
        break;
      case 'targetError': {
        const error = event.error;
        this.#log(
          'error',
          'FLEETROUTE_KV_TARGET_THREW',
          `the kv event target threw (${error instanceof Error ? error.message : String(error)}); the worker's blocks are cleared`,
        );
        break;
      }
      default:
        break;
    }
  }

  /** Logs to the caller's logger, when there is one. */
  #log(level: LogLevel, code: WarningCode, message: string): void {
    const o = this.#o;
    if (o.logger === undefined) return;
    log(o.logger, level, code, `${message} (${o.workerUrl}, ${o.endpoint})`, this.#at);
  }

  /** The fields every event carries. */
  get #at(): { readonly workerUrl: string; readonly endpoint: string } {
    return { workerUrl: this.#o.workerUrl, endpoint: this.#o.endpoint };
  }
}

/** Every block of the worker, every model. */
const CLEARED: readonly KvEvent[] = Object.freeze([{ type: 'cleared' }]);

/** The key path into `target.applyKvKeys`, when the target has one. */
function keySinkOf(target: KvEventTarget, url: string): KvKeySink | undefined {
  if (!hasKvKeyPath(target)) return undefined;
  return (type, model, keys) => {
    if (type === 'cleared') target.applyKvEvents(url, CLEARED);
    else target.applyKvKeys(url, type, model, keys);
  };
}

/**
 * @internal The subscriber's two optional peers, one after the other, so a missing package is
 * named the same way every time.
 */
export async function loadKvPeers(): Promise<{ zmq: Zmq; decode: MsgpackDecode }> {
  const zmq = await loadZeromq();
  return { zmq, decode: await loadMsgpackDecode() };
}
