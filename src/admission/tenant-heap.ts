/**
 * `TenantHeap`: the tenants of one priority band that have requests waiting, ordered by the size
 * they have been served (least first), ties to the one that took its place first.
 *
 * @module
 * @internal
 */

/** @internal One tenant's waiting requests in one band, and its place in the band's heap. */
export interface TenantLine<E> {
  /** The band it belongs to (opaque to the heap). */
  readonly band: object;
  /** Total size served to this tenant while it had requests waiting (the band's virtual time on). */
  served: number;
  head: E | undefined;
  tail: E | undefined;
  /** Its index in the heap; -1 when not in it. */
  index: number;
  /** Tie-break: when it took its current place (lower first). */
  stamp: number;
}

/**
 * @internal A binary min-heap of tenant lines keyed by (`served`, `stamp`), with each line's index
 * kept on it so a line can leave from anywhere. Cost: O(log n) per change, O(1) to peek.
 */
export class TenantHeap<E> {
  readonly #items: TenantLine<E>[] = [];
  #stamps = 0;

  get size(): number {
    return this.#items.length;
  }

  /** The line to serve next. */
  peek(): TenantLine<E> | undefined {
    return this.#items[0];
  }

  insert(line: TenantLine<E>): void {
    line.stamp = ++this.#stamps;
    line.index = this.#items.length;
    this.#items.push(line);
    this.#up(line.index);
  }

  /** Gives `line` a new tie-break stamp (it was just served: it goes after its equals). */
  restamp(line: TenantLine<E>): void {
    line.stamp = ++this.#stamps;
  }

  /** Puts `line` back in its place after its key changed. */
  update(line: TenantLine<E>): void {
    if (line.index < 0) return;
    this.#up(line.index);
    this.#down(line.index);
  }

  delete(line: TenantLine<E>): void {
    const i = line.index;
    if (i < 0) return;
    const items = this.#items;
    const last = items.pop()!;
    line.index = -1;
    if (last === line) return;
    items[i] = last;
    last.index = i;
    this.#up(i);
    this.#down(last.index);
  }

  #less(a: TenantLine<E>, b: TenantLine<E>): boolean {
    return a.served < b.served || (a.served === b.served && a.stamp < b.stamp);
  }

  #up(i: number): void {
    const items = this.#items;
    const item = items[i]!;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(item, items[parent]!)) break;
      items[i] = items[parent]!;
      items[i]!.index = i;
      i = parent;
    }
    items[i] = item;
    item.index = i;
  }

  #down(i: number): void {
    const items = this.#items;
    const n = items.length;
    const item = items[i]!;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= n) break;
      if (child + 1 < n && this.#less(items[child + 1]!, items[child]!)) child++;
      if (!this.#less(items[child]!, item)) break;
      items[i] = items[child]!;
      items[i]!.index = i;
      i = child;
    }
    items[i] = item;
    item.index = i;
  }
}
