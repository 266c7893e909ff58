/**
 * `ReplayClient`: asks an engine's replay socket for the batches it still buffers and reads the
 * answer, bounded in messages and in time.
 *
 * @module
 * @internal
 */
import type { KvDecodeLimits } from './batch-decoder.js';
import { KV_EVENT_END_SEQ, type KvEventMessage, readKvEventFrames } from './frames.js';
import type { Zmq, ZmqDealer } from './zeromq.js';

/** @internal What a {@link ReplayClient} needs to know. */
export interface ReplaySettings {
  /** The replay socket (rank-offset). */
  readonly endpoint: string;
  /** Longest wait for each message (ms). */
  readonly timeoutMs: number;
  /** Longest a whole replay may take (ms). */
  readonly deadlineMs: number;
  /** Most batches one replay may bring. */
  readonly maxBatches: number;
  readonly reconnectIntervalMs: number;
  readonly reconnectMaxIntervalMs: number;
  /** Bounds on each message. */
  readonly limits: KvDecodeLimits;
}

/**
 * @internal How a replay ended: `ended` at the engine's end marker; `abandoned` when the caller
 * no longer wanted it (closed, or the connection it served was lost); `expired` past its
 * deadline; `failed` when a message timed out, or it brought too many or an unreadable one.
 */
export type ReplayEnd = 'ended' | 'abandoned' | 'expired' | 'failed';

/** @internal What a replay asks of its caller while it runs. */
export interface ReplayReader {
  /** Whether the replay is still wanted; asked after each message and on a failure. */
  wanted(): boolean;
  /** One batch, in the order the engine sent it (never the end marker). */
  batch(message: KvEventMessage): void;
}

/**
 * @internal One engine's replay socket: a DEALER that sends `[empty, seq]` and reads
 * `[empty, seq, payload]` messages up to the end marker (`KV_EVENT_END_SEQ`), as the engines'
 * replay ROUTER serves them. The socket is made on first use and replaced after a failure, so no
 * late answer to one replay is read as the next one's. One replay at a time.
 */
export class ReplayClient {
  readonly #zmq: Zmq;
  readonly #settings: ReplaySettings;
  #dealer: ZmqDealer | undefined;

  constructor(zmq: Zmq, settings: ReplaySettings) {
    this.#zmq = zmq;
    this.#settings = settings;
  }

  /**
   * Asks for every buffered batch from `from` on and hands each to `reader.batch`, in order, up
   * to the end marker. Bounded as a whole: past `deadlineMs` the socket is closed and the replay
   * `expired`, however its messages trickle in. Never throws: what `reader.batch` throws ends the
   * replay as `failed`.
   *
   * Cost: one request, then one receive per batch, at most `maxBatches` of them; one timer.
   */
  async run(from: bigint, reader: ReplayReader): Promise<ReplayEnd> {
    const dealer = this.#socket();
    const seq = new Uint8Array(8);
    new DataView(seq.buffer).setBigInt64(0, from, false);
    let count = 0;
    let expired = false;
    const deadline = setTimeout(() => {
      expired = true;
      // A pending receive rejects: the replay ends here.
      if (this.#dealer === dealer) this.close();
    }, this.#settings.deadlineMs).unref();
    try {
      await dealer.send([new Uint8Array(0), seq]);
      for (;;) {
        const frames = await dealer.receive();
        if (!reader.wanted()) return 'abandoned';
        // [empty, seq, payload]: the empty delimiter reads as the topic.
        const message = readKvEventFrames(
          frames.length === 3 ? [new Uint8Array(0), frames[1]!, frames[2]!] : frames,
          this.#settings.limits,
        );
        if (message.seq === KV_EVENT_END_SEQ) return 'ended';
        if (++count > this.#settings.maxBatches) throw new Error('replay too long');
        reader.batch(message);
      }
    } catch {
      if (!reader.wanted()) return 'abandoned';
      this.close();
      return expired ? 'expired' : 'failed';
    } finally {
      clearTimeout(deadline);
    }
  }

  /** Closes the socket (a pending replay fails, or is abandoned); the next replay makes a new one. */
  close(): void {
    this.#dealer?.close();
    this.#dealer = undefined;
  }

  #socket(): ZmqDealer {
    if (this.#dealer === undefined) {
      const s = this.#settings;
      const dealer = new this.#zmq.Dealer({
        linger: 0,
        receiveTimeout: s.timeoutMs,
        sendTimeout: s.timeoutMs,
        maxMessageSize: s.limits.maxPayloadBytes + 1_024,
        reconnectInterval: s.reconnectIntervalMs,
        reconnectMaxInterval: s.reconnectMaxIntervalMs,
      });
      dealer.connect(s.endpoint);
      this.#dealer = dealer;
    }
    return this.#dealer;
  }
}
