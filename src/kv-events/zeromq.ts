/**
 * The optional peer `zeromq`, loaded when first asked for, so `fleetroute/kv-events` imports
 * without it; and the few socket members the subscriber uses, typed here so the published
 * declarations never name the package.
 *
 * @module
 * @internal
 */
import { optionalPeer } from '../core/optional-peer.js';

/** @internal The socket options the subscriber sets (libzmq's names, in milliseconds / bytes). */
export interface ZmqSocketOptions {
  linger?: number;
  reconnectInterval?: number;
  reconnectMaxInterval?: number;
  maxMessageSize?: number;
  receiveHighWaterMark?: number;
  receiveTimeout?: number;
  sendTimeout?: number;
}

/** @internal The members of a `zeromq` socket the subscriber uses. */
export interface ZmqSocket {
  connect(endpoint: string): void;
  close(): void;
  receive(): Promise<Uint8Array[]>;
  readonly closed: boolean;
  readonly events: {
    on(
      type: 'connect' | 'handshake' | 'disconnect',
      listener: (event: { address: string }) => void,
    ): unknown;
  };
}

/** @internal A SUB socket. */
export interface ZmqSubscriber extends ZmqSocket {
  subscribe(...prefixes: string[]): void;
}

/** @internal A DEALER socket. */
export interface ZmqDealer extends ZmqSocket {
  send(message: Uint8Array[]): Promise<void>;
}

/** @internal The constructors the subscriber needs. */
export interface Zmq {
  readonly Subscriber: new (options?: ZmqSocketOptions) => ZmqSubscriber;
  readonly Dealer: new (options?: ZmqSocketOptions) => ZmqDealer;
}

/**
 * @internal Loads `zeromq` once per process.
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) naming the package and the
 *   command that installs it; a later call tries again.
 */
export const loadZeromq: () => Promise<Zmq> = optionalPeer<Zmq>({
  name: 'zeromq',
  range: '^6.8.0',
  by: 'fleetroute/kv-events (to subscribe to engines)',
  usable: (m) => typeof m.Subscriber === 'function',
});
