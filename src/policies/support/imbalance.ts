/**
 * The imbalance escape the load-aware policies share (`bucket`, `cache_aware`).
 *
 * @module
 * @internal
 */

/**
 * @internal Whether in-flight counts from `min` to `max` are imbalanced: `max − min > abs` and
 * `max > rel × min`.
 */
export function isImbalanced(min: number, max: number, abs: number, rel: number): boolean {
  return max - min > abs && max > rel * min;
}
