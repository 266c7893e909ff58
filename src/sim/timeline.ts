/**
 * The timeline of a run: one or more counts per worker (requests waiting, running), sampled at
 * a fixed interval of simulated time, for the report's line charts.
 *
 * @module
 * @internal
 */

/** Most samples kept per worker; the interval doubles when a series reaches it. */
export const MAX_SAMPLES = 1_000;

/**
 * @internal One series per worker and channel, at most {@link MAX_SAMPLES} long. Sample `n + 1` is taken
 * one interval after sample `n`; when the series fill up, neighbouring samples are merged
 * (keeping the larger) and the interval doubles. Idle stretches are filled with zeros without
 * visiting each sample time as an event.
 */
export class Timeline {
  /** `#channels[channel][worker][sample]`. */
  readonly #channels: number[][][];
  #intervalMs: number;
  /** When the next sample is due (simulated ms); `NaN` before the first. */
  #next = Number.NaN;

  /**
   * @param workers - one series each.
   * @param intervalMs - simulated ms between samples to start with.
   * @param channels - counts sampled per worker (each gets its own series). @defaultValue 1
   */
  constructor(workers: number, intervalMs: number, channels = 1) {
    this.#channels = Array.from({ length: channels }, () =>
      Array.from({ length: workers }, () => []),
    );
    this.#intervalMs = intervalMs;
  }

  /** The interval between the samples kept (simulated ms). */
  get intervalMs(): number {
    return this.#intervalMs;
  }

  /** `series[worker][sample]` of channel 0. The live arrays, not copies. */
  get series(): number[][] {
    return this.#channels[0]!;
  }

  /**
   * `series[worker][sample]` of `channel`. The live arrays, not copies.
   * @throws TypeError when there is no such channel.
   */
  channel(channel: number): number[][] {
    const series = this.#channels[channel];
    if (series === undefined) throw new TypeError(`Timeline: no channel ${channel}`);
    return series;
  }

  /**
   * Takes the sample due at `now`: `value(worker, channel)` for each worker and channel.
   * @returns when the next sample is due. Cost: O(workers), plus O(workers × samples) when the
   *   series are halved (once per {@link MAX_SAMPLES} / 2 samples).
   */
  record(now: number, value: (worker: number, channel: number) => number): number {
    const channels = this.#channels;
    for (let c = 0; c < channels.length; c++) {
      const series = channels[c]!;
      for (let w = 0; w < series.length; w++) series[w]!.push(value(w, c));
    }
    return this.#afterSample(now);
  }

  /**
   * Records 0 for every sample due before `until`, the time up to which no worker has a request
   * in flight, exactly as if each had been taken.
   *
   * @returns when the next sample is due (at or after `until`), or `Infinity` when `until` is.
   * Cost: O(workers × samples recorded) array writes, no events; the samples recorded over a
   *   whole run stay within about {@link MAX_SAMPLES} × (1 + log₂(span / interval) / 2).
   */
  skipIdle(until: number): number {
    if (until === Number.POSITIVE_INFINITY) return until;
    while (this.#next < until) {
      const room = MAX_SAMPLES - this.#length();
      let count = 0;
      let last = this.#next;
      let t = this.#next;
      while (count < room && t < until) {
        last = t;
        count++;
        t = last + this.#intervalMs;
      }
      for (const channel of this.#channels) {
        for (const series of channel) for (let i = 0; i < count; i++) series.push(0);
      }
      this.#next = this.#length() >= MAX_SAMPLES ? this.#afterSample(last) : t;
    }
    return this.#next;
  }

  /** After the sample at `now`: halves full series, and returns when the next one is due. */
  #afterSample(now: number): number {
    if (this.#length() >= MAX_SAMPLES) {
      for (const channel of this.#channels) for (const series of channel) halve(series);
      this.#intervalMs *= 2;
    }
    this.#next = now + this.#intervalMs;
    return this.#next;
  }

  #length(): number {
    return this.#channels[0]?.[0]?.length ?? 0;
  }
}

/** Merges neighbouring samples (keeping the larger), halving the series. */
function halve(series: number[]): void {
  const half = Math.ceil(series.length / 2);
  for (let i = 0; i < half; i++) {
    series[i] = Math.max(series[2 * i]!, series[2 * i + 1] ?? 0);
  }
  series.length = half;
}
