/**
 * `Readiness`: the promises of `router.ready()`, settled as workers become ready.
 *
 * @module
 * @internal
 */
import { FleetRouteError } from '../core/errors.js';
import type { KeepAlive } from '../core/keep-alive.js';
import { fail, readInteger, readObject, readString } from '../core/options.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import { MAX_MODEL_ID_LENGTH } from '../workers/worker-spec.js';

/** Options of {@link Router.ready}. @public */
export interface ReadyOptions {
  /** Stop waiting when this signal aborts (for example `AbortSignal.timeout(30_000)`). */
  readonly signal?: AbortSignal;
  /** Workers that must be ready. At least 1. @defaultValue 1 */
  readonly minWorkers?: number;
  /** Count only workers that serve this model (wildcard workers serve every model). @defaultValue every worker */
  readonly model?: string;
}

/** @internal `ready()`'s options, read. */
export interface ReadCondition {
  readonly minWorkers: number;
  readonly model: string | undefined;
  readonly signal: AbortSignal | undefined;
}

interface Waiter {
  readonly minWorkers: number;
  readonly model: string | undefined;
  readonly resolve: () => void;
  readonly reject: (reason: unknown) => void;
  readonly signal: AbortSignal | undefined;
  readonly onAbort: () => void;
}

/**
 * @internal The callers waiting for ready workers. `check()` runs after every registry event the
 * router sees; each waiter costs one pass over its model's workers, stopping at `minWorkers`.
 * Each waiter holds `keepAlive` until it settles: the probes that will make workers ready run on
 * `unref`'d timers, so without it a script awaiting `ready()` would exit before they do.
 */
export class Readiness {
  readonly #registry: WorkerRegistry;
  readonly #keepAlive: KeepAlive;
  readonly #waiters = new Set<Waiter>();

  constructor(registry: WorkerRegistry, keepAlive: KeepAlive) {
    this.#registry = registry;
    this.#keepAlive = keepAlive;
  }

  /**
   * Reads `ready()`'s options, before anything starts.
   *
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming a bad option.
   */
  read(options: ReadyOptions | undefined): ReadCondition {
    const o = readObject('ready options', options);
    const minWorkers = readInteger('ready.minWorkers', o.minWorkers, 1, 1, 1_000_000);
    const model =
      o.model === undefined ? undefined : readString('ready.model', o.model, MAX_MODEL_ID_LENGTH);
    const signal = o.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal))
      fail('ready.signal', 'an AbortSignal', signal);
    return { minWorkers, model, signal };
  }

  /** Resolves once `minWorkers` workers (of `model`) are `ready`; never throws. */
  wait({ minWorkers, model, signal }: ReadCondition): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#count(model, minWorkers) >= minWorkers) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        minWorkers,
        model,
        resolve,
        reject,
        signal,
        onAbort: () => this.#settle(waiter, signal?.reason),
      };
      this.#waiters.add(waiter);
      this.#keepAlive.hold();
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
    });
  }

  /** Resolves every waiter whose condition now holds. */
  check(): void {
    for (const waiter of this.#waiters) {
      if (this.#count(waiter.model, waiter.minWorkers) >= waiter.minWorkers) this.#settle(waiter);
    }
  }

  /** Rejects every waiter with `CLOSED`. */
  close(): void {
    const error = new FleetRouteError('CLOSED', 'the router closed before workers were ready');
    for (const waiter of this.#waiters) this.#settle(waiter, error);
  }

  /** Ready workers of `model`, counted up to `enough`. */
  #count(model: string | undefined, enough: number): number {
    const workers = this.#registry.getByModel(model);
    let ready = 0;
    for (let i = 0; i < workers.length && ready < enough; i++) {
      if (workers[i]!.status === 'ready') ready++;
    }
    return ready;
  }

  /** Resolves (no reason) or rejects the waiter, once. */
  #settle(waiter: Waiter, ...reason: [unknown?]): void {
    if (!this.#waiters.delete(waiter)) return;
    this.#keepAlive.release();
    waiter.signal?.removeEventListener('abort', waiter.onAbort);
    if (reason.length === 0) waiter.resolve();
    else waiter.reject(reason[0]);
  }
}
