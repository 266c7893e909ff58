/**
 * `cache_aware`'s charges (`decideBy: 'ttft'`): what the lease on each pick is charged — the cost
 * model's predicted uncached tokens and work ahead when it chose, else the whole prompt — read by
 * the router through the policy's `PREFILL_CHARGE` port.
 *
 * @module
 * @internal
 */
import { type Worker, workerInternals } from '../../workers/worker.js';
import type { SelectRequest } from '../policy.js';
import type { PrefillCharge } from '../prefill-charge.js';
import type { CandidateScan } from './candidate-scan.js';
import { CHARS_PER_TOKEN, MEAN_WEIGHT, type TtftModel } from './ttft-model.js';

/** @internal The last pick's charge (one object, reused). */
export class Charges {
  readonly #model: TtftModel;
  readonly #scan: CandidateScan;
  /** `ahead` NaN: read from the worker when the charge is read (outside `select`'s reads). */
  readonly #charge: {
    worker: Worker | undefined;
    tokens: number;
    ahead: number;
    clock: () => number;
    priorPerMs: number;
  };
  #set = false;

  constructor(model: TtftModel, scan: CandidateScan, clock: () => number) {
    this.#model = model;
    this.#scan = scan;
    this.#charge = { worker: undefined, tokens: 0, ahead: 0, clock, priorPerMs: model.priorPerMs };
  }

  /** A selection starts: no charge until it picks. */
  clear(): void {
    this.#set = false;
  }

  /**
   * The selection picked `worker` for `request`: the cost model's figures when it chose that
   * worker, else the whole prompt. Moves the mean charge per request. O(1).
   */
  record(worker: Worker, request: SelectRequest | undefined): void {
    const charge = this.#charge;
    const model = this.#model;
    charge.worker = worker;
    if (model.scoredNow && model.winner.url === worker.url) {
      charge.tokens = model.chargedTokens;
      charge.ahead = model.chargedAhead;
    } else {
      charge.tokens = promptTokensOf(request);
      charge.ahead = Number.NaN;
    }
    const scan = this.#scan;
    scan.meanCharge += (charge.tokens - scan.meanCharge) * MEAN_WEIGHT;
    this.#set = true;
  }

  /** The last pick's charge, or `undefined` when the last selection picked nothing. O(1). */
  read(): PrefillCharge | undefined {
    const charge = this.#charge;
    if (!this.#set || charge.worker === undefined) return undefined;
    if (Number.isNaN(charge.ahead)) {
      charge.ahead = workerInternals.runtimeOf(charge.worker).prefillTokens;
    }
    return charge as PrefillCharge;
  }
}

/** The prompt's length in tokens: its token ids, else its text at {@link CHARS_PER_TOKEN}. */
function promptTokensOf(request: SelectRequest | undefined): number {
  const tokens = request?.tokens;
  if (typeof tokens === 'object' && tokens !== null && typeof tokens.length === 'number')
    return tokens.length;
  const text = request?.text;
  return typeof text === 'string' ? Math.round(text.length / CHARS_PER_TOKEN) : 0;
}
