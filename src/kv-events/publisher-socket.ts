/**
 * `PublisherSocket`: the SUB socket that follows one engine's KV-event publisher — replaced by a
 * fresh one whenever a connection ends, and reconnected with backoff while connections bring
 * nothing.
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
  /** First wait before reconnecting after a connection that brought nothing (ms). */
  readonly reconnectIntervalMs: number;
  /** Longest such wait (ms); at or below `reconnectIntervalMs`, the wait stays constant. */
  readonly reconnectMaxIntervalMs: number;
}

/** @internal What a {@link PublisherSocket} tells its owner, synchronously. */
export interface PublisherListener {
  /** A publisher is there: the ZMTP handshake succeeded, or a first message came. */
  connected(): void;
  /**
   * The publisher's connection was lost; `generation` has moved already, and a fresh socket
   * (with nothing queued) takes over once this returns.
   */
  lost(): void;
}

/** @internal One message, with the generation of the socket it came on. */
export interface Received {
  readonly frames: Uint8Array[];
  readonly generation: number;
}

/**
 * @internal The wait before a reconnection, after `failures` connections in a row that brought
 * no message: none after a connection that did (the publisher went away; libzmq's own backoff
 * then paces attempts the host refuses), else `base` doubling up to `max` (libzmq's rule: a
 * `max` at or below `base` keeps the wait at `base`).
 */
export function reconnectDelay(failures: number, base: number, max: number): number {
  if (failures <= 0) return 0;
  const doubled = base * 2 ** Math.min(failures - 1, 30);
  return max > base ? Math.min(max, doubled) : base;
}

/**
 * @internal One publisher followed over a SUB socket.
 *
 * - A publisher is reported there (`connected`) once its ZMTP handshake succeeds or its first
 *   message comes, never on the bare TCP connection: a program that accepts connections and says
 *   nothing is no publisher.
 * - When a connection ends, the generation moves and a fresh socket takes over, so nothing the
 *   old connection had queued is read after the loss. Only a connection that had been reported
 *   `connected` is `lost`.
 * - The fresh socket connects at once after a connection that brought messages; after one that
 *   brought none (a peer that closes each connection at once, an engine dying right after the
 *   handshake) it waits {@link reconnectDelay}, so such a peer sees a few connections a second at
 *   most, not thousands.
 *
 * Emits: `connected`, `lost` · Cost: O(1) per message.
 */
export class PublisherSocket {
  readonly #zmq: Zmq;
  readonly #settings: PublisherSettings;
  readonly #listener: PublisherListener;
  #socket: ZmqSubscriber;
  #generation = 0;
  /** The current socket's publisher was reported `connected`. */
  #confirmed = false;
  /** The current socket brought a message. */
  #delivered = false;
  /** Connections in a row that ended without bringing a message. */
  #failures = 0;
  /** The deferred connection of the current socket, while it waits. */
  #connecting: ReturnType<typeof setTimeout> | undefined;
  #closed = false;

  /** @throws what the socket library throws when it cannot connect to the endpoint. */
  constructor(zmq: Zmq, settings: PublisherSettings, listener: PublisherListener) {
    this.#zmq = zmq;
    this.#settings = settings;
    this.#listener = listener;
    this.#socket = this.#open();
    try {
      this.#socket.connect(settings.endpoint);
    } catch (error) {
      this.#socket.close();
      throw error;
    }
  }

  /** +1 on each fresh socket: work begun on an older one's message is abandoned. */
  get generation(): number {
    return this.#generation;
  }

  /**
   * The next message of the current socket (a socket error waits `reconnectIntervalMs`, then
   * reads again; a message that was queued on a socket since replaced is dropped).
   *
   * @returns the message and its socket's generation, or `undefined` once closed.
   */
  async receive(): Promise<Received | undefined> {
    while (!this.#closed) {
      const socket = this.#socket;
      const generation = this.#generation;
      let frames: Uint8Array[];
      try {
        frames = await socket.receive();
      } catch {
        // Closed (the loop ends), replaced (read the new one), or a socket error: wait a
        // little, then try again.
        if (!this.#closed && socket === this.#socket)
          await pause(this.#settings.reconnectIntervalMs);
        continue;
      }
      if (this.#closed || generation !== this.#generation) continue;
      this.#delivered = true;
      this.#failures = 0;
      if (!this.#confirmed) this.#confirm();
      return { frames, generation };
    }
    return undefined;
  }

  /** Closes the socket; a pending `receive` resolves `undefined`. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#connecting);
    this.#connecting = undefined;
    this.#socket.close();
  }

  /** A SUB socket for the publisher, subscribed, reporting to this one; not connected yet. */
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
    const current = () => !this.#closed && generation === this.#generation;
    socket.events.on('handshake', () => {
      if (current() && !this.#confirmed) this.#confirm();
    });
    socket.events.on('disconnect', () => {
      if (current()) this.#replace();
    });
    try {
      socket.subscribe(s.topic);
    } catch (error) {
      socket.close();
      throw error;
    }
    return socket;
  }

  #confirm(): void {
    this.#confirmed = true;
    this.#listener.connected();
  }

  /**
   * A connection ended: a fresh socket takes over, connecting at once after a connection that
   * brought messages, else after the backoff.
   */
  #replace(): void {
    const confirmed = this.#confirmed;
    this.#failures = this.#delivered ? 0 : this.#failures + 1;
    this.#generation++;
    this.#confirmed = false;
    this.#delivered = false;
    clearTimeout(this.#connecting);
    this.#connecting = undefined;
    if (confirmed) this.#listener.lost();
    if (this.#closed) return;
    this.#socket.close();
    this.#reopen(this.#delay());
  }

  /** The wait before the next connection, after the failures so far. */
  #delay(): number {
    const s = this.#settings;
    return reconnectDelay(this.#failures, s.reconnectIntervalMs, s.reconnectMaxIntervalMs);
  }

  /**
   * A fresh socket now, connected after `delay` ms. A socket that cannot be made or connected
   * (the library failing, not the peer) is tried again after the backoff; meanwhile `receive`
   * waits on the closed one.
   */
  #reopen(delay: number): void {
    let fresh: ZmqSubscriber;
    try {
      fresh = this.#open();
    } catch {
      this.#retry(() => this.#reopen(0));
      return;
    }
    this.#socket = fresh;
    if (delay === 0) this.#connectNow(fresh);
    else this.#connecting = setTimeout(() => this.#connectNow(fresh), delay).unref();
  }

  /** Connects `socket` if it is still the current one. */
  #connectNow(socket: ZmqSubscriber): void {
    this.#connecting = undefined;
    if (this.#closed || socket !== this.#socket) return;
    try {
      socket.connect(this.#settings.endpoint);
    } catch {
      this.#retry(() => this.#connectNow(socket));
    }
  }

  #retry(again: () => void): void {
    this.#failures++;
    this.#connecting = setTimeout(() => {
      this.#connecting = undefined;
      if (!this.#closed) again();
    }, this.#delay()).unref();
  }
}

function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
