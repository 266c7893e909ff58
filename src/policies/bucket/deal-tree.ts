/**
 * The deal counts of the `bucket` policy: how many requests it sent each bucket since the owners
 * last changed, in a min segment tree, so the least-dealt bucket of a range and the nearest
 * bucket under a count are found in O(log k).
 *
 * @module
 * @internal
 */

/**
 * @internal Counts per bucket `0 … k−1` in a min segment tree (an implicit binary tree over a
 * power-of-two number of leaves; padding leaves hold `+∞`). Every operation is O(log k) and
 * allocates nothing; {@link DealTree.reset} is O(k).
 */
export class DealTree {
  /** `#min[1]` is the root; leaf `j` is `#min[#leaves + j]`. */
  #min = new Float64Array(2);
  #leaves = 1;
  #size = 0;

  /** Buckets counted. */
  get size(): number {
    return this.#size;
  }

  /** Starts `k` buckets, all at 0. O(k). */
  reset(k: number): void {
    let leaves = 1;
    while (leaves < k) leaves *= 2;
    if (this.#min.length < 2 * leaves) this.#min = new Float64Array(2 * leaves);
    const min = this.#min;
    this.#leaves = leaves;
    this.#size = k;
    min.fill(Number.POSITIVE_INFINITY, 0, 2 * leaves);
    min.fill(0, leaves, leaves + k);
    for (let node = leaves - 1; node >= 1; node--) {
      min[node] = Math.min(min[2 * node]!, min[2 * node + 1]!);
    }
  }

  /** Bucket `j`'s count. O(1). */
  count(j: number): number {
    return this.#min[this.#leaves + j]!;
  }

  /** The lowest count (`+∞` with no bucket). O(1). */
  lowest(): number {
    return this.#min[1]!;
  }

  /** Adds `amount` (≥ 0) to bucket `j`. O(log k). */
  add(j: number, amount: number): void {
    const min = this.#min;
    let node = this.#leaves + j;
    min[node]! += amount;
    for (node >>>= 1; node >= 1; node >>>= 1) {
      const m = Math.min(min[2 * node]!, min[2 * node + 1]!);
      if (min[node] === m) break;
      min[node] = m;
    }
  }

  /**
   * The bucket of `from … to` (inclusive) with the lowest count there; among equal ones the
   * first at or after `from + turn mod (to − from + 1)`, wrapping to `from` (with `turn` 0, the
   * lowest). O(log k).
   */
  leastIn(from: number, to: number, turn = 0): number {
    const last = this.#leaves - 1;
    const target = this.#rangeMin(1, 0, last, from, to);
    const start = from + (turn % (to - from + 1));
    const after = this.#firstAtMost(1, 0, last, start, to, target);
    return after >= 0 ? after : this.#firstAtMost(1, 0, last, from, start - 1, target);
  }

  /**
   * The bucket nearest to `j` whose count is at most `limit` (at equal distance, the lower
   * count, then the one met first going up from bucket `turn mod k`, wrapping — with `turn` 0,
   * the lower), or -1 when none is. O(log k).
   */
  nearestAtMost(j: number, limit: number, turn = 0): number {
    const last = this.#size - 1;
    const up = this.#firstAtMost(1, 0, this.#leaves - 1, j, last, limit);
    const down = this.#lastAtMost(1, 0, this.#leaves - 1, 0, j, limit);
    if (up < 0) return down;
    if (down < 0) return up;
    const du = up - j;
    const dd = j - down;
    if (du !== dd) return du < dd ? up : down;
    const cu = this.count(up);
    const cd = this.count(down);
    if (cu !== cd) return cu < cd ? up : down;
    const k = this.#size;
    const t = turn % k;
    return (up - t + k) % k < (down - t + k) % k ? up : down;
  }

  #rangeMin(node: number, lo: number, hi: number, from: number, to: number): number {
    if (to < lo || hi < from) return Number.POSITIVE_INFINITY;
    if (from <= lo && hi <= to) return this.#min[node]!;
    const mid = (lo + hi) >>> 1;
    return Math.min(
      this.#rangeMin(2 * node, lo, mid, from, to),
      this.#rangeMin(2 * node + 1, mid + 1, hi, from, to),
    );
  }

  /** The first leaf in `from … to` with a count ≤ `limit` under `node` (`lo … hi`), or -1. */
  #firstAtMost(
    node: number,
    lo: number,
    hi: number,
    from: number,
    to: number,
    limit: number,
  ): number {
    if (to < lo || hi < from || this.#min[node]! > limit) return -1;
    if (lo === hi) return lo;
    const mid = (lo + hi) >>> 1;
    const left = this.#firstAtMost(2 * node, lo, mid, from, to, limit);
    return left >= 0 ? left : this.#firstAtMost(2 * node + 1, mid + 1, hi, from, to, limit);
  }

  /** The last leaf in `from … to` with a count ≤ `limit` under `node` (`lo … hi`), or -1. */
  #lastAtMost(
    node: number,
    lo: number,
    hi: number,
    from: number,
    to: number,
    limit: number,
  ): number {
    if (to < lo || hi < from || this.#min[node]! > limit) return -1;
    if (lo === hi) return lo;
    const mid = (lo + hi) >>> 1;
    const right = this.#lastAtMost(2 * node + 1, mid + 1, hi, from, to, limit);
    return right >= 0 ? right : this.#lastAtMost(2 * node, lo, mid, from, to, limit);
  }
}
