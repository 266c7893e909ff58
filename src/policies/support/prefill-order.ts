/**
 * The rule `power_of_two` and `least_load` share for two sampled workers: fewer requests
 * awaiting a first token wins, once first tokens are marked.
 *
 * @module
 * @internal
 */

/**
 * @internal Which of two sampled workers has fewer requests awaiting a first token, when that
 * decides: `-1` the first, `1` the second, `0` when it does not (equal counts, or no first token
 * marked on either — a lease never marked counts in both `prefilling` and `load`, so the two
 * differ only once the caller marks first tokens).
 */
export function prefillOrder(
  prefillA: number,
  loadA: number,
  prefillB: number,
  loadB: number,
): -1 | 0 | 1 {
  if (prefillA === prefillB || (prefillA >= loadA && prefillB >= loadB)) return 0;
  return prefillB < prefillA ? 1 : -1;
}
