/**
 * The simulated fleet: how many workers, how large their prefix caches are, and how fast they
 * prefill and decode. Defaults describe an 8B-class model on one modern GPU per worker.
 *
 * @module
 */
import { DEFAULT_PAGE_SIZE, PAGE_SIZE } from '../cache/block-hashes.js';
import { integer, number, OptionTable, orInfinity } from '../core/option-table.js';

/**
 * Parameters of the simulated engines. Every field is optional in {@link FleetModelOptions}.
 *
 * @public
 */
export interface FleetModel {
  /** Workers in the fleet. @defaultValue 8 */
  readonly workers: number;
  /**
   * Prefix-cache capacity per worker, in tokens (`Infinity` for an unbounded cache). Blocks of
   * running requests are pinned; unused blocks are evicted least recently used first.
   * @defaultValue 262,144
   */
  readonly cacheTokens: number;
  /** Tokens per cache block; only full blocks are reused. @defaultValue 16 */
  readonly blockSize: number;
  /** Prefill speed, tokens per second, for tokens not found in the cache. @defaultValue 8,000 */
  readonly prefillTokensPerSecond: number;
  /** Fixed cost of one decode step, ms. @defaultValue 6 */
  readonly decodeStepMs: number;
  /** Added cost of one decode step per running request, ms. @defaultValue 0.35 */
  readonly decodeStepPerRequestMs: number;
  /** Most requests running on one worker at once. @defaultValue 256 */
  readonly maxRunning: number;
  /** Most prompt tokens prefilled in one engine step (chunked prefill). @defaultValue 8,192 */
  readonly maxBatchTokens: number;
  /**
   * LoRA adapter slots per worker (vLLM's `--max-loras`): adapters of the running requests, plus
   * idle ones kept until a new adapter needs the slot (least recently used first). A request
   * whose adapter finds no slot — every slot held by an adapter with requests running — waits.
   * Only requests that name an `adapter` use them. @defaultValue 8
   */
  readonly maxLoras: number;
  /**
   * Time to load an adapter into a slot, ms: the engine step that first runs a request of an
   * adapter not loaded takes this much longer (the load blocks the batch, as vLLM's model runner
   * loads adapters before the forward pass). @defaultValue 500
   */
  readonly adapterLoadMs: number;
}

/** {@link FleetModel} with every field optional. @public */
export type FleetModelOptions = Partial<FleetModel>;

/** @internal The fleet model's options: each one's default and bounds. */
export const FLEET_OPTIONS = new OptionTable('fleet', 'FleetModel', {
  workers: integer(8, 1, 4_096),
  // `Infinity`: an unbounded cache.
  cacheTokens: orInfinity(integer(262_144, 1, 1e12)),
  // The engines' block size: by default a page of fleetroute's block keys, so the two agree.
  blockSize: integer(DEFAULT_PAGE_SIZE, PAGE_SIZE.min, PAGE_SIZE.max),
  prefillTokensPerSecond: number(8_000, 1, 1e9),
  decodeStepMs: number(6, 0, 1e6),
  decodeStepPerRequestMs: number(0.35, 0, 1e6),
  maxRunning: integer(256, 1, 1_000_000),
  maxBatchTokens: integer(8_192, 1, 1e9),
  maxLoras: integer(8, 1, 100_000),
  adapterLoadMs: number(500, 0, 1e9),
});

/** The defaults of {@link FleetModel}. @public */
export const DEFAULT_FLEET_MODEL: FleetModel = FLEET_OPTIONS.read(undefined);
