/**
 * `PublisherSocket` over stand-in sockets: what counts as a publisher, when a connection's end is
 * a loss, and when the next socket connects. (Real sockets against hostile peers:
 * subscriber-faults.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import { PublisherSocket, reconnectDelay } from '../../src/kv-events/publisher-socket.js';
import type { Zmq, ZmqSocketOptions, ZmqSubscriber } from '../../src/kv-events/zeromq.js';

type Listener = (event: { address: string }) => void;

class StandIn implements ZmqSubscriber {
  readonly listeners = new Map<string, Listener>();
  readonly events = {
    on: (type: string, listener: Listener) => void this.listeners.set(type, listener),
  };
  connects = 0;
  closed = false;
  constructor(readonly options: ZmqSocketOptions | undefined) {}
  connect(): void {
    this.connects++;
  }
  subscribe(): void {}
  close(): void {
    this.closed = true;
  }
  receive(): Promise<Uint8Array[]> {
    return new Promise(() => undefined);
  }
  emit(type: 'connect' | 'handshake' | 'disconnect'): void {
    this.listeners.get(type)?.({ address: 'stand-in' });
  }
}

function standIns() {
  const sockets: StandIn[] = [];
  const zmq = {
    Subscriber: class extends StandIn {
      constructor(options?: ZmqSocketOptions) {
        super(options);
        sockets.push(this);
      }
    },
    Dealer: class {},
  } as unknown as Zmq;
  return { zmq, sockets, last: () => sockets.at(-1)! };
}

const SETTINGS = {
  endpoint: 'tcp://127.0.0.1:5557',
  topic: '',
  highWaterMark: 10,
  maxMessageSize: 1_024,
  reconnectIntervalMs: 60_000,
  reconnectMaxIntervalMs: 60_000,
};

function publisher() {
  const s = standIns();
  const told: string[] = [];
  const socket = new PublisherSocket(s.zmq, SETTINGS, {
    connected: () => void told.push('connected'),
    lost: () => void told.push('lost'),
  });
  return { ...s, told, socket };
}

describe('reconnectDelay', () => {
  it('none after a connection that brought messages, then doubling to the cap', () => {
    expect([0, 1, 2, 3, 4, 5, 6, 7].map((n) => reconnectDelay(n, 100, 5_000))).toEqual([
      0, 100, 200, 400, 800, 1_600, 3_200, 5_000,
    ]);
    expect(reconnectDelay(10_000, 100, 5_000)).toBe(5_000);
  });

  it('a cap at or below the first wait keeps the wait constant (libzmq’s rule)', () => {
    expect(reconnectDelay(5, 100, 0)).toBe(100);
    expect(reconnectDelay(5, 100, 100)).toBe(100);
  });
});

describe('PublisherSocket', () => {
  it('a TCP connection alone is no publisher; the handshake is', () => {
    const p = publisher();
    p.last().emit('connect');
    expect(p.told).toEqual([]);
    p.last().emit('handshake');
    expect(p.told).toEqual(['connected']);
    p.socket.close();
  });

  it('a connection that ends before the handshake is no loss: a fresh socket, connected after the backoff', () => {
    const p = publisher();
    const first = p.last();
    first.emit('connect');
    first.emit('disconnect');
    expect(p.told).toEqual([]);
    expect(p.socket.generation).toBe(1);
    expect(first.closed).toBe(true);
    expect(p.sockets).toHaveLength(2);
    // Not yet connected: it waits reconnectIntervalMs.
    expect(p.last().connects).toBe(0);
    p.socket.close();
    expect(p.last().closed).toBe(true);
  });

  it('a connected publisher that goes away is lost; its old socket’s later events are ignored', () => {
    const p = publisher();
    const first = p.last();
    first.emit('handshake');
    first.emit('disconnect');
    expect(p.told).toEqual(['connected', 'lost']);
    first.emit('handshake');
    first.emit('disconnect');
    expect(p.told).toEqual(['connected', 'lost']);
    expect(p.sockets).toHaveLength(2);
    p.socket.close();
  });
});
