/**
 * Candidate walks shared by the policies. Each reads a candidate's state at most once per call
 * (one `isAvailable()` or one `routingState()`), and the random walks stop at the first hits, so
 * when most candidates are available they cost O(1) whatever the fleet size. The stateless walks
 * are functions; the ones that need scratch space (a read's values, a shuffled permutation) are
 * methods of a {@link Sampler}, one per policy instance, so no state is shared between policies.
 *
 * @module
 * @internal
 */
import { type RoutingState, Worker, workerInternals } from '../../workers/worker.js';
import { type RandomSource, randomIndex } from './random.js';

/**
 * @internal Whether a list entry is an available worker. Entries that are not workers (holes,
 * `undefined`, foreign objects) count as unavailable, so a policy never throws on an odd list.
 */
export function available(entry: Worker | undefined): boolean {
  if (!(entry instanceof Worker)) return false;
  const rt = workerInternals.runtimeOf(entry);
  return rt.routable && rt.canExecute();
}

/**
 * @internal Reads a list entry's routing state into `state` (one read of the worker's runtime; a
 * non-worker reads as unhealthy). @returns whether the entry is available.
 */
export function readState(entry: Worker | undefined, state: RoutingState): boolean {
  if (!(entry instanceof Worker)) {
    state.healthy = false;
    state.canExecute = false;
    state.load = 0;
    state.processed = 0;
    state.prefilling = 0;
    return false;
  }
  const rt = workerInternals.runtimeOf(entry);
  const healthy = rt.routable;
  const canExecute = rt.canExecute();
  state.healthy = healthy;
  state.canExecute = canExecute;
  state.load = rt.load;
  state.processed = rt.processed;
  state.prefilling = rt.prefilling;
  return healthy && canExecute;
}

/**
 * A lazily shuffled permutation of 0 … n−1 (a partial Fisher–Yates shuffle): `draw(t)` returns
 * the t-th index of a uniformly random order, choosing it only when asked. The first available
 * candidate of a uniformly random order is uniform over the available ones, and no candidate is
 * drawn twice. `restore()` undoes the swaps, so the scratch array is the identity between calls
 * and a walk costs O(steps), never O(n).
 */
class LazyShuffle {
  #perm = new Int32Array(0);
  #swapped = new Int32Array(64);
  #steps = 0;
  #n = 0;

  start(n: number): void {
    if (this.#perm.length < n) {
      const grown = new Int32Array(Math.max(n, this.#perm.length * 2));
      for (let i = 0; i < grown.length; i++) grown[i] = i;
      this.#perm = grown;
    }
    this.#n = n;
    this.#steps = 0;
  }

  /** The next index of the random order; `t` must be the number of draws so far. */
  draw(random: RandomSource, t: number): number {
    const perm = this.#perm;
    const j = t + randomIndex(random, this.#n - t);
    const picked = perm[j]!;
    perm[j] = perm[t]!;
    perm[t] = picked;
    if (this.#steps === this.#swapped.length) {
      const grown = new Int32Array(this.#swapped.length * 2);
      grown.set(this.#swapped);
      this.#swapped = grown;
    }
    this.#swapped[this.#steps++] = j;
    return picked;
  }

  /** Undoes every swap of this walk, newest first. */
  restore(): void {
    const perm = this.#perm;
    for (let t = this.#steps - 1; t >= 0; t--) {
      const j = this.#swapped[t]!;
      const tmp = perm[t]!;
      perm[t] = perm[j]!;
      perm[j] = tmp;
    }
    this.#steps = 0;
  }
}

/**
 * @internal The scratch space of one policy's candidate reads: the values of the last read
 * (`state`) and a lazily shuffled permutation for the random walks. Policies are synchronous, so
 * one per policy instance is enough, and nothing is shared between instances.
 */
export class Sampler {
  /** The values of the last {@link Sampler.read}. */
  readonly state: RoutingState = {
    healthy: false,
    canExecute: false,
    load: 0,
    processed: 0,
    prefilling: 0,
  };
  readonly #shuffle = new LazyShuffle();

  /** Reads an entry's routing state into {@link Sampler.state}. @returns whether it is available. */
  read(entry: Worker | undefined): boolean {
    return readState(entry, this.state);
  }

  /**
   * Index of a uniformly random available candidate, or -1. Draws candidates in a uniformly
   * random order without repeats and stops at the first available one: expected
   * O(n / available) draws.
   */
  randomAvailable(workers: readonly Worker[], random: RandomSource): number {
    const n = workers.length;
    if (n === 0) return -1;
    const shuffle = this.#shuffle;
    shuffle.start(n);
    try {
      for (let t = 0; t < n; t++) {
        const i = shuffle.draw(random, t);
        if (available(workers[i])) return i;
      }
      return -1;
    } finally {
      shuffle.restore();
    }
  }

  /**
   * Two distinct candidates drawn uniformly at random among the available ones: their indices in
   * `out[0]`, `out[1]` and their in-flight loads in `loads[0]`, `loads[1]` (-1 / NaN where
   * missing), and their counts awaiting a first token in `prefill[0]`, `prefill[1]` if given. Same draw as {@link Sampler.randomAvailable}, reading each drawn candidate's
   * routing state once.
   *
   * @returns how many were found (0, 1 or 2).
   */
  twoRandomAvailable(
    workers: readonly Worker[],
    random: RandomSource,
    out: Int32Array,
    loads: Float64Array,
    prefill?: Float64Array,
  ): number {
    out[0] = -1;
    out[1] = -1;
    loads[0] = Number.NaN;
    loads[1] = Number.NaN;
    const n = workers.length;
    if (n === 0) return 0;
    let found = 0;
    const shuffle = this.#shuffle;
    const state = this.state;
    shuffle.start(n);
    try {
      for (let t = 0; t < n && found < 2; t++) {
        const i = shuffle.draw(random, t);
        if (readState(workers[i], state)) {
          out[found] = i;
          loads[found] = state.load;
          if (prefill !== undefined) prefill[found] = state.prefilling!;
          found++;
        }
      }
      return found;
    } finally {
      shuffle.restore();
    }
  }

  /**
   * Index of the least-loaded available candidate (ties: fewer `processed`, then lower index),
   * or -1. One pass, one routing-state read per candidate: O(n).
   */
  leastLoaded(workers: readonly Worker[]): number {
    let best = -1;
    let bestLoad = 0;
    let bestProcessed = 0;
    const state = this.state;
    for (let i = 0; i < workers.length; i++) {
      if (!readState(workers[i], state)) continue;
      if (
        best < 0 ||
        state.load < bestLoad ||
        (state.load === bestLoad && state.processed < bestProcessed)
      ) {
        best = i;
        bestLoad = state.load;
        bestProcessed = state.processed;
      }
    }
    return best;
  }
}

/**
 * Index of the first available candidate at or after `from`, wrapping around, or -1. O(1) when
 * the candidate at `from` is available.
 *
 * @internal
 */
export function nextAvailable(workers: readonly Worker[], from: number): number {
  const n = workers.length;
  for (let k = 0, i = from % n; k < n; k++, i = i + 1 === n ? 0 : i + 1) {
    if (available(workers[i])) return i;
  }
  return -1;
}

/** @internal Counts the pick and returns it (every policy ends here). */
export function pick(workers: readonly Worker[], index: number): Worker | undefined {
  if (index < 0) return undefined;
  const worker = workers[index]!;
  worker.incrementProcessed();
  return worker;
}

/** @internal Whether `workers` can be read as a list (policies never throw on odd input). */
export function isWorkerList(workers: unknown): workers is readonly Worker[] {
  return Array.isArray(workers);
}
