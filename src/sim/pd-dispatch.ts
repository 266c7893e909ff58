/**
 * `PdDispatch`: the two legs of the requests of a disaggregated run — which workers they go to,
 * when a request skips its prefill leg, the KV transfer between the legs — and what they count.
 *
 * @module
 * @internal
 */
import {
  prefillsLocally,
  type ResolvedDisaggregationRule,
} from '../policies/conditional-disaggregation.js';
import type { Policy, SelectRequest } from '../policies/policy.js';
import type { Router } from '../router/router.js';
import type { WorkerLease } from '../workers/worker.js';
import { blockKeys } from './block-keys.js';
import {
  type DisaggregationRun,
  type ResolvedSimDisaggregation,
  transferTimeMs,
} from './disaggregation.js';
import type { Engine, EngineHooks, Job } from './engine.js';
import type { RunTally } from './run-tally.js';
import type { ResolvedSimulationOptions } from './simulation-options.js';
import type { SimRequest } from './workload.js';

/** Where a request is: its prefill leg on the prefill worker, or on its decode worker. */
const PREFILL = 0;
const DECODE = 1;

/** @internal What the run lends the dispatch. */
export interface PdHost {
  /** The engines, prefill pool first (filled once the run has built them). */
  readonly engines: readonly Engine[];
  /** Queues the arrival of transfer `slot` at its decode worker at `time`. */
  transferAt(time: number, slot: number): void;
  /** `request`, sent at `sentAt`, gave its first token at `firstTokenAt` and completed. */
  completed(
    lease: WorkerLease,
    request: SimRequest,
    sentAt: number,
    firstTokenAt: number,
    time: number,
  ): void;
}

/** @internal A router's two leg policies: `prefill` the policy under test. */
export interface LegPolicies {
  readonly prefill: Policy;
  readonly decode: Policy;
}

/** One request in flight: both its legs share it as their engine jobs' handle. */
class Leg {
  stage: number;
  constructor(
    readonly id: number,
    readonly request: SimRequest,
    readonly keys: Float64Array,
    readonly sentAt: number,
    readonly decodeWorker: number,
    readonly decodeLease: WorkerLease,
    readonly prefillLease: WorkerLease | undefined,
  ) {
    this.stage = prefillLease === undefined ? DECODE : PREFILL;
  }
}

/**
 * @internal The legs of a disaggregated run. Workers `0 … prefillWorkers − 1` are the prefill
 * pool, the rest the decode pool. Cost per request: the legs' policies, one cache walk of the
 * decode worker (the tokens to move; in conditional mode also the exact cached share), O(1)
 * otherwise.
 */
export class PdDispatch {
  readonly #d: ResolvedSimDisaggregation;
  readonly #rule: ResolvedDisaggregationRule;
  readonly #host: PdHost;
  readonly #tally: RunTally;
  readonly #blockSize: number;
  readonly #firstTokens: boolean;
  readonly #workerOf: ReadonlyMap<string, number>;
  readonly #pending = new Map<number, Leg>();
  #slot = 0;
  #disaggregated = 0;
  #skipped = 0;
  #tokensTransferred = 0;
  #transferMs = 0;
  #misjudged = 0;
  #byPolicy = 0;
  #prefillCached = 0;
  #prefillPrompt = 0;
  #decodeCached = 0;
  #decodePrompt = 0;
  /** Prompt tokens computed nowhere: cached on the worker that prefilled them. */
  #saved = 0;
  #prompt = 0;

  constructor(
    d: ResolvedSimDisaggregation,
    host: PdHost,
    tally: RunTally,
    o: ResolvedSimulationOptions,
    urls: readonly string[],
  ) {
    this.#d = d;
    this.#rule = d.rule;
    this.#host = host;
    this.#tally = tally;
    this.#blockSize = o.fleet.blockSize;
    this.#firstTokens = o.firstTokens;
    this.#workerOf = new Map(urls.map((url, i) => [url, i]));
  }

  /** The engine hooks of the run's engines: `base`'s, with the legs told apart. */
  hooks(base: EngineHooks): EngineHooks {
    return {
      wakeAt: base.wakeAt,
      ...(this.#firstTokens
        ? {
            firstToken: (job: Job) => {
              const leg = job.handle as Leg;
              (leg.stage === PREFILL ? leg.prefillLease! : leg.decodeLease).firstToken();
            },
          }
        : {}),
      completed: (job, time) => this.#completed(job, time),
    };
  }

  /**
   * Routes request `id` through `router` (whose leg policies are `policies`), submits its first
   * leg at `now`, and counts the decision.
   *
   * @returns whether the request was routed (else no worker took it).
   */
  route(
    id: number,
    request: SimRequest,
    prepared: { readonly tokens: Uint32Array; readonly select: SelectRequest },
    router: Router,
    policies: LegPolicies,
    now: number,
  ): boolean {
    const keys = blockKeys(prepared.tokens, this.#blockSize, request.outputTokens);
    const choice = this.#choose(request, keys, prepared.select, router, policies.decode);
    const prompt = request.promptLength;
    const decodeLease = choice.decode;
    this.#tally.onSend(
      now,
      choice.routingMs,
      decodeLease === undefined ? undefined : this.#workerOf.get(decodeLease.worker.url),
      prompt,
    );
    if (decodeLease === undefined) return false;
    this.#tally.onBranch(legBranch('decode', policies.decode));
    const decode = this.#workerOf.get(decodeLease.worker.url)!;
    const prefillLease = choice.prefill;
    const leg = new Leg(id, request, keys, now, decode, decodeLease, prefillLease);
    this.#prompt += prompt;
    if (prefillLease === undefined) {
      this.#skipped++;
      this.#host.engines[decode]!.submit(request, keys, leg, now);
      return true;
    }
    this.#disaggregated++;
    const prefill = this.#workerOf.get(prefillLease.worker.url)!;
    this.#tally.onLeg(prefill, prompt);
    this.#tally.onBranch(legBranch('prefill', policies.prefill));
    // The prefill leg computes the prompt and one token, which the decode leg replaces.
    const { outputTokens: _answer, ...promptOnly } = request;
    this.#host.engines[prefill]!.submit({ ...promptOnly, outputLength: 1 }, keys, leg, now);
    return true;
  }

  /**
   * The leases of a request's legs (`decode` undefined: none), each taken by the router's
   * `select` with the leg set — its leg policy over the pool of that type, the lease charged as
   * for any request — the decode leg first, and the routing time.
   */
  #choose(
    request: SimRequest,
    keys: Float64Array,
    select: SelectRequest,
    router: Router,
    decodePolicy: Policy,
  ): {
    readonly routingMs: number;
    readonly decode: WorkerLease | undefined;
    readonly prefill: WorkerLease | undefined;
  } {
    const started = performance.now();
    const decode = router.select({ ...select, leg: 'decode' });
    const local =
      decode !== undefined &&
      this.#d.mode === 'conditional' &&
      this.#decide(this.#workerOf.get(decode.worker.url)!, request, keys, decodePolicy);
    let prefill: WorkerLease | undefined;
    if (decode !== undefined && !local) {
      prefill = router.select({ ...select, leg: 'prefill' });
      // Never half a request: without a prefill worker, the decode lease goes back.
      if (prefill === undefined) decode.release();
    }
    const routed = decode !== undefined && (local || prefill !== undefined);
    return {
      routingMs: performance.now() - started,
      decode: routed ? decode : undefined,
      prefill,
    };
  }

  /** Transfer `slot` reached its decode worker at `now`: the decode leg joins its queue. */
  transferred(slot: number, now: number): void {
    const leg = this.#pending.get(slot)!;
    this.#pending.delete(slot);
    leg.stage = DECODE;
    this.#host.engines[leg.decodeWorker]!.submit(leg.request, leg.keys, leg, now, undefined, true);
  }

  /** What the run's legs did. O(1). */
  result(): DisaggregationRun {
    const d = this.#d;
    const routed = this.#disaggregated + this.#skipped;
    return {
      mode: d.mode,
      prefillWorkers: d.prefillWorkers,
      decodeWorkers: d.decodeWorkers,
      disaggregated: this.#disaggregated,
      prefillSkipped: this.#skipped,
      skippedShare: routed === 0 ? 0 : this.#skipped / routed,
      transfers: this.#disaggregated,
      tokensTransferred: this.#tokensTransferred,
      transferMsMean: this.#disaggregated === 0 ? 0 : this.#transferMs / this.#disaggregated,
      prefillHitRate: this.#prefillPrompt === 0 ? 0 : this.#prefillCached / this.#prefillPrompt,
      decodeHitRate: this.#decodePrompt === 0 ? 0 : this.#decodeCached / this.#decodePrompt,
      decisionsByPolicy: this.#byPolicy,
      misjudged: this.#misjudged,
    };
  }

  /** Prompt tokens no worker computed, and all prompt tokens routed (the run's hit rate). */
  get savedTokens(): number {
    return this.#saved;
  }

  get promptTokens(): number {
    return this.#prompt;
  }

  /**
   * Whether decode worker `d` prefills `request` itself: by the rule, on the share of the prompt
   * the decode policy matched when it explains its picks (`cache_aware`: `explain().held`,
   * none when absent — what `fleetroute/openai` decides on), else on what `d`'s cache holds.
   * Counts the decisions the actual cache would have taken the other way.
   */
  #decide(d: number, request: SimRequest, keys: Float64Array, decodePolicy: Policy): boolean {
    const prompt = request.promptLength;
    // At least one prompt token is always computed.
    const limit = Math.floor((prompt - 1) / this.#blockSize);
    const exact = this.#host.engines[d]!.cache.match(keys, limit) * this.#blockSize;
    const exactLocal = prefillsLocally(this.#rule, prompt, exact);
    const explained = decodePolicy.explain?.();
    if (explained === undefined) return exactLocal;
    this.#byPolicy++;
    const matched = explained.held;
    const share = matched !== undefined && matched > 0 ? Math.min(matched, 1) : 0;
    const local = prefillsLocally(this.#rule, prompt, share * prompt);
    if (local !== exactLocal) this.#misjudged++;
    return local;
  }

  #completed(job: Job, time: number): void {
    const leg = job.handle as Leg;
    const prompt = leg.request.promptLength;
    if (leg.stage === PREFILL) {
      leg.prefillLease!.release({ ok: true, status: 200 });
      this.#prefillCached += job.cachedTokens;
      this.#prefillPrompt += prompt;
      this.#saved += job.cachedTokens;
      // The decode worker pulls the part of the prompt it does not hold.
      const held = this.#host.engines[leg.decodeWorker]!.cache.match(
        leg.keys,
        Math.floor(prompt / this.#blockSize),
      );
      const tokens = prompt - held * this.#blockSize;
      const ms = transferTimeMs(this.#d, tokens);
      this.#tokensTransferred += tokens;
      this.#transferMs += ms;
      const slot = this.#slot++;
      this.#pending.set(slot, leg);
      this.#host.transferAt(time + ms, slot);
      return;
    }
    this.#decodeCached += job.cachedTokens;
    this.#decodePrompt += prompt;
    if (leg.prefillLease === undefined) this.#saved += job.cachedTokens;
    this.#host.completed(leg.decodeLease, leg.request, leg.sentAt, job.firstTokenAt, time);
  }
}

/** `leg:branch` of `policy`'s last decision, or `undefined` when it keeps no branches. */
function legBranch(leg: string, policy: Policy): string | undefined {
  const branch = policy.explain?.()?.branch;
  return branch === undefined ? undefined : `${leg}:${branch}`;
}
