/**
 * The options of a `KvEventSubscriber`, declared once: their documentation, their table (name,
 * default, reader) and the one function that resolves them, rank-offset endpoints included.
 *
 * @module
 */
import { pageSizeMismatch } from '../cache/kv-key-target.js';
import { invalidArgument } from '../core/errors.js';
import { type Logger, readLogger } from '../core/logger.js';
import {
  boolean,
  callback,
  custom,
  duration,
  integer,
  OptionTable,
  type Resolved,
  required,
} from '../core/option-table.js';
import { fail, readString } from '../core/options.js';
import { type Clock, monotonicClock } from '../resilience/clock.js';
import { KV_DECODE_LIMITS, type KvDecodeLimits } from './batch-decoder.js';
import type { KvEventTarget, KvSubscriberEvent } from './subscriber-events.js';
import { KV_TRANSLATOR_OPTIONS } from './translator.js';

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
   * First wait before connecting again after a connection that ended without bringing a message
   * (a port taken by another program, an engine dying as it starts), doubled for each such
   * connection in a row up to `reconnectMaxIntervalMs`; and libzmq's first wait after a refused
   * connection. After a connection that brought messages, the next one is tried at once.
   * @defaultValue 100
   */
  readonly reconnectIntervalMs?: number;
  /**
   * Longest wait between connection attempts (at or below `reconnectIntervalMs`: the wait stays
   * `reconnectIntervalMs`). @defaultValue 5000
   */
  readonly reconnectMaxIntervalMs?: number;
  /**
   * Longest wait for each message of a replay; past it the replay has failed, and the worker's
   * blocks are cleared. @defaultValue 2000
   */
  readonly replayTimeoutMs?: number;
  /**
   * Longest a whole replay may take (ms), however its messages trickle in. Past it the replay
   * has failed: the subscriber goes back to the live stream, and a gap the replay was to fill is
   * reported unfilled (`gap` with `filled: false`, the `FLEETROUTE_KV_GAP` warning) and cleared.
   * Meanwhile live messages wait in the socket (up to `highWaterMark`). @defaultValue 10000
   */
  readonly replayDeadlineMs?: number;
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
  /**
   * Bounds on each message (payload bytes, events, blocks, tokens); see `KvDecodeLimits`.
   * @defaultValue `KvDecodeLimits`' defaults
   */
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

const MAX_ENDPOINT = 2_048;
const MAX_TOPIC = 1_024;

/**
 * The options of a {@link KvEventSubscriber} each worker has of its own: a `KvEventFeed` sets
 * them per worker and passes every other option to each subscriber as it was given.
 *
 * @public
 */
export type KvPerWorkerOption =
  | 'workerUrl'
  | 'endpoint'
  | 'replayEndpoint'
  | 'dpRank'
  | 'model'
  | 'target';

/** {@link KvPerWorkerOption} at run time: a record, so the compiler holds the two equal. */
const PER_WORKER: Readonly<Record<KvPerWorkerOption, true>> = {
  workerUrl: true,
  endpoint: true,
  replayEndpoint: true,
  dpRank: true,
  model: true,
  target: true,
};

/** @internal Whether `key` is a {@link KvPerWorkerOption}. */
export function isPerWorkerOption(key: string): boolean {
  return Object.hasOwn(PER_WORKER, key);
}

/** @internal The options of a {@link KvEventSubscriber}, declared once. */
export const KV_SUBSCRIBER_OPTIONS = new OptionTable(
  'kvEventSubscriber',
  'KvEventSubscriberOptions',
  {
    workerUrl: required('a worker URL', (field, value) => readString(field, value, MAX_ENDPOINT)),
    endpoint: required('a tcp://host:port, ipc:// or inproc:// endpoint', readEndpoint),
    replayEndpoint: custom<string | undefined>(undefined, readEndpoint, 'none'),
    dpRank: custom<number | undefined>(undefined, readRank, 'none'),
    topic: custom('', (field, value) => {
      if (typeof value !== 'string' || value.length > MAX_TOPIC) fail(field, 'a string', value);
      return value;
    }),
    target: required('an object with applyKvEvents (a cache_aware policy)', readTarget),
    pageSize: KV_TRANSLATOR_OPTIONS.specs.pageSize,
    model: custom<string | undefined>(
      undefined,
      (field, value) => {
        if (typeof value !== 'string') fail(field, 'a string', value);
        return value;
      },
      'none',
    ),
    maxBlocks: KV_TRANSLATOR_OPTIONS.specs.maxBlocks,
    reconnectIntervalMs: duration(100),
    reconnectMaxIntervalMs: duration(5_000, 0),
    replayTimeoutMs: duration(2_000),
    replayDeadlineMs: duration(10_000),
    maxReplayBatches: integer(100_000, 1, 10_000_000),
    highWaterMark: integer(10_000, 0, 10_000_000),
    warmup: boolean(true),
    limits: custom<KvDecodeLimits>(
      KV_DECODE_LIMITS.read(undefined),
      (field, value) => KV_DECODE_LIMITS.read(value, undefined, field),
      "`KvDecodeLimits`' defaults",
    ),
    clock: callback<Clock>('a function', undefined, '`performance.now`'),
    logger: custom<Logger | undefined>(
      undefined,
      (field, value) => readLogger(field, value),
      'none',
    ),
    onEvent: callback<(event: KvSubscriberEvent) => void>('a function', undefined, 'none'),
  },
);

/** @internal A subscriber's options, resolved: endpoints offset for the rank, defaults filled. */
export type ResolvedKvSubscriberOptions = Omit<
  Resolved<typeof KV_SUBSCRIBER_OPTIONS.specs>,
  'clock'
> & {
  readonly clock: Clock;
};

/**
 * @internal Validates a subscriber's options and resolves them: every default filled, the
 * endpoints offset for `dpRank`, unknown keys refused.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option (or no options).
 */
export function resolveKvSubscriberOptions(
  input: unknown,
  field = KV_SUBSCRIBER_OPTIONS.component,
): ResolvedKvSubscriberOptions {
  if (input === undefined) fail(field, 'an options object', input);
  const o = KV_SUBSCRIBER_OPTIONS.read(input, undefined, field);
  const mismatch = pageSizeMismatch(o.target, o.pageSize);
  if (mismatch !== undefined) throw invalidArgument(`${field}.${mismatch}`);
  const rank = o.dpRank ?? 0;
  return Object.freeze({
    ...o,
    endpoint: kvEventEndpointOfRank(o.endpoint, rank),
    replayEndpoint:
      o.replayEndpoint === undefined ? undefined : kvEventEndpointOfRank(o.replayEndpoint, rank),
    clock: o.clock ?? monotonicClock,
  });
}

/**
 * @internal Checks the options a feed passes to every subscriber, through the same table, before
 * any subscriber opens: the per-worker options stand in with valid values no error can name.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 */
export function checkSharedSubscriberOptions(shared: object, field: string): void {
  KV_SUBSCRIBER_OPTIONS.read(
    {
      ...shared,
      workerUrl: 'http://worker.invalid',
      endpoint: 'inproc://worker',
      target: { applyKvEvents: () => undefined },
    },
    undefined,
    field,
  );
}

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

function readRank(field: string, value: unknown): number {
  if (!(Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 65_535))
    fail(field, 'an integer in [0, 65535]', value);
  return value as number;
}

function readTarget(field: string, value: unknown): KvEventTarget {
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof (value as KvEventTarget).applyKvEvents !== 'function'
  ) {
    fail(field, 'an object with applyKvEvents (a cache_aware policy)', value);
  }
  return value as KvEventTarget;
}
