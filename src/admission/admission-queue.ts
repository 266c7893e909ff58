/**
 * `AdmissionQueue`: the requests waiting for room in one pool — priority bands served strictly
 * from the highest, tenants within a band served fairly by the size they have been served, each
 * tenant's requests in arrival order; bounded in requests and in total size.
 *
 * @module
 * @internal
 */
import { TenantHeap, type TenantLine } from './tenant-heap.js';

/**
 * @internal One request in the queue. Linked in three lists at once: its tenant's line (FIFO),
 * its band's arrival order (for shedding the band's newest) and the queue's arrival order (for
 * deadlines, which arrive in the same order since every entry waits the same bound).
 */
export class QueueEntry<T> {
  readonly value: T;
  readonly priority: number;
  readonly tenant: string;
  /** The size the caller stated (≥ 0): counted against `maxSize`. */
  readonly size: number;
  /** When it must leave the queue (the queue's clock). */
  readonly deadline: number;
  /** When it joined the queue. */
  readonly enqueuedAt: number;
  /** `false` once it left the queue, by whatever way. */
  queued = true;
  /** @internal Tenant line links. */
  tenantPrev: QueueEntry<T> | undefined = undefined;
  tenantNext: QueueEntry<T> | undefined = undefined;
  /** @internal Band arrival-order links. */
  bandPrev: QueueEntry<T> | undefined = undefined;
  bandNext: QueueEntry<T> | undefined = undefined;
  /** @internal Queue arrival-order links. */
  prev: QueueEntry<T> | undefined = undefined;
  next: QueueEntry<T> | undefined = undefined;
  /** @internal Its tenant's line in its band. */
  line: TenantLine<QueueEntry<T>> | undefined = undefined;

  constructor(
    value: T,
    priority: number,
    tenant: string,
    size: number,
    enqueuedAt: number,
    deadline: number,
  ) {
    this.value = value;
    this.priority = priority;
    this.tenant = tenant;
    this.size = size;
    this.enqueuedAt = enqueuedAt;
    this.deadline = deadline;
  }
}

/** One priority band: its tenants' lines and their fair order. */
class Band<T> {
  readonly priority: number;
  readonly lines = new Map<string, TenantLine<QueueEntry<T>>>();
  readonly heap = new TenantHeap<QueueEntry<T>>();
  /** Arrival order within the band (newest at the tail). */
  head: QueueEntry<T> | undefined = undefined;
  tail: QueueEntry<T> | undefined = undefined;
  count = 0;
  size = 0;
  /**
   * The band's virtual time: the service of the tenant picked last, before its pick. A tenant
   * that starts waiting starts there, so it neither claims service for the time it was idle nor
   * waits behind those that were served while it was away.
   */
  virtualTime = 0;

  constructor(priority: number) {
    this.priority = priority;
  }
}

/** @internal What `push` did: the entry, and what it pushed out (or itself, when refused). */
export interface PushResult<T> {
  /** `true` when the entry is queued; `false` when it was refused (the queue is full for it). */
  readonly queued: boolean;
  /** Entries of lower bands pushed out to make room, newest first (empty when none). */
  readonly shed: readonly QueueEntry<T>[];
}

const NONE: readonly never[] = Object.freeze([]);

/**
 * @internal The queue of one pool. **Order**: the highest band first, strictly; within a band the
 * tenant that has been served the least total size while waiting (start-time fair queuing by the
 * stated size: a tenant sending ten times as many requests, or ten times longer ones, gets the
 * same share of the band's dispatches by size as any other that keeps requests waiting; ties go
 * to the tenant that waited longest at that service); within a tenant, arrival order. **Bounds**:
 * at most `maxCount` entries and `maxSize` total size; a push past either refuses the newest of the
 * lowest band — the new entry itself when its band is the lowest (or no lower band can free
 * enough), otherwise entries of lower bands, newest first.
 *
 * Locks: none (single-threaded). Cost: push, pop and remove O(log tenants in the band + bands);
 * a push that sheds, O(bands) more per entry shed. Nothing is kept for a tenant or a band with
 * nothing queued.
 */
export class AdmissionQueue<T> {
  readonly #maxCount: number;
  readonly #maxSize: number;
  /** Bands by priority, highest first. */
  readonly #bands: Band<T>[] = [];
  #head: QueueEntry<T> | undefined;
  #tail: QueueEntry<T> | undefined;
  #count = 0;
  #size = 0;

  constructor(maxCount: number, maxSize: number) {
    this.#maxCount = maxCount;
    this.#maxSize = maxSize;
  }

  /** Entries queued. */
  get count(): number {
    return this.#count;
  }

  /** Their total size. */
  get size(): number {
    return this.#size;
  }

  /** The earliest deadline queued (`Infinity` when empty). O(1). */
  get nextDeadline(): number {
    return this.#head?.deadline ?? Number.POSITIVE_INFINITY;
  }

  /** The highest priority queued (`-Infinity` when empty). O(1). */
  get highestPriority(): number {
    return this.#bands[0]?.priority ?? Number.NEGATIVE_INFINITY;
  }

  /**
   * Queues `entry`, or refuses it, shedding lower bands' newest entries when that makes room.
   * Decides before it changes anything: a refused entry leaves the queue as it was.
   */
  push(entry: QueueEntry<T>): PushResult<T> {
    const overCount = this.#count + 1 - this.#maxCount;
    const overSize = this.#size + entry.size - this.#maxSize;
    if (overCount <= 0 && overSize <= 0) {
      this.#link(entry);
      return { queued: true, shed: NONE };
    }
    // What the bands below the entry's could free, lowest first.
    let freeCount = 0;
    let freeSize = 0;
    const bands = this.#bands;
    for (let i = bands.length - 1; i >= 0 && bands[i]!.priority < entry.priority; i--) {
      freeCount += bands[i]!.count;
      freeSize += bands[i]!.size;
    }
    if (freeCount < overCount || freeSize < overSize || entry.size > this.#maxSize) {
      entry.queued = false;
      return { queued: false, shed: NONE };
    }
    const shed: QueueEntry<T>[] = [];
    while (this.#count + 1 > this.#maxCount || this.#size + entry.size > this.#maxSize) {
      const victim = bands[bands.length - 1]!.tail!;
      this.remove(victim);
      shed.push(victim);
    }
    this.#link(entry);
    return { queued: true, shed };
  }

  /**
   * Takes the next entry to serve (see the class for the order), or `undefined` when empty, and
   * counts its size as served for its tenant.
   */
  pop(): QueueEntry<T> | undefined {
    const band = this.#bands[0];
    if (band === undefined) return undefined;
    const line = band.heap.peek()!;
    const entry = line.head!;
    band.virtualTime = line.served;
    // The service counts before the removal, so the tenant's next request (if any) goes back into
    // the heap at its new place.
    line.served += Math.max(entry.size, 1);
    band.heap.restamp(line);
    this.remove(entry);
    return entry;
  }

  /** The oldest entry (the first to reach its deadline), without taking it. O(1). */
  peekOldest(): QueueEntry<T> | undefined {
    return this.#head;
  }

  /** Takes `entry` out of the queue (an abort, a deadline). @returns `false` when not queued. */
  remove(entry: QueueEntry<T>): boolean {
    if (!entry.queued) return false;
    entry.queued = false;
    const line = entry.line!;
    const band = line.band as Band<T>;
    // Tenant line.
    if (entry.tenantPrev === undefined) line.head = entry.tenantNext;
    else entry.tenantPrev.tenantNext = entry.tenantNext;
    if (entry.tenantNext === undefined) line.tail = entry.tenantPrev;
    else entry.tenantNext.tenantPrev = entry.tenantPrev;
    // Band order.
    if (entry.bandPrev === undefined) band.head = entry.bandNext;
    else entry.bandPrev.bandNext = entry.bandNext;
    if (entry.bandNext === undefined) band.tail = entry.bandPrev;
    else entry.bandNext.bandPrev = entry.bandPrev;
    // Queue order.
    if (entry.prev === undefined) this.#head = entry.next;
    else entry.prev.next = entry.next;
    if (entry.next === undefined) this.#tail = entry.prev;
    else entry.next.prev = entry.prev;
    entry.tenantPrev = entry.tenantNext = entry.bandPrev = entry.bandNext = undefined;
    entry.prev = entry.next = undefined;
    entry.line = undefined;
    this.#count--;
    this.#size -= entry.size;
    band.count--;
    band.size -= entry.size;
    if (line.head === undefined) {
      band.heap.delete(line);
      band.lines.delete(entry.tenant);
    } else {
      // A pop raised its service: it moves back in the heap (a removal from the middle of its
      // line leaves its key, and its place, as they were).
      band.heap.update(line);
    }
    if (band.count === 0) this.#bands.splice(this.#bands.indexOf(band), 1);
    return true;
  }

  /** Every entry, oldest first (a snapshot: safe to remove from while iterating). */
  entries(): QueueEntry<T>[] {
    const out: QueueEntry<T>[] = [];
    for (let e = this.#head; e !== undefined; e = e.next) out.push(e);
    return out;
  }

  #link(entry: QueueEntry<T>): void {
    const band = this.#bandOf(entry.priority);
    let line = band.lines.get(entry.tenant);
    if (line === undefined) {
      line = {
        band,
        served: band.virtualTime,
        head: undefined,
        tail: undefined,
        index: -1,
        stamp: 0,
      };
      band.lines.set(entry.tenant, line);
    }
    entry.line = line;
    entry.tenantPrev = line.tail;
    if (line.tail === undefined) line.head = entry;
    else line.tail.tenantNext = entry;
    line.tail = entry;
    if (line.index < 0) band.heap.insert(line);
    entry.bandPrev = band.tail;
    if (band.tail === undefined) band.head = entry;
    else band.tail.bandNext = entry;
    band.tail = entry;
    entry.prev = this.#tail;
    if (this.#tail === undefined) this.#head = entry;
    else this.#tail.next = entry;
    this.#tail = entry;
    entry.queued = true;
    this.#count++;
    this.#size += entry.size;
    band.count++;
    band.size += entry.size;
  }

  /** The band of `priority`, made (in its place, highest first) when absent. O(bands). */
  #bandOf(priority: number): Band<T> {
    const bands = this.#bands;
    let i = 0;
    while (i < bands.length && bands[i]!.priority > priority) i++;
    if (i < bands.length && bands[i]!.priority === priority) return bands[i]!;
    const band = new Band<T>(priority);
    bands.splice(i, 0, band);
    return band;
  }
}
