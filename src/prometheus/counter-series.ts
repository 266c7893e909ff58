/**
 * A counter's series counted here and handed to prom-client at each scrape: an event costs three
 * map look-ups instead of a prom-client label look-up (about 20 ns against 250 ns), and dropping
 * a series is deleting its entry.
 *
 * @module
 * @internal
 */
import type { PromCounter, PromLabels } from './prom-client.js';

interface Series {
  readonly labels: PromLabels;
  value: number;
}

/** Series by their first, second and third label values (`''` for a label the counter lacks). */
type Tree = Map<string, Map<string, Map<string, Series>>>;

/**
 * @internal The series of one counter with up to three labels, by their values. Memory: one
 * entry per series. The counter's `collect` must call {@link CounterSeries.flush}. Cost per
 * `add`: three map look-ups of short strings, no allocation once the series exists.
 */
export class CounterSeries {
  readonly #names: readonly string[];
  readonly #tree: Tree = new Map();
  #size = 0;

  /** @param names - the counter's label names, in the order `add` takes their values. */
  constructor(names: readonly string[]) {
    this.#names = names;
  }

  /** Adds `by` to the series with these label values (as many as the counter has labels). */
  add(by: number, a = '', b = '', c = ''): void {
    let byA = this.#tree.get(a);
    if (byA === undefined) this.#tree.set(a, (byA = new Map()));
    let byB = byA.get(b);
    if (byB === undefined) byA.set(b, (byB = new Map()));
    const series = byB.get(c);
    if (series !== undefined) {
      series.value += by;
      return;
    }
    const values = [a, b, c];
    const labels: PromLabels = {};
    this.#names.forEach((name, i) => {
      labels[name] = values[i]!;
    });
    byB.set(c, { labels, value: by });
    this.#size++;
  }

  /** Writes every series into `counter` (reset first, so dropped series leave). O(series). */
  flush(counter: PromCounter): void {
    counter.reset();
    for (const byA of this.#tree.values())
      for (const byB of byA.values())
        for (const { labels, value } of byB.values()) counter.inc(labels, value);
  }

  /** Drops every series whose label `name` has a value `doomed` picks. O(series). */
  dropWhere(name: string, doomed: (value: string) => boolean): void {
    if (!this.#names.includes(name)) return;
    for (const [a, byA] of this.#tree) {
      for (const [b, byB] of byA) {
        for (const [c, { labels }] of byB) {
          if (!doomed(labels[name]!)) continue;
          byB.delete(c);
          this.#size--;
        }
        if (byB.size === 0) byA.delete(b);
      }
      if (byA.size === 0) this.#tree.delete(a);
    }
  }

  /** Series counted. */
  get size(): number {
    return this.#size;
  }
}
