/**
 * `KvEventFeed`: one {@link KvEventSubscriber} per worker of a registry, opened and closed as the
 * registry's events add, replace and remove workers, feeding a policy's event mode.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import { log } from '../core/logger.js';
import { fail } from '../core/options.js';
import type { WorkerEvent } from '../registry/worker-event.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { Worker } from '../workers/worker.js';
import type { MsgpackDecode } from './msgpack.js';
import { KvEventSubscriber, loadKvPeers } from './subscriber.js';
import type { KvEventSubscriberStats, KvEventTarget } from './subscriber-events.js';
import {
  checkSharedSubscriberOptions,
  isPerWorkerOption,
  KV_SUBSCRIBER_OPTIONS,
  type KvEventSubscriberOptions,
  type KvPerWorkerOption,
} from './subscriber-options.js';
import type { Zmq } from './zeromq.js';

/** The port vLLM and SGLang publish KV events on by default (`tcp://*:5557`). @public */
export const KV_EVENTS_DEFAULT_PORT = 5557;

/** Where one worker's events come from; `undefined` (from `endpoint`): the worker has none. @public */
export interface KvEventSource {
  /** The publisher of rank 0 (`tcp://host:port`); a worker's `dpRank` offsets its port. */
  readonly endpoint: string;
  /** The replay socket, offset the same way. @defaultValue none */
  readonly replayEndpoint?: string;
  /** The model its events are filed under. @defaultValue the worker's model when it has one */
  readonly model?: string;
}

/**
 * Options of a {@link KvEventFeed}: every option of a {@link KvEventSubscriber} but those each
 * worker has of its own (its URL, endpoints, rank, model and target), passed to each subscriber.
 *
 * @public
 */
export interface KvEventFeedOptions extends Omit<KvEventSubscriberOptions, KvPerWorkerOption> {
  /** The registry whose workers are followed. */
  readonly registry: WorkerRegistry;
  /**
   * Where events go: a `cache_aware` policy (the one the `Router` routes with), or, per worker,
   * the policy of its model. `undefined` from the function: the worker is not followed.
   */
  readonly target: KvEventTarget | ((worker: Worker) => KvEventTarget | undefined);
  /**
   * Where a worker publishes. @defaultValue `tcp://<the worker's host>:5557`, no replay socket,
   * the worker's model when it lists exactly one (else events for requests without a model)
   */
  readonly source?: (worker: Worker) => KvEventSource | undefined;
}

interface Followed {
  readonly worker: Worker;
  readonly source: KvEventSource;
  readonly target: KvEventTarget;
  /** Resolves to the subscriber (undefined: it failed to open, or was closed first). */
  readonly subscriber: Promise<KvEventSubscriber | undefined>;
  /** Set once open. */
  current: KvEventSubscriber | undefined;
  closed: boolean;
}

/**
 * The default source of a worker: its host on port 5557, its model when it lists exactly one.
 *
 * @public
 */
export function defaultKvEventSource(worker: Worker): KvEventSource {
  const host = new URL(worker.baseUrl).hostname;
  const model = worker.models.length === 1 ? worker.models[0] : undefined;
  const endpoint = `tcp://${host}:${KV_EVENTS_DEFAULT_PORT}`;
  return model === undefined ? { endpoint } : { endpoint, model };
}

/**
 * Follows every worker of a registry: a {@link KvEventSubscriber} per worker, opened when the
 * worker registers, reopened when its spec is replaced with another source (its blocks cleared
 * first), closed and its blocks cleared when it is removed. So every router replica that runs a
 * feed over the same fleet holds the same, true view of every engine's cache.
 *
 * A subscriber that cannot be opened (a bad endpoint from `source`) is skipped and counted in
 * `stats().failed`; the feed itself never throws on a registry event.
 *
 * @example
 * ```ts
 * const policy = createPolicy('cache_aware');
 * const router = new Router({ registry, transport, policy });
 * const feed = await KvEventFeed.start({ registry, target: policy });
 * // … on shutdown
 * await feed.close();
 * ```
 * @public
 */
export class KvEventFeed {
  readonly #options: KvEventFeedOptions;
  readonly #zmq: Zmq;
  readonly #decode: MsgpackDecode;
  readonly #followed = new Map<string, Followed>();
  readonly #listener = (event: WorkerEvent) => this.#onEvent(event);
  #failed = 0;
  #closed = false;

  /**
   * Loads `zeromq`, `@msgpack/msgpack` and the hash function, then follows every worker the
   * registry holds and every one it gains. Resolves once every current worker's subscriber is
   * set up.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` (as a rejection) naming a bad option;
   *   `MISSING_DEPENDENCY` when `zeromq` or `@msgpack/msgpack` is not installed.
   */
  static async start(options: KvEventFeedOptions): Promise<KvEventFeed> {
    const { zmq, decode } = await loadKvPeers();
    return KvEventFeed.startWith(options, zmq, decode);
  }

  /** @internal {@link KvEventFeed.start} over the given socket library and decoder. */
  static async startWith(
    options: KvEventFeedOptions,
    zmq: Zmq,
    decode: MsgpackDecode,
  ): Promise<KvEventFeed> {
    const feed = new KvEventFeed(options, zmq, decode);
    await Promise.all([...feed.#followed.values()].map((f) => f.subscriber));
    return feed;
  }

  private constructor(options: KvEventFeedOptions, zmq: Zmq, decode: MsgpackDecode) {
    if (typeof options !== 'object' || options === null)
      fail('kvEventFeed', 'an options object', options);
    const registry = options.registry as unknown;
    if (
      typeof registry !== 'object' ||
      registry === null ||
      typeof (registry as WorkerRegistry).on !== 'function' ||
      typeof (registry as WorkerRegistry).getAll !== 'function'
    ) {
      fail('kvEventFeed.registry', 'a WorkerRegistry', registry);
    }
    const target = options.target as unknown;
    if (
      typeof target !== 'function' &&
      (typeof target !== 'object' ||
        target === null ||
        typeof (target as KvEventTarget).applyKvEvents !== 'function')
    ) {
      fail('kvEventFeed.target', 'a cache_aware policy, or a function of the worker', target);
    }
    if (options.source !== undefined && typeof options.source !== 'function')
      fail('kvEventFeed.source', 'a function of the worker', options.source);
    for (const key of Object.keys(options)) {
      if (!FEED_KEYS.includes(key)) {
        throw invalidArgument(
          `kvEventFeed.${key} is not an option of kvEventFeed (options: ${FEED_KEYS.join(', ')})`,
        );
      }
    }
    // The subscribers' options, checked once here rather than failing worker by worker.
    checkSharedSubscriberOptions(pick(options), 'kvEventFeed');
    this.#options = options;
    this.#zmq = zmq;
    this.#decode = decode;
    options.registry.on('event', this.#listener);
    for (const worker of options.registry.getAll()) this.#follow(worker);
  }

  /** Workers followed now. */
  get size(): number {
    return this.#followed.size;
  }

  /**
   * Each followed worker's subscriber counts, by worker URL (workers whose subscriber is still
   * opening are left out), and the subscribers that failed to open. O(workers).
   */
  stats(): { readonly workers: Record<string, KvEventSubscriberStats>; readonly failed: number } {
    const workers: Record<string, KvEventSubscriberStats> = {};
    for (const [url, f] of this.#followed) {
      if (f.current !== undefined) workers[url] = f.current.stats();
    }
    return { workers, failed: this.#failed };
  }

  /**
   * Stops following: leaves the registry's events and closes every subscriber. The policy keeps
   * the blocks it was told of. Idempotent.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#options.registry.off('event', this.#listener);
    }
    const all = [...this.#followed.values()];
    this.#followed.clear();
    await Promise.all(all.map((f) => this.#stop(f, false)));
  }

  #onEvent(event: WorkerEvent): void {
    if (this.#closed) return;
    switch (event.type) {
      case 'registered':
        this.#follow(event.worker);
        break;
      case 'replaced': {
        const f = this.#followed.get(event.new.url);
        const source = this.#sourceOf(event.new);
        const target = source === undefined ? undefined : this.#targetOf(event.new);
        if (
          f !== undefined &&
          source !== undefined &&
          target === f.target &&
          sameSource(source, f.source)
        )
          break;
        if (f !== undefined) {
          this.#followed.delete(event.new.url);
          void this.#stop(f, true);
        }
        this.#follow(event.new);
        break;
      }
      case 'removed': {
        const f = this.#followed.get(event.worker.url);
        if (f === undefined) break;
        this.#followed.delete(event.worker.url);
        void this.#stop(f, true);
        break;
      }
      default:
        break;
    }
  }

  #follow(worker: Worker): void {
    const source = this.#sourceOf(worker);
    if (source === undefined) return;
    const target = this.#targetOf(worker);
    if (target === undefined) return;
    const o = this.#options;
    const options: KvEventSubscriberOptions = {
      ...pick(o),
      workerUrl: worker.url,
      endpoint: source.endpoint,
      target,
      ...(source.replayEndpoint === undefined ? {} : { replayEndpoint: source.replayEndpoint }),
      ...(source.model === undefined ? {} : { model: source.model }),
      ...(worker.dpRank === undefined ? {} : { dpRank: worker.dpRank }),
    };
    const followed: Followed = {
      worker,
      source,
      target,
      current: undefined,
      closed: false,
      subscriber: KvEventSubscriber.openWith(options, this.#zmq, this.#decode).then(
        async (subscriber) => {
          if (followed.closed) {
            await subscriber.close();
            return undefined;
          }
          followed.current = subscriber;
          return subscriber;
        },
        () => {
          this.#failed++;
          return undefined;
        },
      ),
    };
    this.#followed.set(worker.url, followed);
  }

  /**
   * Closes a worker's subscriber and, with `clear`, clears its blocks in the target. Never
   * rejects: a target that throws on the clear is reported (`targetError`, the
   * `FLEETROUTE_KV_TARGET_THREW` line) like a subscriber's, and the feed goes on.
   */
  async #stop(f: Followed, clear: boolean): Promise<void> {
    f.closed = true;
    const subscriber = await f.subscriber;
    await subscriber?.close();
    if (!clear) return;
    try {
      f.target.applyKvEvents(f.worker.url, [{ type: 'cleared' }]);
    } catch (error) {
      this.#targetThrew(f, subscriber?.endpoint ?? f.source.endpoint, error);
    }
  }

  #targetThrew(f: Followed, endpoint: string, error: unknown): void {
    const workerUrl = f.worker.url;
    const { onEvent, logger } = this.#options;
    if (onEvent !== undefined) {
      try {
        onEvent({ type: 'targetError', workerUrl, endpoint, error });
      } catch {
        // The hook is the caller's; the feed goes on.
      }
    }
    if (logger === undefined) return;
    const why = error instanceof Error ? error.message : String(error);
    log(
      logger,
      'error',
      'FLEETROUTE_KV_TARGET_THREW',
      `the kv event target threw (${why}) while a removed worker's blocks were cleared (${workerUrl}, ${endpoint})`,
      { workerUrl, endpoint },
    );
  }

  #sourceOf(worker: Worker): KvEventSource | undefined {
    const source = this.#options.source;
    try {
      return source === undefined ? defaultKvEventSource(worker) : source(worker);
    } catch {
      this.#failed++;
      return undefined;
    }
  }

  #targetOf(worker: Worker): KvEventTarget | undefined {
    const target = this.#options.target;
    if (typeof target !== 'function') return target;
    try {
      return target(worker);
    } catch {
      this.#failed++;
      return undefined;
    }
  }
}

function sameSource(a: KvEventSource, b: KvEventSource): boolean {
  return a.endpoint === b.endpoint && a.replayEndpoint === b.replayEndpoint && a.model === b.model;
}

/** The subscriber options a feed passes through: all but those each worker has of its own. */
const PASSED: readonly string[] = KV_SUBSCRIBER_OPTIONS.keys.filter(
  (key) => !isPerWorkerOption(key),
);

const FEED_KEYS: readonly string[] = ['registry', 'target', 'source', ...PASSED];

function pick(o: KvEventFeedOptions): Partial<KvEventSubscriberOptions> {
  const out: Record<string, unknown> = {};
  for (const key of PASSED) {
    const value = (o as unknown as Record<string, unknown>)[key];
    if (value !== undefined) out[key] = value;
  }
  return out as Partial<KvEventSubscriberOptions>;
}
