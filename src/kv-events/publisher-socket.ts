/**
 * `PublisherSocket`: the SUB socket that follows one engine's KV-event publisher, replaced by a
 * fresh one whenever the publisher's connection is lost.
 *
 * @module
 * @internal
 */
import type { Zmq, ZmqSubscriber } from './zeromq.js';

/** @internal What a {@link PublisherSocket} needs to know. */
export interface PublisherSettings {
  /** The publisher (rank-offset). */
  readonly endpoint: string;
  /** The topic prefix subscribed to. */
  readonly topic: string;
  /** libzmq's receive high-water mark (0: none). */
  readonly highWaterMark: number;
  /** Largest message accepted (bytes); a bigger one drops the peer's connection. */
  readonly maxMessageSize: number;
  readonly reconnectIntervalMs: number;
  readonly reconnectMaxIntervalMs: number;
}

/** @internal What a {@link PublisherSocket} tells its owner, synchronously. */
export interface PublisherListener {
  /** A publisher is there. */
  connected(): void;
  /**
   * The publisher's connection was lost; `generation` has moved already, and a fresh socket
   * (with nothing queued) takes over once this returns.
   */
  lost(): void;
}

/**
 * @internal One publisher followed over a SUB socket. Each socket has a generation; when the
 * publisher's connection is lost, the generation moves and a fresh socket takes over, so nothing
 * the old connection had queued is read after the loss. libzmq reconnects a socket whose
 * publisher is not up yet, with its backoff.
 */
export class PublisherSocket {
  readonly #zmq: Zmq;
  readonly #settings: PublisherSettings;
  readonly #listener: PublisherListener;
  #socket: ZmqSubscriber;
  #generation = 0;
  #closed = false;

  /** @throws what the socket library throws when it cannot connect to the endpoint. */
  constructor(zmq: Zmq, settings: PublisherSettings, listener: PublisherListener) {
    this.#zmq = zmq;
    this.#settings = settings;
    this.#listener = listener;
    this.#socket = this.#open();
  }

  /** +1 on each fresh socket: work begun on an older one's message is abandoned. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * The next message on the current socket (a socket error waits `reconnectIntervalMs`, then
   * reads again).
   *
   * @returns its frames, or `undefined` once closed.
   */
  async receive(): Promise<Uint8Array[] | undefined> {
    while (!this.#closed) {
      const socket = this.#socket;
      try {
        return await socket.receive();
      } catch {
        // Closed (the loop ends), replaced (read the new one), or a socket error: wait a
        // little, then try again.
        if (!this.#closed && socket === this.#socket)
          await pause(this.#settings.reconnectIntervalMs);
      }
    }
    return undefined;
  }

  /** Closes the socket; a pending `receive` resolves `undefined`. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.close();
  }

  /** A SUB socket connected to the publisher, reporting its connection to this one. */
  #open(): ZmqSubscriber {
    const s = this.#settings;
    const socket = new this.#zmq.Subscriber({
      linger: 0,
      reconnectInterval: s.reconnectIntervalMs,
      reconnectMaxInterval: s.reconnectMaxIntervalMs,
      receiveHighWaterMark: s.highWaterMark,
      maxMessageSize: s.maxMessageSize,
    });
    const generation = this.#generation;
    socket.events.on('connect', () => {
      if (!this.#closed && generation === this.#generation) this.#listener.connected();
    });
    socket.events.on('disconnect', () => {
      if (!this.#closed && generation === this.#generation) this.#replace();
    });
    try {
      socket.connect(s.endpoint);
      socket.subscribe(s.topic);
    } catch (error) {
      socket.close();
      throw error;
    }
    return socket;
  }

  /** The publisher went away: a fresh socket takes over, with nothing queued. */
  #replace(): void {
    this.#generation++;
    this.#listener.lost();
    const old = this.#socket;
    try {
      this.#socket = this.#open();
    } catch {
      // The endpoint connected before; keep the old socket, which reconnects by itself.
      return;
    }
    old.close();
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
