/**
 * The simulator's clock: a binary min-heap of timed events, ties broken by insertion order so a
 * run is deterministic.
 *
 * @module
 * @internal
 */

/** @internal */
export interface SimEvent {
  readonly time: number;
  readonly seq: number;
  readonly kind: number;
  readonly target: number;
}

/** @internal */
export class EventQueue {
  readonly #heap: SimEvent[] = [];
  #seq = 0;

  get size(): number {
    return this.#heap.length;
  }

  /** Schedules an event. O(log n). */
  push(time: number, kind: number, target: number): void {
    const heap = this.#heap;
    const event: SimEvent = { time, seq: this.#seq++, kind, target };
    let i = heap.length;
    heap.push(event);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(event, heap[parent]!)) break;
      heap[i] = heap[parent]!;
      i = parent;
    }
    heap[i] = event;
  }

  /** The earliest event, left in the queue (`undefined` when empty). O(1). */
  peek(): SimEvent | undefined {
    return this.#heap[0];
  }

  /** Removes and returns the earliest event. O(log n). */
  pop(): SimEvent | undefined {
    const heap = this.#heap;
    const top = heap[0];
    const last = heap.pop();
    if (top === undefined || last === undefined || heap.length === 0) return top;
    let i = 0;
    const n = heap.length;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && before(heap[r]!, heap[l]!) ? r : l;
      if (!before(heap[c]!, last)) break;
      heap[i] = heap[c]!;
      i = c;
    }
    heap[i] = last;
    return top;
  }
}

function before(a: SimEvent, b: SimEvent): boolean {
  return a.time < b.time || (a.time === b.time && a.seq < b.seq);
}
