/**
 * The optional peer `zeromq`, loaded when first asked for, so `fleetroute/kv-events` imports
 * without it; and the few socket members the subscriber uses, typed here so the published
 * declarations never name the package.
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';

const PACKAGE = 'zeromq';

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
    on(type: 'connect' | 'disconnect', listener: (event: { address: string }) => void): unknown;
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

let loading: Promise<Zmq> | undefined;

/**
 * @internal Loads `zeromq` once per process.
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) naming the package and the
 *   command that installs it; a later call tries again.
 */
export function loadZeromq(): Promise<Zmq> {
  loading ??= import(PACKAGE).then(
    (module: Zmq & { default?: Zmq }) => {
      // CommonJS: the named exports, or the whole module as the default export.
      const zmq = typeof module.Subscriber === 'function' ? module : module.default;
      if (zmq === undefined || typeof zmq.Subscriber !== 'function') {
        throw new FleetRouteError(
          'MISSING_DEPENDENCY',
          `fleetroute/kv-events could not read the ${PACKAGE} package's sockets: install ${PACKAGE}@^6.8.0`,
        );
      }
      return zmq;
    },
    (cause: unknown) => {
      loading = undefined;
      throw new FleetRouteError(
        'MISSING_DEPENDENCY',
        `fleetroute/kv-events needs the optional peer dependency ${PACKAGE} to subscribe to engines: npm install ${PACKAGE}@^6.8.0`,
        { cause },
      );
    },
  );
  return loading;
}
