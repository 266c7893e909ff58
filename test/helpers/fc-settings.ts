/**
 * Run counts for property tests. CI runs many more cases than a local run; `FC_NUM_RUNS`
 * overrides both, `FC_SEED` replays a reported failure.
 */
const inCi = process.env.CI === 'true' || process.env.CI === '1';
const override = Number(process.env.FC_NUM_RUNS);
const seed = process.env.FC_SEED === undefined ? undefined : Number(process.env.FC_SEED);

/**
 * Parameters for `fc.assert`: `local` runs on a developer machine, `ci` under `CI=true`.
 * Failures print the seed, the path and the shrunk counterexample (fast-check's report).
 */
export function runs(local: number, ci: number): { numRuns: number; seed?: number; verbose: 1 } {
  const numRuns = Number.isInteger(override) && override > 0 ? override : inCi ? ci : local;
  return seed === undefined ? { numRuns, verbose: 1 } : { numRuns, seed, verbose: 1 };
}
