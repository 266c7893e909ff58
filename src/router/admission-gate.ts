/**
 * `AdmissionGate`: a router's admission control on real time — the waits of `execute` and
 * `admit` as promises that follow their caller's signal, the wake-ups from everything that frees
 * room, and one timer for the earliest deadline.
 *
 * @module
 * @internal
 */
import { Admission, type AdmissionTicket } from '../admission/admission.js';
import type { AdmissionEvent, AdmissionStats } from '../admission/admission-events.js';
import type { ResolvedAdmissionConfig } from '../admission/admission-options.js';
import type { FleetRouteError } from '../core/errors.js';
import type { SelectRequest } from '../policies/policy.js';
import { registryInternals, type WorkerRegistry } from '../registry/worker-registry.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker } from '../workers/worker.js';

/** @internal Where the gate reports outcomes: the router's events. */
export interface AdmissionSink {
  /** Whether someone listens to `admission` events now. */
  listening(): boolean;
  emit(event: AdmissionEvent): void;
}

/**
 * @internal The router's side of {@link Admission}. Wakes it when a worker's in-flight or
 * prefilling count falls (the registry's room signal), when a load round arrives, when a worker
 * joins, changes status, or its breaker closes; arms one timer for the earliest deadline while
 * anything waits (re-armed after each change, never a polling loop).
 *
 * Cost: one room listener on the registry while started; per wait, one promise and one abort
 * listener while queued.
 */
export class AdmissionGate {
  readonly #admission: Admission;
  readonly #registry: WorkerRegistry;
  #stopRoom: (() => void) | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** The deadline the timer is armed for (`Infinity`: none). */
  #armedFor = Number.POSITIVE_INFINITY;

  constructor(
    config: ResolvedAdmissionConfig,
    registry: WorkerRegistry,
    staleAfterMs: number,
    sink: AdmissionSink,
  ) {
    this.#registry = registry;
    const report = (event: AdmissionEvent): void => sink.emit(event);
    this.#admission = new Admission(config, staleAfterMs, {
      candidates: (model) => registry.getByModel(model),
      // Read per outcome: no event is built while nobody listens.
      get report() {
        return sink.listening() ? report : undefined;
      },
    });
  }

  /** Starts listening for freed room. Idempotent. */
  start(): void {
    this.#stopRoom ??= registryInternals.onRoomFreed(this.#registry, () => this.wake());
  }

  /**
   * Waits for `request`'s admission.
   * @returns the ticket at once when the pool has room and nobody waits (no promise, no
   *   microtask: the call goes on in the same turn), else a promise of it. Release the ticket once
   *   the request holds its lease (or will not).
   * @throws (or rejects) {@link FleetRouteError} `SATURATED` (turned away), `CLOSED`, the signal's
   *   reason when it aborts first (the request leaves the queue at once); `INVALID_ARGUMENT` for a
   *   bad `priority`, `tenant` or `size`.
   */
  wait(request: SelectRequest, signal: AbortSignal): AdmissionTicket | Promise<AdmissionTicket> {
    if (signal.aborted) throw signal.reason;
    // Decided at once, or queued: the waiter settles `outcome` or the promise below.
    let outcome: AdmissionTicket | FleetRouteError | undefined;
    let settle:
      | ((ticket: AdmissionTicket | undefined, error?: FleetRouteError) => void)
      | undefined;
    const onAbort = (): void => {
      if (waiting !== undefined && this.#admission.cancel(waiting)) settle!(undefined);
      this.#arm();
    };
    const waiting = this.#admission.enter(request, {
      granted: (ticket) => {
        if (settle === undefined) outcome = ticket;
        else settle(ticket);
      },
      rejected: (error) => {
        if (settle === undefined) outcome = error;
        else settle(undefined, error);
      },
    });
    if (waiting === undefined) {
      if (outcome instanceof Error) throw outcome;
      return outcome!;
    }
    return new Promise<AdmissionTicket>((resolve, reject) => {
      settle = (ticket, error) => {
        signal.removeEventListener('abort', onAbort);
        if (error !== undefined) reject(error);
        else if (ticket === undefined) reject(signal.reason);
        else if (signal.aborted) {
          // Aborted between the grant and now: the place goes back at once.
          ticket.release();
          reject(signal.reason);
        } else resolve(ticket);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.#arm();
    });
  }

  /** Whether `select` may go ahead (see {@link Admission.wouldAdmit}). */
  wouldAdmit(request: SelectRequest): boolean {
    return this.#admission.wouldAdmit(request);
  }

  /**
   * The workers a pick for `request` leaves out: `tried`, and the pool's workers that are full
   * while others have room — a policy never sends an admitted request to a full worker when one
   * with room exists. Not for a prefill or decode leg: the pool spans every worker type, and
   * leaving its full workers out could leave a leg none of its own type. Cost: O(candidates); a
   * new set only when some worker is full.
   */
  exclude(
    request: SelectRequest,
    tried: ReadonlySet<Worker> | undefined,
  ): ReadonlySet<Worker> | undefined {
    if (request.leg === 'prefill' || request.leg === 'decode') return tried;
    const model = typeof request.model === 'string' ? request.model : undefined;
    const full = this.#admission.fullWorkers(model, tried);
    if (full === undefined) return tried;
    const out = new Set<Worker>(full);
    if (tried !== undefined) for (const worker of tried) out.add(worker);
    return out;
  }

  /** The `SATURATED` (`busy`) error of a `select` that may not go ahead, counted. */
  refusedSelect(request: SelectRequest): FleetRouteError {
    return this.#admission.refusedSelect(request);
  }

  /** Room may have freed. */
  wake(): void {
    if (this.#admission.queued === 0) return;
    this.#admission.wake();
    this.#arm();
  }

  /** The earliest deadline of a queued request (`Infinity` when none waits). O(pools). */
  get nextDeadline(): number {
    return this.#admission.nextDeadline;
  }

  /**
   * Refuses (`timeout`) every waiting request whose deadline is at or before `now`, for a caller
   * that keeps time itself (the simulator, on simulated time). O(expired × log queued).
   */
  expire(now: number): void {
    this.#admission.expire(now);
    this.#arm();
  }

  /** A load round arrived: recorded for saturation, then a wake. */
  updateLoads(reports: ReadonlyMap<string, LoadReport>): void {
    const byUrl = new Map<string, number>();
    for (const worker of this.#registry.getAll()) byUrl.set(worker.url, worker.prefilling);
    this.#admission.updateLoads(reports, (url) => byUrl.get(url));
    this.#arm();
  }

  /** A worker left the registry. */
  forget(url: string): void {
    this.#admission.forget(url);
  }

  stats(): AdmissionStats {
    return this.#admission.stats();
  }

  /** Refuses every wait with `CLOSED`, stops the timer and the room listener. Idempotent. */
  close(): void {
    this.#stopRoom?.();
    this.#stopRoom = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = Number.POSITIVE_INFINITY;
    this.#admission.close();
  }

  /** One timer, for the earliest deadline queued; none while nothing waits. */
  #arm(): void {
    const next = this.#admission.nextDeadline;
    if (next === this.#armedFor) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = next;
    if (next === Number.POSITIVE_INFINITY) return;
    const delay = Math.max(Math.ceil(next - this.#admission.now()), 0);
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#armedFor = Number.POSITIVE_INFINITY;
      this.#admission.expire();
      this.#arm();
    }, delay);
    // Ref'd: it exists only while a caller waits in the queue, and keeps a script that awaits
    // that call alive until it is decided.
  }
}
