/**
 * `AdmissionTally`: what a run with admission counts per request — served or rejected, its wait,
 * its priority and tenant — and the {@link AdmissionRun} made of it.
 *
 * @module
 * @internal
 */
import type { SaturatedReason } from '../core/errors.js';
import { percentiles } from './metrics.js';
import type { AdmissionRun } from './result.js';

/** @internal Counters of one run's admission. Each `on…` is O(1); the result O(n log n). */
export class AdmissionTally {
  readonly #priority: Int32Array;
  readonly #tenant: string[];
  readonly #size: Float64Array;
  readonly #waited: number[] = [];
  readonly #ttft = new Map<number, number[]>();
  readonly #served = new Map<number, number>();
  readonly #requests = new Map<number, number>();
  readonly #tenants = new Map<
    string,
    { requests: number; served: number; offered: number; saturated: number }
  >();
  #servedAll = 0;
  #servedAfterWait = 0;
  readonly #rejected = { shed: 0, queue_full: 0, timeout: 0 };

  constructor(requests: number) {
    this.#priority = new Int32Array(requests);
    this.#tenant = new Array<string>(requests).fill('');
    this.#size = new Float64Array(requests);
  }

  /** Request `id` reached a router with this priority, tenant and prompt size. */
  onArrive(id: number, priority: number, tenant: string, size: number): void {
    this.#priority[id] = priority;
    this.#tenant[id] = tenant;
    this.#size[id] = size;
    this.#requests.set(priority, (this.#requests.get(priority) ?? 0) + 1);
    const t = this.#tenantOf(tenant);
    t.requests++;
    t.offered += size;
  }

  /** Request `id` reached a worker after `waitedMs` in the queue (`queued`: it waited there). */
  onServed(id: number, waitedMs: number, queued: boolean): void {
    this.#servedAll++;
    this.#waited.push(waitedMs);
    const priority = this.#priority[id]!;
    this.#served.set(priority, (this.#served.get(priority) ?? 0) + 1);
    const t = this.#tenantOf(this.#tenant[id]!);
    t.served++;
    if (queued) {
      this.#servedAfterWait++;
      t.saturated += this.#size[id]!;
    }
  }

  /**
   * A request was turned away for `reason` (`admit` gives `shed`, `queue_full` or `timeout`;
   * `busy` is `select`'s alone and is not counted).
   */
  onRejected(reason: SaturatedReason | undefined): void {
    if (reason === 'shed' || reason === 'queue_full' || reason === 'timeout')
      this.#rejected[reason]++;
  }

  /** A served request `id` had its first token `ttftMs` after its arrival. */
  onFirstToken(id: number, ttftMs: number): void {
    const priority = this.#priority[id]!;
    let list = this.#ttft.get(priority);
    if (list === undefined) this.#ttft.set(priority, (list = []));
    list.push(ttftMs);
  }

  result(): AdmissionRun {
    let offered = 0;
    let saturated = 0;
    for (const t of this.#tenants.values()) {
      offered += t.offered;
      saturated += t.saturated;
    }
    const share = (part: number, whole: number): number => (whole === 0 ? 0 : part / whole);
    return {
      served: this.#servedAll,
      servedAfterWait: this.#servedAfterWait,
      rejected: { ...this.#rejected },
      queueWaitMs: percentiles(this.#waited),
      byPriority: [...this.#requests.keys()]
        .sort((a, b) => b - a)
        .map((priority) => ({
          priority,
          requests: this.#requests.get(priority)!,
          served: this.#served.get(priority) ?? 0,
          ttftMs: percentiles(this.#ttft.get(priority) ?? []),
        })),
      tenants: [...this.#tenants.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([tenant, t]) => ({
          tenant,
          requests: t.requests,
          served: t.served,
          offeredShare: share(t.offered, offered),
          saturatedShare: share(t.saturated, saturated),
        })),
    };
  }

  #tenantOf(name: string): {
    requests: number;
    served: number;
    offered: number;
    saturated: number;
  } {
    let t = this.#tenants.get(name);
    if (t === undefined) {
      t = { requests: 0, served: 0, offered: 0, saturated: 0 };
      this.#tenants.set(name, t);
    }
    return t;
  }
}
