/**
 * Minimal type declarations for the two comparison libraries, which ship no types. Only the
 * parts the benchmarks use are declared, as documented in each package's README.
 */

declare module 'hashring' {
  namespace HashRing {
    interface HashRingOptions {
      /** Hashes per server; each md5 digest yields `replicas` points. @defaultValue 40 */
      readonly 'vnode count'?: number;
      /** Points taken from each md5 digest (ketama: 4). @defaultValue 4 */
      readonly replicas?: number;
      readonly compatibility?: 'ketama' | 'hash_ring';
      /** Size of the LRU cache of key → server. @defaultValue 5000 */
      readonly 'max cache size'?: number;
      readonly 'default port'?: number;
    }
  }

  class HashRing {
    constructor(
      servers: string | readonly string[],
      algorithm?: string | ((key: string) => Uint8Array),
      options?: HashRing.HashRingOptions,
    );
    /** Number of points on the ring. */
    readonly size: number;
    get(key: string): string | undefined;
  }

  export = HashRing;
}

declare module 'consistent-hash' {
  namespace ConsistentHash {
    interface ConsistentHashOptions {
      /** Control-point modulo range. @defaultValue 100003 */
      readonly range?: number;
      /** Control points per node. @defaultValue 40 */
      readonly weight?: number;
      readonly distribution?: 'random' | 'uniform';
    }
  }

  class ConsistentHash {
    constructor(options?: ConsistentHash.ConsistentHashOptions);
    readonly nodeCount: number;
    readonly keyCount: number;
    add(node: string, weight?: number, points?: readonly number[]): this;
    get(name: string): string | null;
  }

  export = ConsistentHash;
}
