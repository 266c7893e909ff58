/**
 * In-memory stand-ins for the subscriber's ZMQ sockets, serving an {@link EngineModel}: the
 * test publishes batches into a queue "on the wire" and delivers them one at a time, so every
 * interleaving of engine operations and deliveries is reachable without a socket or a timer.
 * The DEALER answers a replay request from the engine's buffer as it is when the request comes
 * (as the engines' ROUTER does), or fails at once (a receive timeout) when replay is off.
 */
import type {
  Zmq,
  ZmqDealer,
  ZmqSocketOptions,
  ZmqSubscriber,
} from '../../../src/kv-events/zeromq.js';
import { type EngineModel, seqFrame } from './fake-engine.js';

type Listener = (event: { address: string }) => void;
type EventType = 'connect' | 'handshake' | 'disconnect';

class Events {
  readonly #listeners = new Map<string, Listener[]>();
  on(type: EventType, listener: Listener): void {
    this.#listeners.set(type, [...(this.#listeners.get(type) ?? []), listener]);
  }
  emit(type: EventType): void {
    for (const l of this.#listeners.get(type) ?? []) l({ address: 'memory' });
  }
}

class Closed extends Error {}

/** One engine publisher and its replay socket, in memory. */
export class MemoryWire {
  /** Published and not yet delivered, oldest first. */
  readonly wire: Uint8Array[][] = [];
  /** Whether the replay socket answers. */
  replay = true;
  /** Every frame handed to the subscriber, live or replayed, with its payload. */
  readonly handed: { seq: bigint; payload: Uint8Array }[] = [];
  readonly sockets: { readonly closed: boolean }[] = [];
  #subscriber: MemorySubscriber | undefined;

  constructor(readonly engine: EngineModel) {}

  /** The socket constructors for `KvEventSubscriber.openWith`. */
  get zmq(): Zmq {
    const wire = this;
    return {
      Subscriber: class extends MemorySubscriber {
        constructor(options?: ZmqSocketOptions) {
          super(wire, options);
          wire.#subscriber = this;
          wire.sockets.push(this);
        }
      },
      Dealer: class extends MemoryDealer {
        constructor(options?: ZmqSocketOptions) {
          super(wire, options);
          wire.sockets.push(this);
        }
      },
    };
  }

  /** Records a batch on the engine and puts it on the wire. */
  publish(events: readonly unknown[]): void {
    const { seq, payload } = this.engine.record(events);
    this.wire.push([new TextEncoder().encode(this.engine.options.topic), seqFrame(seq), payload]);
  }

  /**
   * The engine process restarts; the subscriber sees its connection drop, and a fresh socket of
   * its own connects again. What the old process had not delivered dies with it (and with the old
   * connection's socket).
   */
  restart(): void {
    this.engine.restart();
    this.wire.length = 0;
    this.#subscriber?.events.emit('disconnect');
  }

  /**
   * Hands the oldest message on the wire to the subscriber and resolves once it waits for the
   * next one (its processing, replays included, is done). @returns false when the wire was empty.
   */
  async deliver(): Promise<boolean> {
    const frames = this.wire.shift();
    const sub = this.#subscriber;
    if (frames === undefined || sub === undefined) return false;
    await sub.hand(frames);
    return true;
  }

  /** Delivers everything on the wire. */
  async drain(): Promise<void> {
    while (await this.deliver());
  }
}

class MemorySocket {
  readonly events = new Events();
  closed = false;
  constructor(
    protected readonly wire: MemoryWire,
    readonly options: ZmqSocketOptions | undefined,
  ) {}
  connect(_endpoint: string): void {
    if (this.closed) throw new Closed('closed');
  }
}

class MemorySubscriber extends MemorySocket implements ZmqSubscriber {
  #pending: { resolve(frames: Uint8Array[]): void; reject(e: Error): void } | undefined;
  #idle: (() => void) | undefined;

  override connect(endpoint: string): void {
    super.connect(endpoint);
    queueMicrotask(() => {
      this.events.emit('connect');
      this.events.emit('handshake');
    });
  }
  subscribe(..._prefixes: string[]): void {}

  receive(): Promise<Uint8Array[]> {
    if (this.closed) return Promise.reject(new Closed('closed'));
    const idle = this.#idle;
    this.#idle = undefined;
    const next = new Promise<Uint8Array[]>((resolve, reject) => {
      this.#pending = { resolve, reject };
    });
    idle?.();
    return next;
  }

  /** Resolves the pending receive with `frames`; resolves when the next receive is asked for. */
  hand(frames: Uint8Array[]): Promise<void> {
    return new Promise<void>((resolve) => {
      const deliver = () => {
        const pending = this.#pending!;
        this.#pending = undefined;
        this.#idle = resolve;
        this.#record(frames);
        pending.resolve(frames);
      };
      if (this.#pending !== undefined) deliver();
      else this.#idle = deliver; // the loop has not asked yet: deliver when it does
    });
  }

  #record(frames: Uint8Array[]): void {
    const seq = frames[1]!;
    if (seq.byteLength === 8) {
      const value = new DataView(seq.buffer, seq.byteOffset, 8).getBigInt64(0, false);
      this.wire.handed.push({ seq: value, payload: frames[2]! });
    }
  }

  close(): void {
    this.closed = true;
    const pending = this.#pending;
    this.#pending = undefined;
    pending?.reject(new Closed('closed'));
    const idle = this.#idle;
    this.#idle = undefined;
    idle?.();
  }
}

class MemoryDealer extends MemorySocket implements ZmqDealer {
  #answer: Uint8Array[][] = [];

  async send(message: Uint8Array[]): Promise<void> {
    if (this.closed) throw new Closed('closed');
    if (message.length !== 2 || message[0]!.byteLength !== 0 || message[1]!.byteLength !== 8)
      return; // the engines ignore anything but ['', seq]
    if (!this.wire.replay) return;
    const from = new DataView(message[1]!.buffer, message[1]!.byteOffset, 8).getBigInt64(0, false);
    for (const { seq, payload } of this.wire.engine.replayFrom(from)) {
      this.#answer.push([new Uint8Array(0), seqFrame(seq), payload]);
    }
  }

  async receive(): Promise<Uint8Array[]> {
    if (this.closed) throw new Closed('closed');
    const frames = this.#answer.shift();
    if (frames === undefined) throw new Error('receive timed out');
    if (frames[1]!.byteLength === 8) {
      const seq = new DataView(frames[1]!.buffer, frames[1]!.byteOffset, 8).getBigInt64(0, false);
      if (seq >= 0n) this.wire.handed.push({ seq, payload: frames[2]! });
    }
    return frames;
  }

  close(): void {
    this.closed = true;
    this.#answer = [];
  }
}
