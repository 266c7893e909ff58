/**
 * `KvEventSubscriber`: one engine publisher (one data-parallel rank) followed over ZMQ — its
 * batches decoded, checked for gaps and restarts, translated and handed to a policy's event mode.
 *
 * @module
 */
import type { KvEvent } from '../cache/kv-event-store.js';
import { FleetRouteError, invalidArgument } from '../core/errors.js';
import { type Logger, type LogLevel, log, readLogger, type WarningCode } from '../core/logger.js';
import { boolean, custom, duration, integer, OptionTable } from '../core/option-table.js';
import { fail, readString } from '../core/options.js';
import { type Clock, monotonicClock } from '../resilience/clock.js';
import { decodeKvEventBatch, type KvDecodeLimits, resolveKvDecodeLimits } from './batch-decoder.js';
import { KV_EVENT_END_SEQ, readKvEventFrames } from './frames.js';
import { loadMsgpackDecode, type MsgpackDecode } from './msgpack.js';
import { KvEventTranslator, type KvEventTranslatorStats, type KvKeySink } from './translator.js';
import { loadZeromq, type Zmq, type ZmqDealer, type ZmqSubscriber } from './zeromq.js';

/**
 * What a {@link KvEventSubscriber} feeds: `cache_aware`'s event mode, or anything with its
 * `applyKvEvents`.
 *
 * @public
 */
export interface KvEventTarget {
  applyKvEvents(workerUrl: string, events: readonly KvEvent[]): void;
}

/** Options of a {@link KvEventSubscriber}. @public */
export interface KvEventSubscriberOptions {
  /** The worker the events are about: the URL the policy knows it by (`worker.url`). */
  readonly workerUrl: string;
  /**
   * The engine's publisher, `tcp://host:port` (vLLM and SGLang `KVEventsConfig.endpoint`, with
   * the host the router reaches: `tcp://10.0.0.5:5557`) or `ipc://path`. For a data-parallel
   * rank (`dpRank`), the endpoint of rank 0: rank `r` publishes on port + `r`.
   */
  readonly endpoint: string;
  /**
   * The engine's replay socket (`KVEventsConfig.replay_endpoint`), port-offset like `endpoint`
   * for a rank. With it, a gap in the sequence is filled from the engine's buffer; without it,
   * a gap clears the worker's blocks. @defaultValue none
   */
  readonly replayEndpoint?: string;
  /** The data-parallel rank followed; batches naming another rank are skipped. @defaultValue none */
  readonly dpRank?: number;
  /** Topic prefix subscribed to (`KVEventsConfig.topic`). @defaultValue '' (every topic) */
  readonly topic?: string;
  /** Where the translated events go: `target.applyKvEvents(workerUrl, events)`. */
  readonly target: KvEventTarget;
  /** Tokens per block of fleetroute's keys: `cache_aware`'s `pageSize`. @defaultValue 16 */
  readonly pageSize?: number;
  /** The model the worker serves, the `model` of its events. @defaultValue none */
  readonly model?: string;
  /** Most engine blocks remembered (see `KvEventTranslatorOptions`). @defaultValue 1048576 */
  readonly maxBlocks?: number;
  /**
   * First wait before reconnecting to a publisher that went away; doubled on each failure up to
   * `reconnectMaxIntervalMs` (libzmq's backoff). @defaultValue 100
   */
  readonly reconnectIntervalMs?: number;
  /** Longest wait between reconnection attempts. @defaultValue 5000 */
  readonly reconnectMaxIntervalMs?: number;
  /**
   * Longest wait for each message of a replay; past it the replay has failed, and the worker's
   * blocks are cleared. @defaultValue 2000
   */
  readonly replayTimeoutMs?: number;
  /** Most batches one replay may return (an engine buffers 10,000 by default). @defaultValue 100000 */
  readonly maxReplayBatches?: number;
  /**
   * Messages the socket queues before ZMQ drops newer ones (libzmq's receive high-water mark; 0:
   * no limit). A drop is a gap: filled by a replay, or cleared. @defaultValue 10000
   */
  readonly highWaterMark?: number;
  /**
   * When the first batch received is not the engine's first (seq 0), ask the replay socket for
   * everything it still buffers, so a router that starts late learns what the engine holds.
   * @defaultValue true
   */
  readonly warmup?: boolean;
  /** Bounds on each message (payload bytes, events, blocks, tokens); see `KvDecodeLimits`. */
  readonly limits?: Partial<KvDecodeLimits>;
  /** Time source of `stats().lastBatchAt`, in ms. @defaultValue `performance.now` */
  readonly clock?: Clock;
  /**
   * Where the subscriber says what happened to its stream: a lost connection, a gap it could
   * not fill, an engine restart, dropped messages (the first, then every 1,000th), a target
   * that threw. Each line has `code`, `workerUrl` and `endpoint` fields. @defaultValue none
   * (nothing is logged; `stats()` counts it all)
   */
  readonly logger?: Logger;
  /**
   * Called with each {@link KvSubscriberEvent}, synchronously; one that throws is ignored.
   * @defaultValue none
   */
  readonly onEvent?: (event: KvSubscriberEvent) => void;
}

/** @internal The options of a {@link KvEventSubscriber}, declared once. */
export const KV_SUBSCRIBER_OPTIONS = new OptionTable(
  'kvEventSubscriber',
  'KvEventSubscriberOptions',
  {
    topic: custom('', (field, value) => {
      if (typeof value !== 'string' || value.length > 1024) fail(field, 'a string', value);
      return value;
    }),
    reconnectIntervalMs: duration(100),
    reconnectMaxIntervalMs: duration(5_000, 0),
    replayTimeoutMs: duration(2_000),
    maxReplayBatches: integer(100_000, 1, 10_000_000),
    highWaterMark: integer(10_000, 0, 10_000_000),
    warmup: boolean(true),
  },
  // Read apart: required strings and objects, the translator's options, the decode limits.
  [
    'workerUrl',
    'endpoint',
    'replayEndpoint',
    'dpRank',
    'target',
    'pageSize',
    'model',
    'maxBlocks',
    'limits',
    'clock',
    'logger',
    'onEvent',
  ],
);

/**
 * What happened to a subscriber's stream, as {@link KvEventSubscriberOptions.onEvent} hears it
 * (for metrics and alerts; `stats()` counts the same). Every event names the worker and the
 * endpoint.
 *
 * - `connected` / `disconnected`: the publisher came or went (a lost connection clears the
 *   worker's blocks);
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

/** Where a {@link KvEventSubscriber} stands with its publisher. @public */
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
  /** Times the connection to the publisher was lost (each clears the worker's blocks). */
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

/** `applyKvKeys`: cache_aware's key path, used when the target has it. */
type KeyTarget = KvEventTarget & {
  applyKvKeys(
    workerUrl: string,
    type: 'stored' | 'removed',
    model: string | undefined,
    keys: readonly number[],
  ): void;
};

const hasKeyPath = (target: KvEventTarget): target is KeyTarget =>
  typeof (target as Partial<KeyTarget>).applyKvKeys === 'function';

const MAX_ENDPOINT = 2_048;

/**
 * The endpoint of data-parallel rank `rank` for rank 0's `endpoint`: the TCP port plus `rank`,
 * as vLLM and SGLang place their ranks' publishers.
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a rank of an endpoint without a TCP port,
 *   or a port past 65535.
 * @public
 */
export function kvEventEndpointOfRank(endpoint: string, rank: number): string {
  if (rank === 0) return endpoint;
  const colon = endpoint.lastIndexOf(':');
  const port = Number(endpoint.slice(colon + 1));
  if (!endpoint.startsWith('tcp://') || colon < 6 || !Number.isInteger(port) || port <= 0) {
    throw invalidArgument(
      `a data-parallel rank needs a tcp://host:port endpoint to offset, got ${JSON.stringify(endpoint)}`,
    );
  }
  if (port + rank > 65_535)
    throw invalidArgument(`rank ${rank} of ${endpoint} would need port ${port + rank}`);
  return `${endpoint.slice(0, colon + 1)}${port + rank}`;
}

function readEndpoint(field: string, value: unknown): string {
  const s = readString(field, value, MAX_ENDPOINT);
  if (!/^(tcp|ipc|inproc):\/\/[^\s]+$/.test(s))
    fail(field, 'a tcp://host:port, ipc:// or inproc:// endpoint', value);
  return s;
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
  readonly #workerUrl: string;
  readonly #endpoint: string;
  readonly #replayEndpoint: string | undefined;
  readonly #dpRank: number | undefined;
  readonly #target: KvEventTarget;
  readonly #o: ReturnType<typeof KV_SUBSCRIBER_OPTIONS.read>;
  readonly #limits: KvDecodeLimits;
  readonly #clock: Clock;
  readonly #logger: Logger | undefined;
  readonly #onEvent: ((event: KvSubscriberEvent) => void) | undefined;
  readonly #zmq: Zmq;
  readonly #decode: MsgpackDecode;
  readonly #translator: KvEventTranslator;
  /** The key path into `applyKvKeys`, when the target has one. */
  readonly #sink: KvKeySink | undefined;
  #socket: ZmqSubscriber;
  /** +1 on each new live socket: work started on an older one's message is abandoned. */
  #generation = 0;
  /** The last sequence number received live on the current socket. */
  #lastLive: bigint | undefined;
  #dealer: ZmqDealer | undefined;
  #state: KvEventSubscriberState = 'connecting';
  #closed = false;
  #loop: Promise<void> = Promise.resolve();
  #last: bigint | undefined;
  /** After a replay: live batches up to this one were replayed already. */
  #replayedThrough: bigint | undefined;
  #messages = 0;
  #batches = 0;
  #malformed = 0;
  #gaps = 0;
  #replays = 0;
  #replayFailures = 0;
  #restarts = 0;
  #clears = 0;
  #disconnects = 0;
  #targetErrors = 0;
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
    const raw = options as unknown as Record<string, unknown>;
    // Validate everything before loading anything.
    KV_SUBSCRIBER_OPTIONS.read(options);
    readString('kvEventSubscriber.workerUrl', raw.workerUrl, MAX_ENDPOINT);
    readEndpoint('kvEventSubscriber.endpoint', raw.endpoint);
    if (raw.replayEndpoint !== undefined)
      readEndpoint('kvEventSubscriber.replayEndpoint', raw.replayEndpoint);
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
    const translator = await KvEventTranslator.create(translatorOptions(options));
    return new KvEventSubscriber(options, zmq, decode, translator);
  }

  private constructor(
    options: KvEventSubscriberOptions,
    zmq: Zmq,
    decode: MsgpackDecode,
    translator: KvEventTranslator,
  ) {
    const o = KV_SUBSCRIBER_OPTIONS.read(options);
    const target = options.target as unknown;
    if (
      typeof target !== 'object' ||
      target === null ||
      typeof (target as KvEventTarget).applyKvEvents !== 'function'
    ) {
      fail(
        'kvEventSubscriber.target',
        'an object with applyKvEvents (a cache_aware policy)',
        target,
      );
    }
    const rank = options.dpRank;
    if (rank !== undefined && !(Number.isInteger(rank) && rank >= 0 && rank <= 65_535))
      fail('kvEventSubscriber.dpRank', 'an integer in [0, 65535]', rank);
    if (options.clock !== undefined && typeof options.clock !== 'function')
      fail('kvEventSubscriber.clock', 'a function', options.clock);
    this.#o = o;
    this.#workerUrl = options.workerUrl;
    this.#dpRank = rank;
    this.#endpoint = kvEventEndpointOfRank(options.endpoint, rank ?? 0);
    this.#replayEndpoint =
      options.replayEndpoint === undefined
        ? undefined
        : kvEventEndpointOfRank(options.replayEndpoint, rank ?? 0);
    this.#target = target as KvEventTarget;
    this.#limits = resolveKvDecodeLimits(options.limits);
    this.#clock = options.clock ?? monotonicClock;
    this.#logger = readLogger('kvEventSubscriber.logger', options.logger);
    if (options.onEvent !== undefined && typeof options.onEvent !== 'function')
      fail('kvEventSubscriber.onEvent', 'a function', options.onEvent);
    this.#onEvent = options.onEvent;
    this.#zmq = zmq;
    this.#decode = decode;
    this.#translator = translator;
    this.#sink = this.#makeSink();
    try {
      this.#socket = this.#openSocket();
    } catch (cause) {
      throw new FleetRouteError(
        'INVALID_ARGUMENT',
        `kvEventSubscriber could not connect to ${this.#endpoint}`,
        { cause },
      );
    }
    this.#loop = this.#run();
  }

  /** The worker URL the events are applied to. */
  get workerUrl(): string {
    return this.#workerUrl;
  }

  /** The publisher endpoint followed (rank-offset). */
  get endpoint(): string {
    return this.#endpoint;
  }

  /** The counts so far (a fresh object). O(1). */
  stats(): KvEventSubscriberStats {
    return {
      state: this.#state,
      messages: this.#messages,
      batches: this.#batches,
      malformed: this.#malformed,
      gaps: this.#gaps,
      replays: this.#replays,
      replayFailures: this.#replayFailures,
      restarts: this.#restarts,
      clears: this.#clears,
      disconnects: this.#disconnects,
      targetErrors: this.#targetErrors,
      lastSeq: this.#last,
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
      this.#socket.close();
      this.#dealer?.close();
      this.#dealer = undefined;
    }
    await this.#loop;
  }

  /** A SUB socket connected to the publisher, reporting its connection to this subscriber. */
  #openSocket(): ZmqSubscriber {
    const o = this.#o;
    const socket = new this.#zmq.Subscriber({
      linger: 0,
      reconnectInterval: o.reconnectIntervalMs,
      reconnectMaxInterval: o.reconnectMaxIntervalMs,
      receiveHighWaterMark: o.highWaterMark,
      // A bigger frame is an error of the peer: libzmq drops its connection and reconnects.
      maxMessageSize: this.#limits.maxPayloadBytes + 1_024,
    });
    const generation = this.#generation;
    socket.events.on('connect', () => {
      if (!this.#closed && generation === this.#generation) {
        this.#state = 'connected';
        this.#notify({ type: 'connected', ...this.#at });
      }
    });
    socket.events.on('disconnect', () => {
      if (!this.#closed && generation === this.#generation) this.#onDisconnect();
    });
    try {
      socket.connect(this.#endpoint);
      socket.subscribe(o.topic);
    } catch (error) {
      socket.close();
      throw error;
    }
    return socket;
  }

  /**
   * The publisher went away: the engine may have died (its cache with it) or restarted, and what
   * comes next cannot be told apart from what the old connection still had queued. So the
   * worker's blocks are cleared, and a fresh socket (with nothing queued) takes over; the first
   * batch it brings starts the sequence again (warmed up from the replay socket when there is
   * one).
   */
  #onDisconnect(): void {
    this.#state = 'disconnected';
    this.#disconnects++;
    this.#notify({ type: 'disconnected', ...this.#at });
    this.#log(
      'warn',
      'FLEETROUTE_KV_DISCONNECTED',
      "lost the engine's kv event publisher; its blocks are cleared",
    );
    this.#generation++;
    const old = this.#socket;
    this.#dealer?.close();
    this.#dealer = undefined;
    this.#lastLive = undefined;
    this.#clearSafely();
    try {
      this.#socket = this.#openSocket();
    } catch {
      // The endpoint connected before; keep the old socket, which reconnects by itself.
      return;
    }
    old.close();
  }

  /** Logs to the caller's logger, when there is one. */
  #log(level: LogLevel, code: WarningCode, message: string): void {
    if (this.#logger === undefined) return;
    log(this.#logger, level, code, `${message} (${this.#workerUrl}, ${this.#endpoint})`, {
      workerUrl: this.#workerUrl,
      endpoint: this.#endpoint,
    });
  }

  /** Tells `onEvent`, when given; a hook that throws is ignored. */
  #notify(event: KvSubscriberEvent): void {
    if (this.#onEvent === undefined) return;
    try {
      this.#onEvent(event);
    } catch {
      // The hook is the caller's; the stream goes on.
    }
  }

  /** The fields every event carries. */
  get #at(): { readonly workerUrl: string; readonly endpoint: string } {
    return { workerUrl: this.#workerUrl, endpoint: this.#endpoint };
  }

  /** Counts a dropped message; logs the first and every 1,000th. */
  #drop(why: string): void {
    if (this.#onEvent !== undefined) this.#notify({ type: 'dropped', ...this.#at, reason: why });
    if (this.#malformed++ % 1_000 === 0)
      this.#log(
        'warn',
        'FLEETROUTE_KV_DROPPED',
        `kv event message dropped: ${why} (${this.#malformed} so far)`,
      );
  }

  #makeSink(): KvKeySink | undefined {
    const target = this.#target;
    const url = this.#workerUrl;
    if (!hasKeyPath(target)) return undefined;
    return (type, model, keys) => {
      if (type === 'cleared') target.applyKvEvents(url, [{ type: 'cleared' }]);
      else target.applyKvKeys(url, type, model, keys);
    };
  }

  async #run(): Promise<void> {
    while (!this.#closed) {
      const socket = this.#socket;
      let frames: Uint8Array[];
      try {
        frames = await socket.receive();
      } catch {
        // Closed (the loop ends), replaced (read the new one), or a socket error: wait a
        // little, then try again.
        if (!this.#closed && socket === this.#socket) await pause(this.#o.reconnectIntervalMs);
        continue;
      }
      this.#messages++;
      try {
        await this.#onMessage(frames, this.#generation);
      } catch (error) {
        // The target threw: what it holds for the worker is unknown.
        this.#targetErrors++;
        this.#notify({ type: 'targetError', ...this.#at, error });
        this.#log(
          'error',
          'FLEETROUTE_KV_TARGET_THREW',
          `the kv event target threw (${error instanceof Error ? error.message : String(error)}); the worker's blocks are cleared`,
        );
        this.#clearSafely();
      }
    }
  }

  async #onMessage(frames: readonly Uint8Array[], generation: number): Promise<void> {
    let seq: bigint;
    let payload: Uint8Array;
    try {
      ({ seq, payload } = readKvEventFrames(frames, this.#limits));
    } catch (error) {
      this.#drop(error instanceof Error ? error.message : 'unreadable frames');
      return;
    }
    if (seq < 0n) {
      this.#drop(`negative sequence number ${seq} on the live socket`);
      return;
    }
    const lastLive = this.#lastLive;
    this.#lastLive = seq;
    if (lastLive !== undefined && seq <= lastLive) {
      // Live batches of one process come in order: backwards is a new engine process, counting
      // from 0 again.
      this.#restarts++;
      this.#log('info', 'FLEETROUTE_KV_RESTART', 'the engine restarted; its blocks are cleared');
      this.#notify({ type: 'restart', ...this.#at });
      this.#clear();
    }
    const last = this.#last;
    let replayed = false;
    if (last === undefined) {
      if (seq > 0n && this.#o.warmup && this.#replayEndpoint !== undefined) {
        replayed = await this.#replay(0n, true, generation);
      }
    } else if (seq <= last) {
      // Replayed already (it was queued while the replay ran).
      if (this.#replayedThrough !== undefined && seq <= this.#replayedThrough) return;
      this.#restarts++;
      this.#clear();
    } else if (seq > last + 1n) {
      this.#gaps++;
      replayed =
        this.#replayEndpoint !== undefined && (await this.#replay(last + 1n, false, generation));
      if (generation === this.#generation) {
        this.#notify({ type: 'gap', ...this.#at, from: last + 1n, to: seq - 1n, filled: replayed });
      }
      if (!replayed && generation === this.#generation) {
        this.#log(
          'warn',
          'FLEETROUTE_KV_GAP',
          `kv event batches ${last + 1n} to ${seq - 1n} were lost${this.#replayEndpoint === undefined ? ' (no replay endpoint)' : ' and the replay failed'}; the worker's blocks are cleared`,
        );
        this.#clear();
      }
    }
    if (this.#closed || generation !== this.#generation) return;
    const now = this.#last;
    // A replay may have covered this batch already.
    if (now !== undefined && seq <= now) return;
    if (now !== undefined && seq > now + 1n) {
      // The replay ended before this batch: the batches between are lost.
      if (replayed) {
        // Counted as a replay that filled the gap; it did not reach this batch.
        this.#replays--;
        this.#replayFailures++;
      }
      this.#clear();
    }
    this.#replayedThrough = undefined;
    this.#apply(seq, payload);
  }

  /**
   * Applies one batch at `seq`. An undecodable batch is a lost batch: what it held is unknown,
   * so the worker's blocks are cleared.
   */
  #apply(seq: bigint, payload: Uint8Array): void {
    this.#last = seq;
    let batch: ReturnType<typeof decodeKvEventBatch>;
    try {
      batch = decodeKvEventBatch(payload, this.#decode, this.#limits);
    } catch (error) {
      this.#drop(
        `batch ${seq} could not be decoded (${error instanceof Error ? error.message : 'unreadable'}); the worker's blocks are cleared`,
      );
      this.#clear();
      return;
    }
    if (
      this.#dpRank !== undefined &&
      batch.dataParallelRank !== undefined &&
      batch.dataParallelRank !== this.#dpRank
    ) {
      this.#drop(
        `batch ${seq} names data-parallel rank ${batch.dataParallelRank}, not ${this.#dpRank}`,
      );
      return;
    }
    if (batch.events.length > 0) this.#deliver(batch.events);
    this.#batches++;
    this.#lastBatchAt = this.#clock();
  }

  #deliver(events: Parameters<KvEventTranslator['translate']>[0]): void {
    const sink = this.#sink;
    if (sink !== undefined) this.#translator.translateKeys(events, sink);
    else {
      // Anything but cache_aware gets the public events (bigint hashes).
      const out = this.#translator.translate(events);
      if (out.length > 0) this.#target.applyKvEvents(this.#workerUrl, out);
    }
  }

  /** {@link #clear}, counting a target that throws rather than throwing. */
  #clearSafely(): void {
    try {
      this.#clear();
    } catch {
      this.#targetErrors++;
    }
  }

  /** Forgets the worker's blocks and the sequence: the next batch starts a new one. */
  #clear(): void {
    this.#clears++;
    this.#last = undefined;
    this.#replayedThrough = undefined;
    this.#translator.clear();
    this.#target.applyKvEvents(this.#workerUrl, [{ type: 'cleared' }]);
  }

  /**
   * Asks the replay socket for every buffered batch from `from` on and applies them in order,
   * up to the end marker. A warm-up (`warmup`) takes whatever the buffer starts with; a gap
   * replay must start exactly at `from`, else the buffer lost it and the worker is cleared
   * before the rest is applied.
   *
   * @returns whether the replay completed (a failure leaves the worker for the caller to clear).
   */
  async #replay(from: bigint, warmup: boolean, generation: number): Promise<boolean> {
    const dealer = this.#dealerSocket();
    const seqFrame = new Uint8Array(8);
    new DataView(seqFrame.buffer).setBigInt64(0, from, false);
    let first = true;
    let holes = false;
    let count = 0;
    try {
      await dealer.send([new Uint8Array(0), seqFrame]);
      for (;;) {
        const frames = await dealer.receive();
        // Closed, or the publisher went away meanwhile (its blocks were cleared then).
        if (this.#closed || generation !== this.#generation) return false;
        // [empty, seq, payload]: drop the empty delimiter and read it as a message.
        const { seq, payload } = readKvEventFrames(
          frames.length === 3 ? [new Uint8Array(0), frames[1]!, frames[2]!] : frames,
          this.#limits,
        );
        if (seq === KV_EVENT_END_SEQ) break;
        if (++count > this.#o.maxReplayBatches) throw new Error('replay too long');
        const last = this.#last;
        if (last !== undefined && seq <= last) continue;
        // The start of a gap no longer buffered, or a hole inside the replay: lost batches.
        const hole = first ? !warmup && seq !== from : last !== undefined && seq !== last + 1n;
        if (hole) {
          holes = true;
          this.#clear();
        }
        first = false;
        this.#apply(seq, payload);
      }
    } catch {
      if (this.#closed || generation !== this.#generation) return false;
      // Timed out or unreadable: a fresh socket for the next replay, so no late answer to this
      // one is read as the next one's.
      this.#replayFailures++;
      this.#dealer?.close();
      this.#dealer = undefined;
      return false;
    }
    if (holes) this.#replayFailures++;
    else this.#replays++;
    if (this.#last !== undefined) this.#replayedThrough = this.#last;
    return true;
  }

  #dealerSocket(): ZmqDealer {
    if (this.#dealer === undefined) {
      const dealer = new this.#zmq.Dealer({
        linger: 0,
        receiveTimeout: this.#o.replayTimeoutMs,
        sendTimeout: this.#o.replayTimeoutMs,
        maxMessageSize: this.#limits.maxPayloadBytes + 1_024,
        reconnectInterval: this.#o.reconnectIntervalMs,
        reconnectMaxInterval: this.#o.reconnectMaxIntervalMs,
      });
      dealer.connect(this.#replayEndpoint!);
      this.#dealer = dealer;
    }
    return this.#dealer;
  }
}

/**
 * @internal The subscriber's two optional peers, one after the other, so a missing package is
 * named the same way every time.
 */
export async function loadKvPeers(): Promise<{ zmq: Zmq; decode: MsgpackDecode }> {
  const zmq = await loadZeromq();
  return { zmq, decode: await loadMsgpackDecode() };
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function translatorOptions(options: KvEventSubscriberOptions) {
  const out: { pageSize?: number; model?: string; maxBlocks?: number } = {};
  if (options.pageSize !== undefined) out.pageSize = options.pageSize;
  if (options.model !== undefined) out.model = options.model;
  if (options.maxBlocks !== undefined) out.maxBlocks = options.maxBlocks;
  return out;
}
