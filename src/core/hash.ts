/**
 * xxHash64 (seed 0) over the `xxhash-wasm` module, with results read as two unsigned 32-bit
 * halves so hot paths never touch a BigInt after the hash itself.
 *
 * @module
 * @internal
 */
import xxhash from 'xxhash-wasm';

/**
 * The two calls the hasher makes into `xxhash-wasm`. Written out rather than derived from the
 * package's types so that no published declaration imports `xxhash-wasm`: its types are ESM-only,
 * and a CommonJS TypeScript project cannot read them (TS1479).
 */
interface XXHashApi {
  h64(input: string, seed?: bigint): bigint;
  h64Raw(input: Uint8Array, seed?: bigint): bigint;
}

const scratch = new BigUint64Array(1);
const halves = new Uint32Array(scratch.buffer);
const seedScratch = new BigUint64Array(1);
const seedHalves = new Uint32Array(seedScratch.buffer);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;

/**
 * A loaded xxHash64 instance. Each `hash*` call overwrites {@link Hasher.hi} and
 * {@link Hasher.lo}; read them before the next call.
 *
 * @internal
 */
export class Hasher {
  readonly #api: XXHashApi;
  /** The last hash, the seed of the next chained call. */
  #last = 0n;

  /** @internal Use {@link loadHasher}. */
  constructor(api: XXHashApi) {
    this.#api = api;
  }

  /** High 32 bits of the last hash. */
  get hi(): number {
    return halves[HI]!;
  }

  /** Low 32 bits of the last hash. */
  get lo(): number {
    return halves[LO]!;
  }

  /** Hash the UTF-8 bytes of `input` (seed 0). Cost: one WASM call, ~80–100 ns for short keys. */
  hashString(input: string): void {
    this.#last = this.#api.h64(input);
    scratch[0] = this.#last;
  }

  /** Hash raw bytes (seed 0). Cost: one WASM call plus a copy of `input` into WASM memory. */
  hashBytes(input: Uint8Array): void {
    this.#last = this.#api.h64Raw(input);
    scratch[0] = this.#last;
  }

  /** The last hash as a BigInt: a seed for {@link Hasher.chainString} / {@link Hasher.chainBytes}. */
  get last(): bigint {
    return this.#last;
  }

  /**
   * Hash the UTF-8 bytes of `input` seeded with `seed` (default: the previous hash), so a
   * sequence of calls is a chained hash of the concatenated blocks (block boundaries included).
   * Same cost as {@link Hasher.hashString}.
   */
  chainString(input: string, seed: bigint = this.#last): void {
    this.#last = this.#api.h64(input, seed);
    scratch[0] = this.#last;
  }

  /**
   * {@link Hasher.chainString} seeded with the 64-bit hash whose halves are `seedHi`, `seedLo`.
   * Same cost.
   */
  chainStringFrom(input: string, seedHi: number, seedLo: number): void {
    seedHalves[HI] = seedHi;
    seedHalves[LO] = seedLo;
    this.chainString(input, seedScratch[0]!);
  }

  /** Hash raw bytes seeded with `seed`, by default the previous hash (see {@link Hasher.chainString}). */
  chainBytes(input: Uint8Array, seed: bigint = this.#last): void {
    this.#last = this.#api.h64Raw(input, seed);
    scratch[0] = this.#last;
  }

  /** The full 64-bit hash of a string, as a BigInt (cold paths and tests). */
  h64(input: string): bigint {
    return this.#api.h64(input);
  }
}

let loading: Promise<Hasher> | undefined;
let loaded: Hasher | undefined;

/**
 * Loads the WASM hasher once per process; later calls share the same instance.
 *
 * @internal
 */
export function loadHasher(): Promise<Hasher> {
  loading ??= xxhash().then((api) => {
    loaded = new Hasher(api);
    return loaded;
  });
  return loading;
}

/**
 * The hasher if it has finished loading, else `undefined` (and loading starts). Synchronous code
 * (policies) uses it; `WorkerRegistry.create()` and `HashRing.create()` load it first.
 *
 * @internal
 */
export function loadedHasher(): Hasher | undefined {
  if (loaded === undefined) void loadHasher();
  return loaded;
}
