/**
 * One simulated model server: a FIFO queue, continuous batching of up to `maxRunning` requests,
 * chunked prefill of the tokens its prefix cache does not hold, and decode steps whose cost grows
 * with the batch.
 *
 * @module
 * @internal
 */
import { AdapterSlots } from './adapter-slots.js';
import type { FleetModel } from './fleet-model.js';
import { PrefixCache } from './prefix-cache.js';
import type { SimRequest } from './workload.js';

/**
 * How many waiting requests, from the head of the queue, {@link Engine.pendingMatch} and
 * {@link Engine.queuedPrefillTokens} look into, and how many requests ahead of each the latter
 * compares it with: bounds on their cost in an overloaded run.
 */
const SCANNED_WAITING = 64;
const COMPARED_AHEAD = 8;

/** @internal A request on a worker, from routing to completion. */
export interface Job {
  readonly request: SimRequest;
  /**
   * Chained keys of the full blocks of the prompt followed by its answer, when the workload
   * knows the answer (the prompt's own blocks come first).
   */
  readonly keys: Float64Array;
  /** How many of `keys` are the prompt's full blocks. */
  readonly promptBlocks: number;
  /**
   * With KV events on: the tags of its blocks (their fleetroute keys, block after block; see
   * `PrefixCache.observe`); `undefined` otherwise.
   */
  readonly tags: Float64Array | undefined;
  /** When it was sent (ms). */
  readonly sentAt: number;
  /** Opaque handle of the caller (the router's lease), given back at completion. */
  readonly handle: unknown;
  /**
   * Whether the prompt's KV cache arrives by transfer (the decode leg of a disaggregated
   * request): nothing of the prompt is prefilled here, and its first token comes out of the
   * first step after admission.
   */
  readonly loaded: boolean;
  /** Prompt tokens found in the cache at admission. */
  cachedTokens: number;
  prefillLeft: number;
  decodeLeft: number;
  /** Whether the prefill has completed (the first token is out). */
  decoding: boolean;
  /** When the prefill completed (ms). */
  firstTokenAt: number;
  /** Reusable blocks this job pins. */
  readonly pinned: number[];
  /** Private blocks this job holds. */
  privateBlocks: number;
}

/** @internal What the engine tells the simulation. */
export interface EngineHooks {
  /** Schedule `worker.step()` at `time`. */
  wakeAt(time: number, worker: number): void;
  /** A job's prefill finished at `time`: its first token is out. */
  firstToken?(job: Job, time: number): void;
  /** A job finished at `time`. */
  completed(job: Job, time: number): void;
}

/** @internal */
export class Engine {
  readonly index: number;
  readonly cache: PrefixCache;
  /** LoRA adapter slots (used only by requests that name an adapter). */
  readonly adapters: AdapterSlots;
  readonly #m: FleetModel;
  readonly #hooks: EngineHooks;
  readonly #waiting: Job[] = [];
  #waitingHead = 0;
  #running: Job[] = [];
  #busy = false;
  /** {@link queuedPrefillTokens} as last computed, or −1 once a submit or step changed it. */
  #queued = -1;
  /** Adapters loaded by the admissions of the step being started (each adds `adapterLoadMs`). */
  #adapterLoads = 0;
  /** Prompt tokens served from the cache, and all prompt tokens admitted. */
  cachedTokens = 0;
  promptTokens = 0;

  constructor(index: number, model: FleetModel, hooks: EngineHooks) {
    this.index = index;
    this.#m = model;
    this.#hooks = hooks;
    this.cache = new PrefixCache(model.cacheTokens / model.blockSize);
    this.adapters = new AdapterSlots(model.maxLoras);
  }

  /** The adapters of the first 64 waiting requests, each once. O(64). */
  waitingAdapters(): string[] {
    const out: string[] = [];
    const scanned = Math.min(this.#waiting.length, this.#waitingHead + SCANNED_WAITING);
    for (let i = this.#waitingHead; i < scanned; i++) {
      const adapter = this.#waiting[i]!.request.adapter;
      if (adapter !== undefined && !out.includes(adapter)) out.push(adapter);
    }
    return out;
  }

  /** Requests waiting or running. */
  get inFlight(): number {
    return this.waiting + this.#running.length;
  }

  get waiting(): number {
    return this.#waiting.length - this.#waitingHead;
  }

  get running(): number {
    return this.#running.length;
  }

  /**
   * How many leading `keys`, at most `limit`, the prompt of a request queued or in prefill here
   * begins with: blocks not reusable yet that its prefill will publish (the oracle reads them).
   * Only the first 64 waiting are looked at. O((running + 64) × blocks compared).
   */
  pendingMatch(keys: Float64Array, limit: number): number {
    let best = 0;
    const running = this.#running;
    for (let i = 0; i < running.length; i++) {
      const job = running[i]!;
      if (!job.decoding) best = Math.max(best, commonPrefix(keys, job, limit));
    }
    const scanned = Math.min(this.#waiting.length, this.#waitingHead + SCANNED_WAITING);
    for (let i = this.#waitingHead; i < scanned && best < limit; i++) {
      best = Math.max(best, commonPrefix(keys, this.#waiting[i]!, limit));
    }
    return best;
  }

  /**
   * Prompt tokens this worker still has to prefill before a request sent now starts: what the
   * batch has left, plus the part of every waiting prompt that neither the cache nor a request
   * ahead of it (in prefill, or among the 8 waiting just ahead) will hold by then; past the
   * first 64 waiting, whole prompts. Cost: O(1) when nothing changed since the last read; else
   * O(waiting + 64 × (8 + running) × blocks compared).
   */
  get queuedPrefillTokens(): number {
    if (this.#queued >= 0) return this.#queued;
    const m = this.#m;
    let tokens = 0;
    const running = this.#running;
    for (let i = 0; i < running.length; i++) tokens += running[i]!.prefillLeft;
    const head = this.#waitingHead;
    const scanned = Math.min(this.#waiting.length, head + SCANNED_WAITING);
    for (let i = head; i < scanned; i++) {
      const job = this.#waiting[i]!;
      const length = job.request.promptLength;
      const limit = Math.min(job.promptBlocks, Math.floor((length - 1) / m.blockSize));
      let matched = this.cache.match(job.keys, limit);
      for (let k = 0; k < running.length && matched < limit; k++) {
        if (!running[k]!.decoding)
          matched = Math.max(matched, commonPrefix(job.keys, running[k]!, limit));
      }
      for (let k = Math.max(head, i - COMPARED_AHEAD); k < i && matched < limit; k++) {
        matched = Math.max(matched, commonPrefix(job.keys, this.#waiting[k]!, limit));
      }
      tokens += length - matched * m.blockSize;
    }
    // Deeper in a long queue, whole prompts: such a worker is no candidate anyway.
    for (let i = scanned; i < this.#waiting.length; i++) {
      tokens += this.#waiting[i]!.request.promptLength;
    }
    this.#queued = tokens;
    return tokens;
  }

  /**
   * When a request sent now, with `tokens` of its prompt to prefill, would get its first token
   * if nothing else arrived (ms from now): {@link queuedPrefillTokens} and its own at the
   * prefill rate, `maxBatchTokens` per step, each step also paying the decode cost of the
   * requests decoding now. Cost: that of {@link queuedPrefillTokens}, then O(1).
   */
  firstTokenEstimateMs(tokens: number): number {
    const m = this.#m;
    const total = this.queuedPrefillTokens + tokens;
    const running = this.#running;
    let decoding = 0;
    let soonest = Number.POSITIVE_INFINITY;
    for (let i = 0; i < running.length; i++) {
      const job = running[i]!;
      if (!job.decoding) continue;
      decoding++;
      soonest = Math.min(soonest, job.decodeLeft);
    }
    const stepMs = decoding > 0 ? m.decodeStepMs + m.decodeStepPerRequestMs * decoding : 0;
    let steps = Math.max(1, Math.ceil(total / m.maxBatchTokens));
    // A full batch: each request ahead of it, and itself, waits for a running one to finish.
    const short = this.waiting + 1 - (m.maxRunning - running.length);
    if (short > 0 && decoding > 0) steps += short * soonest;
    return (total / m.prefillTokensPerSecond) * 1000 + steps * stepMs;
  }

  /**
   * Queues `request` (the keys of its prompt and answer blocks, as `blockKeys(prompt, blockSize,
   * answer)` gives them, and the caller's `handle`, given back at completion), sent at `now`;
   * starts a step at once if the worker is idle. `tags`: the blocks' tags when the cache is
   * observed (see {@link Job.tags}). `loaded`: the prompt's KV cache arrives by transfer
   * (see {@link Job.loaded}).
   */
  submit(
    request: SimRequest,
    keys: Float64Array,
    handle: unknown,
    now: number,
    tags?: Float64Array,
    loaded = false,
  ): void {
    this.#queued = -1;
    this.#waiting.push({
      request,
      keys,
      promptBlocks: Math.floor(request.promptLength / this.#m.blockSize),
      tags,
      sentAt: now,
      handle,
      loaded,
      cachedTokens: 0,
      prefillLeft: 0,
      decodeLeft: 0,
      decoding: false,
      firstTokenAt: 0,
      pinned: [],
      privateBlocks: 0,
    });
    if (!this.#busy) this.#startStep(now);
  }

  /** Ends the step in progress at `now` and starts the next one if there is work. */
  step(now: number): void {
    this.#queued = -1;
    const running = this.#running;
    let kept = 0;
    for (let i = 0; i < running.length; i++) {
      const job = running[i]!;
      let done = false;
      if (job.decoding) {
        done = --job.decodeLeft <= 0;
      } else if (job.prefillLeft === 0) {
        job.decoding = true;
        job.firstTokenAt = now;
        this.#hooks.firstToken?.(job, now);
        // The prompt's blocks become reusable only now that its prefill is done.
        const published = this.cache.publish(
          job.keys,
          job.pinned.length,
          job.promptBlocks,
          job.pinned,
          job.tags,
        );
        job.privateBlocks -= published;
        job.decodeLeft = job.request.outputLength - 1;
        done = job.decodeLeft <= 0;
      }
      if (done) this.#finish(job, now);
      else running[kept++] = job;
    }
    running.length = kept;
    this.#busy = false;
    if (this.inFlight > 0) this.#startStep(now);
  }

  /**
   * Restarts the engine at once, as far as its cache goes: every reusable block is forgotten
   * (the cache's observer is not told). Running requests go on; the blocks they pinned become
   * their private blocks, and a request still in prefill publishes its whole prompt again when
   * done. Queues and counters are kept. O(running × pinned + cache nodes).
   */
  restart(): void {
    this.#queued = -1;
    let pinned = 0;
    const running = this.#running;
    for (let i = 0; i < running.length; i++) {
      const job = running[i]!;
      pinned += job.pinned.length;
      job.privateBlocks += job.pinned.length;
      job.pinned.length = 0;
    }
    this.cache.clear(pinned);
    this.adapters.restart();
  }

  #finish(job: Job, now: number): void {
    const output = job.request.outputTokens;
    if (output !== undefined && output.length > 0) {
      // The answer's blocks stay cached too: the next turn of a conversation repeats it.
      job.privateBlocks -= this.cache.keep(job.keys, job.promptBlocks, job.keys.length, job.tags);
    }
    this.cache.release(job.pinned, job.privateBlocks);
    job.privateBlocks = 0;
    if (job.request.adapter !== undefined) this.adapters.release(job.request.adapter);
    this.#hooks.completed(job, now);
  }

  #startStep(now: number): void {
    this.#admit();
    const m = this.#m;
    let budget = m.maxBatchTokens;
    let prefilled = 0;
    let decoding = 0;
    const running = this.#running;
    for (let i = 0; i < running.length; i++) {
      const job = running[i]!;
      if (job.decoding) {
        decoding++;
      } else if (budget > 0 && job.prefillLeft > 0) {
        const take = Math.min(job.prefillLeft, budget);
        job.prefillLeft -= take;
        budget -= take;
        prefilled += take;
      }
    }
    let duration = (prefilled / m.prefillTokensPerSecond) * 1000;
    // Loading adapters blocks the batch's step.
    duration += this.#adapterLoads * m.adapterLoadMs;
    this.#adapterLoads = 0;
    if (decoding > 0) duration += m.decodeStepMs + m.decodeStepPerRequestMs * decoding;
    if (running.length === 0) return; // nothing admitted (cannot happen: see #admit)
    this.#busy = true;
    // A step that only completes prefills already done still takes one tick.
    this.#hooks.wakeAt(now + Math.max(duration, 1e-6), this.index);
  }

  /**
   * Whether the head of the queue — after moving to it the first of the 64 waiting whose adapter
   * can run, when the head's cannot — may start as far as adapters go. O(64) at most.
   */
  #adapterFitsAtHead(): boolean {
    const waiting = this.#waiting;
    const head = this.#waitingHead;
    if (adapterFits(this.adapters, waiting[head]!)) return true;
    const scanned = Math.min(waiting.length, head + SCANNED_WAITING);
    for (let i = head + 1; i < scanned; i++) {
      const job = waiting[i]!;
      if (!adapterFits(this.adapters, job)) continue;
      for (let k = i; k > head; k--) waiting[k] = waiting[k - 1]!;
      waiting[head] = job;
      return true;
    }
    return false;
  }

  /** Moves waiting jobs into the batch, first come first served, while they fit. */
  #admit(): void {
    const m = this.#m;
    const running = this.#running;
    while (this.#waitingHead < this.#waiting.length && running.length < m.maxRunning) {
      // A request whose adapter finds no slot waits; one behind it may go first (as vLLM does).
      if (!this.#adapterFitsAtHead()) break;
      const job = this.#waiting[this.#waitingHead]!;
      const request = job.request;
      // At least one prompt token is always computed, as engines do.
      const limit = Math.min(
        job.promptBlocks,
        Math.floor((request.promptLength - 1) / m.blockSize),
      );
      const matched = this.cache.match(job.keys, limit);
      const total = Math.ceil((request.promptLength + request.outputLength) / m.blockSize);
      const fresh = total - matched;
      // A job that cannot fit even in an empty batch runs anyway, over capacity.
      if (!this.cache.admit(job.keys, matched, fresh, running.length === 0)) break;
      if (request.adapter !== undefined && this.adapters.acquire(request.adapter) === 'loaded')
        this.#adapterLoads++;
      for (let i = 0; i < matched; i++) job.pinned.push(job.keys[i]!);
      job.privateBlocks = fresh;
      job.cachedTokens = matched * m.blockSize;
      job.prefillLeft = job.loaded ? 0 : request.promptLength - job.cachedTokens;
      this.cachedTokens += job.cachedTokens;
      this.promptTokens += request.promptLength;
      running.push(job);
      this.#waiting[this.#waitingHead++] = undefined as unknown as Job;
      if (this.#waitingHead > 1024 && this.#waitingHead * 2 > this.#waiting.length) {
        this.#waiting.splice(0, this.#waitingHead);
        this.#waitingHead = 0;
      }
    }
  }
}

/**
 * Whether `job` may start as far as adapters go: it names none, or its adapter is loaded or can be.
 */
function adapterFits(slots: AdapterSlots, job: Job): boolean {
  const adapter = job.request.adapter;
  return adapter === undefined || slots.admits(adapter);
}

/** How many leading `keys`, at most `limit`, are the first prompt blocks of `job`. */
function commonPrefix(keys: Float64Array, job: Job, limit: number): number {
  const other = job.keys;
  const n = Math.min(limit, job.promptBlocks);
  let i = 0;
  while (i < n && other[i] === keys[i]) i++;
  return i;
}
