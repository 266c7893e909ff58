/**
 * `Admission`: a router's flow control — admits a request when a worker of its pool has room,
 * queues it while none has, and turns it away (`SATURATED`) when it may not wait.
 *
 * @module
 * @internal
 */
import { FleetRouteError, type SaturatedReason } from '../core/errors.js';
import { fail } from '../core/options.js';
import type { SelectRequest } from '../policies/policy.js';
import { monotonicClock } from '../resilience/clock.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';
import type { AdmissionEvent, AdmissionStats } from './admission-events.js';
import { MAX_PRIORITY, type ResolvedAdmissionConfig } from './admission-options.js';
import { AdmissionQueue, QueueEntry } from './admission-queue.js';
import { Saturation } from './saturation.js';

/** @internal The right a grant gives: one request's place in its pool until it holds a lease. */
export interface AdmissionTicket {
  /** Gives the place back (the request took its lease, or will not): idempotent. */
  release(): void;
}

/** @internal Told how a request entered with {@link Admission.enter} ends: exactly one call. */
export interface AdmissionWaiter {
  granted(ticket: AdmissionTicket): void;
  rejected(error: FleetRouteError): void;
}

/** @internal What admission reads from its router. */
export interface AdmissionHost {
  /** A pool's workers: the model's candidates (`registry.getByModel`). */
  candidates(model: string | undefined): readonly Worker[];
  /** Reports an outcome; `undefined` while nobody listens (nothing is built then). */
  readonly report: ((event: AdmissionEvent) => void) | undefined;
}

/** A request's admission fields, read and bounded. */
interface Admittee {
  readonly model: string | undefined;
  readonly priority: number;
  readonly tenant: string;
  readonly size: number;
}

/** One pool's queue, and the places granted that have not taken their lease yet. */
class Pool {
  readonly key: string;
  readonly model: string | undefined;
  readonly #limits: ResolvedAdmissionConfig;
  /** Made when the first request waits: a call admitted at once allocates none. */
  #queue: AdmissionQueue<Queued> | undefined;
  reserved = 0;

  constructor(key: string, model: string | undefined, limits: ResolvedAdmissionConfig) {
    this.key = key;
    this.model = model;
    this.#limits = limits;
  }

  get queue(): AdmissionQueue<Queued> {
    this.#queue ??= new AdmissionQueue(this.#limits.maxQueued, this.#limits.maxQueuedSize);
    return this.#queue;
  }

  /** Requests waiting. */
  get count(): number {
    return this.#queue?.count ?? 0;
  }
}

/** What a queue entry holds: whom to tell, and where it waits. */
interface Queued {
  readonly waiter: AdmissionWaiter;
  readonly pool: Pool;
}

/** @internal A queued request, as {@link Admission.enter} hands it back (to cancel it). */
export type Waiting = QueueEntry<Queued>;

const MAX_TENANT_LENGTH = 256;
const MAX_SIZE = 2 ** 48;

/**
 * @internal One router's admission. **Decides without timers**: `enter` grants, queues or
 * refuses synchronously; `wake()` (room may have freed: a lease released, a first token, a load
 * report, a status or breaker change) grants what the pools' room allows, highest band first;
 * `expire(now)` refuses what waited too long. The router calls `wake` from the events that free
 * room and arms one timer for the earliest deadline ({@link Admission.nextDeadline}); a simulator
 * can call both itself on virtual time. Every request entered ends exactly once — granted,
 * refused, cancelled by its caller, or refused with `CLOSED` by `close()`.
 *
 * A pool is one model's candidates. Its room is the sum of its workers' room (see
 * {@link Saturation}) less the places granted that have not taken their lease yet, so a wake never
 * grants more than the room it saw. A pool with no available worker at all is not saturated:
 * its requests are granted and meet `NO_WORKER`, as without admission.
 *
 * Locks: none. Cost: `enter` O(candidates) (one room read per worker); a wake O(candidates) per
 * pool with requests waiting, O(1) when none waits; queue operations O(log tenants + bands).
 */
export class Admission {
  readonly #o: ResolvedAdmissionConfig;
  readonly #clock: () => number;
  readonly #host: AdmissionHost;
  readonly #saturation: Saturation;
  readonly #pools = new Map<string, Pool>();
  #queued = 0;
  #waking = false;
  #wakeAgain = false;
  #closed = false;
  readonly #counts = {
    admitted: 0,
    admittedAfterWait: 0,
    rejected: { shed: 0, queue_full: 0, timeout: 0, busy: 0 } as Record<SaturatedReason, number>,
    aborted: 0,
    closed: 0,
  };

  /**
   * @param staleAfterMs - a load report older than this counts as saturated (the router's
   *   `loadPolling.staleAfterMs`; `Infinity` without polling).
   */
  constructor(o: ResolvedAdmissionConfig, staleAfterMs: number, host: AdmissionHost) {
    this.#o = o;
    this.#clock = o.clock ?? monotonicClock;
    this.#host = host;
    this.#saturation = new Saturation(o, staleAfterMs);
  }

  /** Requests waiting, every pool together. O(1). */
  get queued(): number {
    return this.#queued;
  }

  /** The earliest deadline of a waiting request (`Infinity` when none waits). O(pools). */
  get nextDeadline(): number {
    let next = Number.POSITIVE_INFINITY;
    for (const pool of this.#pools.values())
      if (pool.count > 0) next = Math.min(next, pool.queue.nextDeadline);
    return next;
  }

  /** The admission's clock, read now. */
  now(): number {
    return this.#clock();
  }

  /**
   * Admits `request` at once (`waiter.granted`, before this returns) when its pool has room and
   * nobody waits there; turns it away (`waiter.rejected`) when the pool is saturated and its
   * priority is below `shedBelowPriority`, or the queue is full for it; otherwise queues it.
   *
   * @returns the queued entry (to {@link Admission.cancel} it), or `undefined` when it was
   *   decided at once.
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` for a `priority`, `tenant` or `size` out of
   *   bounds (before anything changed).
   */
  enter(request: SelectRequest, waiter: AdmissionWaiter): Waiting | undefined {
    const a = readAdmittee(request);
    if (this.#closed) {
      waiter.rejected(new FleetRouteError('CLOSED', 'the router is closed'));
      return undefined;
    }
    const pool = this.#pool(a.model);
    const now = this.#clock();
    // With others waiting, the pool had no room at their last wake: the new request joins them.
    const others = pool.count;
    if (others === 0 && this.#room(pool, now, pool.reserved + 1) !== 0) {
      this.#grant(pool, waiter, a.priority, false, 0);
      return undefined;
    }
    if (a.priority < this.#o.shedBelowPriority) {
      this.#drop(pool);
      this.#refuse(waiter, 'shed', a.model, a.priority, false, 0);
      return undefined;
    }
    const entry = new QueueEntry<Queued>(
      { waiter, pool },
      a.priority,
      a.tenant,
      a.size,
      now,
      now + this.#o.maxWaitMs,
    );
    const pushed = pool.queue.push(entry);
    for (const shed of pushed.shed) {
      this.#queued--;
      this.#refuse(
        shed.value.waiter,
        'queue_full',
        a.model,
        shed.priority,
        true,
        now - shed.enqueuedAt,
      );
    }
    if (!pushed.queued) {
      this.#drop(pool);
      this.#refuse(waiter, 'queue_full', a.model, a.priority, false, 0);
      return undefined;
    }
    this.#queued++;
    // A pool that had others waiting may have room their wake did not see (a breaker's open
    // period ran out): look again, now with this request among them.
    if (others !== 0) this.wake();
    return entry.queued ? entry : undefined;
  }

  /**
   * Whether a request could be served now without waiting: its pool has room (or no available
   * worker) and nobody waits there. For `Router.select`, which cannot wait. Changes nothing.
   * Cost: O(candidates).
   */
  wouldAdmit(request: SelectRequest): boolean {
    const a = readAdmittee(request);
    const pool = this.#pools.get(keyOf(a.model));
    if (pool !== undefined && pool.count > 0) return false;
    const reserved = pool?.reserved ?? 0;
    const room = this.#saturation.poolRoom(
      this.#host.candidates(a.model),
      this.#clock(),
      reserved + 1,
    );
    return room < 0 || room > reserved;
  }

  /**
   * The available workers of `model`'s pool that have no room now, for the pick to leave out;
   * `undefined` when none is full, or when no worker with room is left once `tried` is left out
   * too (the pick then has them all: admission let the request through, and a worker must take
   * it). Cost: O(candidates).
   */
  fullWorkers(model: string | undefined, tried?: ReadonlySet<Worker>): Worker[] | undefined {
    const candidates = this.#host.candidates(model);
    const now = this.#clock();
    // The common case, a fleet with room everywhere: O(groups), no walk.
    if (this.#saturation.noneFull(candidates, now)) return undefined;
    let full: Worker[] | undefined;
    let open = false;
    for (let i = 0; i < candidates.length; i++) {
      const worker = candidates[i]!;
      if (!worker.isAvailable()) continue;
      if (this.#saturation.roomOf(worker, now) === 0) (full ??= []).push(worker);
      else if (tried === undefined || !tried.has(worker)) open = true;
    }
    return open ? full : undefined;
  }

  /** Counts a `select` turned away (`busy`) and reports it. */
  refusedSelect(request: SelectRequest): FleetRouteError {
    const a = readAdmittee(request);
    return this.#refusal('busy', a.model, a.priority, false, 0);
  }

  /**
   * Takes a queued request out at once (its caller aborted): nothing of it is left behind.
   * @returns `false` when it was no longer queued (granted or refused already).
   */
  cancel(entry: Waiting): boolean {
    const pool = entry.value.pool;
    if (!pool.queue.remove(entry)) return false;
    this.#queued--;
    this.#counts.aborted++;
    this.#drop(pool);
    this.#emit(
      'aborted',
      undefined,
      pool.model,
      entry.priority,
      true,
      this.#clock() - entry.enqueuedAt,
    );
    return true;
  }

  /**
   * Room may have freed: grants, pool by pool, as many waiting requests as its room allows, in
   * queue order. Re-entrant calls (a grant that frees room at once) are folded into the running
   * one. O(1) when nobody waits.
   */
  wake(): void {
    if (this.#queued === 0) return;
    if (this.#waking) {
      this.#wakeAgain = true;
      return;
    }
    this.#waking = true;
    try {
      do {
        this.#wakeAgain = false;
        const now = this.#clock();
        for (const pool of [...this.#pools.values()]) {
          if (pool.count === 0) continue;
          let room = this.#room(pool, now);
          while (room !== 0 && pool.count > 0) {
            const entry = pool.queue.pop()!;
            this.#queued--;
            this.#grant(pool, entry.value.waiter, entry.priority, true, now - entry.enqueuedAt);
            room--;
          }
        }
      } while (this.#wakeAgain && this.#queued > 0);
    } finally {
      this.#waking = false;
    }
  }

  /** Refuses (`timeout`) every waiting request whose deadline is at or before `now`. */
  expire(now: number = this.#clock()): void {
    for (const pool of [...this.#pools.values()]) {
      for (;;) {
        if (pool.count === 0) break;
        const oldest = pool.queue.peekOldest();
        if (oldest === undefined || oldest.deadline > now) break;
        pool.queue.remove(oldest);
        this.#queued--;
        this.#refuse(
          oldest.value.waiter,
          'timeout',
          pool.model,
          oldest.priority,
          true,
          now - oldest.enqueuedAt,
        );
      }
      this.#drop(pool);
    }
  }

  /** A round of load reports arrived (keyed by URL): records them, then wakes. */
  updateLoads(
    reports: ReadonlyMap<string, LoadReport>,
    prefillingOf: (url: string) => number | undefined,
  ): void {
    this.#saturation.record(reports, this.#clock(), prefillingOf);
    this.wake();
  }

  /** A worker left: forgets its report. */
  forget(url: string): void {
    this.#saturation.forget(url);
  }

  /** Refuses every waiting request with `CLOSED`; later `enter`s are refused too. Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    const now = this.#clock();
    for (const pool of this.#pools.values()) {
      for (const entry of pool.count === 0 ? [] : pool.queue.entries()) {
        pool.queue.remove(entry);
        this.#queued--;
        this.#counts.closed++;
        this.#emit('closed', undefined, pool.model, entry.priority, true, now - entry.enqueuedAt);
        entry.value.waiter.rejected(new FleetRouteError('CLOSED', 'the router is closed'));
      }
    }
    this.#pools.clear();
  }

  /** A plain copy of the figures. */
  stats(): AdmissionStats {
    const c = this.#counts;
    return {
      queued: this.#queued,
      admitted: c.admitted,
      admittedAfterWait: c.admittedAfterWait,
      rejected: { ...c.rejected },
      aborted: c.aborted,
      closed: c.closed,
    };
  }

  /** The pool's free room: its workers' room less the places granted; -1: no available worker. */
  #room(pool: Pool, now: number, enough?: number): number {
    const room = this.#saturation.poolRoom(this.#host.candidates(pool.model), now, enough);
    if (room < 0) return -1;
    return room > pool.reserved ? room - pool.reserved : 0;
  }

  #grant(
    pool: Pool,
    waiter: AdmissionWaiter,
    priority: number,
    queued: boolean,
    waitedMs: number,
  ): void {
    pool.reserved++;
    if (queued) this.#counts.admittedAfterWait++;
    else this.#counts.admitted++;
    let held = true;
    const ticket: AdmissionTicket = {
      release: () => {
        if (!held) return;
        held = false;
        pool.reserved--;
        this.#drop(pool);
        this.wake();
      },
    };
    this.#emit('admitted', undefined, pool.model, priority, queued, waitedMs);
    waiter.granted(ticket);
  }

  #refuse(
    waiter: AdmissionWaiter,
    reason: SaturatedReason,
    model: string | undefined,
    priority: number,
    queued: boolean,
    waitedMs: number,
  ): void {
    waiter.rejected(this.#refusal(reason, model, priority, queued, waitedMs));
  }

  #refusal(
    reason: SaturatedReason,
    model: string | undefined,
    priority: number,
    queued: boolean,
    waitedMs: number,
  ): FleetRouteError {
    this.#counts.rejected[reason]++;
    this.#emit('rejected', reason, model, priority, queued, waitedMs);
    return new FleetRouteError(
      'SATURATED',
      `${MESSAGES[reason]} for model ${JSON.stringify(model ?? '')}`,
      {
        reason,
        retryAfterMs: this.#o.retryAfterMs,
      },
    );
  }

  #emit(
    outcome: AdmissionEvent['outcome'],
    reason: SaturatedReason | undefined,
    model: string | undefined,
    priority: number,
    queued: boolean,
    waitedMs: number,
  ): void {
    const report = this.#host.report;
    if (report === undefined) return;
    report({
      type: 'admission',
      model,
      outcome,
      reason,
      priority,
      queued,
      waitedMs,
      depth: this.#queued,
    });
  }

  #pool(model: string | undefined): Pool {
    const key = keyOf(model);
    let pool = this.#pools.get(key);
    if (pool === undefined) {
      pool = new Pool(key, model, this.#o);
      this.#pools.set(key, pool);
    }
    return pool;
  }

  /** Forgets a pool with nothing waiting and no place granted. */
  #drop(pool: Pool): void {
    if (pool.count === 0 && pool.reserved === 0) this.#pools.delete(pool.key);
  }
}

const MESSAGES: Readonly<Record<SaturatedReason, string>> = {
  shed: 'every worker is full and the request’s priority is below the shedding threshold',
  queue_full: 'every worker is full and the admission queue is full',
  timeout: 'no worker had room before the request’s wait ran out',
  busy: 'every worker is full or others are waiting',
};

function keyOf(model: string | undefined): string {
  return model ?? '';
}

/**
 * @internal A request's admission fields: `priority` an integer in ±{@link MAX_PRIORITY}
 * (default 0), `tenant` a string of at most 256 characters (default `''`), `size` an integer in
 * [0, 2⁴⁸] (default: its tokens' count, else its text's length).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the field.
 */
export function readAdmittee(request: SelectRequest): Admittee {
  const { priority = 0, tenant = '', size } = request;
  if (!Number.isInteger(priority) || Math.abs(priority) > MAX_PRIORITY)
    fail('request.priority', `an integer in [-${MAX_PRIORITY}, ${MAX_PRIORITY}]`, priority);
  if (typeof tenant !== 'string' || tenant.length > MAX_TENANT_LENGTH)
    fail('request.tenant', `a string of at most ${MAX_TENANT_LENGTH} characters`, tenant);
  let stated = size;
  if (stated === undefined) stated = request.tokens?.length ?? request.text?.length ?? 0;
  else if (!Number.isInteger(stated) || stated < 0 || stated > MAX_SIZE)
    fail('request.size', 'an integer in [0, 2^48]', stated);
  const model = typeof request.model === 'string' ? request.model : undefined;
  return { model, priority, tenant, size: Math.min(stated, MAX_SIZE) };
}
