/**
 * Axis scales for the report's charts: a linear scale from zero with round ticks, and a log
 * scale over whole decades.
 *
 * @module
 * @internal
 */

/** @internal One axis tick; minor ticks draw a faint grid line and carry no label. */
export interface Tick {
  readonly value: number;
  readonly label: string | undefined;
}

/** @internal A mapping from data values to pixels along one axis. */
export interface Scale {
  readonly kind: 'linear' | 'log';
  /** The smallest and largest value on the axis. */
  readonly domain: readonly [number, number];
  /** Pixel position of `value`, clamped to the axis; values ≤ 0 sit at the start of a log axis. */
  map(value: number): number;
  readonly ticks: readonly Tick[];
}

/** @internal Largest over smallest positive value beyond which {@link shouldUseLog} says yes. */
export const LOG_SCALE_RATIO = 50;

/** @internal A round step (1, 2 or 5 × 10ⁿ) that cuts `span` into about `count` parts. */
export function niceStep(span: number, count: number): number {
  if (!(span > 0) || !Number.isFinite(span)) return 1;
  const raw = span / Math.max(1, count);
  const power = 10 ** Math.floor(Math.log10(raw));
  const fraction = raw / power;
  const nice = fraction <= 1 ? 1 : fraction <= 2 ? 2 : fraction <= 5 ? 5 : 10;
  return nice * power;
}

/**
 * @internal Whether values are better read on a log axis: at least two positive finite values
 * whose largest is more than {@link LOG_SCALE_RATIO} times their smallest.
 */
export function shouldUseLog(values: readonly number[]): boolean {
  let min = Number.POSITIVE_INFINITY;
  let max = 0;
  let count = 0;
  for (const v of values) {
    if (!(v > 0) || !Number.isFinite(v)) continue;
    count++;
    if (v < min) min = v;
    if (v > max) max = v;
  }
  return count >= 2 && max / min > LOG_SCALE_RATIO;
}

function clamp(value: number, low: number, high: number): number {
  return Math.max(low, Math.min(value, high));
}

/**
 * @internal A linear scale from 0 to `max` rounded up to a whole step, over pixels
 * `start … end`, with about `count` labelled ticks. A `max` that is not positive and finite
 * gives the axis 0 … 1.
 */
export function linearScale(
  max: number,
  start: number,
  end: number,
  format: (value: number) => string,
  count = 5,
): Scale {
  const top = max > 0 && Number.isFinite(max) ? max : 1;
  const step = niceStep(top, count);
  const steps = Math.max(1, Math.ceil(top / step - 1e-9));
  const high = steps * step;
  const ticks: Tick[] = [];
  for (let i = 0; i <= steps; i++) {
    const value = Number((i * step).toPrecision(12));
    ticks.push({ value, label: format(value) });
  }
  return {
    kind: 'linear',
    domain: [0, high],
    map: (value) => start + (clamp(value, 0, high) / high) * (end - start),
    ticks,
  };
}

/**
 * @internal A log₁₀ scale over the whole decades around `min … max` (both positive), over
 * pixels `start … end`. Every decade is labelled; 2 and 5 are labelled too when the axis spans
 * at most two decades, and the other multiples draw unlabelled grid lines.
 */
export function logScale(
  min: number,
  max: number,
  start: number,
  end: number,
  format: (value: number) => string,
): Scale {
  const lowPower = Math.floor(Math.log10(min > 0 && Number.isFinite(min) ? min : 1));
  let highPower = Math.ceil(Math.log10(max > 0 && Number.isFinite(max) ? max : 10));
  if (highPower <= lowPower) highPower = lowPower + 1;
  const decades = highPower - lowPower;
  const ticks: Tick[] = [];
  for (let p = lowPower; p <= highPower; p++) {
    const decade = 10 ** p;
    ticks.push({ value: decade, label: format(decade) });
    if (p === highPower) break;
    for (let m = 2; m <= 9; m++) {
      const value = Number((m * decade).toPrecision(12));
      const labelled = decades <= 2 && (m === 2 || m === 5);
      ticks.push({ value, label: labelled ? format(value) : undefined });
    }
  }
  const low = 10 ** lowPower;
  const high = 10 ** highPower;
  return {
    kind: 'log',
    domain: [low, high],
    map: (value) => {
      if (!(value > 0)) return start;
      const t = (Math.log10(clamp(value, low, high)) - lowPower) / decades;
      return start + t * (end - start);
    },
    ticks,
  };
}
