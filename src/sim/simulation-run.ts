/**
 * One run of `simulate`: the event loop over simulated time, the engines of the fleet, and what
 * is measured along the way.
 *
 * @module
 * @internal
 */
import { FleetRouteError, type SaturatedReason } from '../core/errors.js';
import type { Policy, SelectRequest } from '../policies/policy.js';
import type { AdmissionGate } from '../router/admission-gate.js';
import type { Router } from '../router/router.js';
import { routerInternals } from '../router/router-internals.js';
import type { SharedState } from '../shared/shared-state.js';
import type { WorkerLease } from '../workers/worker.js';
import { keyByAdapter, withAdapterLoads } from './adapters.js';
import { AdmissionTally } from './admission-tally.js';
import { ArrivalSchedule } from './arrival-schedule.js';
import { blockKeys } from './block-keys.js';
import { Engine, type EngineHooks, type Job } from './engine.js';
import { EventQueue } from './event-queue.js';
import { KvEventFeed } from './kv-event-feed.js';
import { deliverLoads, LoadPolls } from './load-polls.js';
import { PdDispatch } from './pd-dispatch.js';
import { PrecisionProbe } from './precision-probe.js';
import { LOW_PRIORITY, RequestMix } from './request-mix.js';
import type { PolicyRun } from './result.js';
import { RunTally } from './run-tally.js';
import type { SimRouters } from './sim-routers.js';
import { kvPageSizeOf, type ResolvedSimulationOptions, runLabelOf } from './simulation-options.js';
import { Timeline } from './timeline.js';
import type { SimRequest } from './workload.js';
import { promptOf } from './workload-check.js';

/** Event kinds. Scheduled arrivals are not queued: {@link ArrivalSchedule} holds them. */
const RELEASE = 0;
const STEP = 1;
const POLL = 2;
const SAMPLE = 3;
/** A KV-event batch of engine `target` reaches the routers. */
const KV = 4;
/** Every router syncs its shared loads (with `sharedState`). */
const SYNC = 5;
/** With admission: the earliest deadline of a router's queue has come. */
const EXPIRE = 6;
/** With disaggregation: a KV transfer (its slot) reaches its decode worker. */
const TRANSFER = 7;

/** Microtask turns a grant takes at most to reach the run (a few; far more means a bug). */
const SETTLE_TURNS = 1_000;

/** @internal What a run prepares for `router.select` / `admit` from one request. */
interface Prepared {
  readonly tokens: Uint32Array;
  readonly select: SelectRequest;
}

/**
 * @internal The state of one run. Events are taken in time order (ties: scheduled arrivals
 * first, then queued events in the order they were queued), so a run is a pure function of its
 * options. Nothing is visited at times when nothing happens: load polls and timeline samples
 * skip the idle stretches of the fleet (see {@link LoadPolls} and {@link Timeline}), so the cost
 * grows with requests and engine steps, not with the span of simulated time.
 */
export class SimulationRun {
  /** Reads the simulated time; give it to every policy and registry of the run. */
  readonly clock = (): number => this.#now;
  readonly urls: readonly string[];
  /** Called with each request's block keys, prompt length and the engines just before routing. */
  beforeSelect:
    | ((keys: Float64Array, promptLength: number, engines: readonly Engine[]) => void)
    | undefined;
  readonly #o: ResolvedSimulationOptions;
  readonly #total: number;
  readonly #workerOf: ReadonlyMap<string, number>;
  readonly #engines: Engine[] = [];
  readonly #queue = new EventQueue();
  readonly #schedule: ArrivalSchedule;
  readonly #polls: LoadPolls | undefined;
  readonly #timeline: Timeline;
  #routers: readonly Router[] = [];
  #policies: readonly Policy[] = [];
  #now = 0;
  #events = 0;
  /** Requests on a worker (waiting or running); released requests queued but not yet sent. */
  #inFlight = 0;
  #releases = 0;
  #completed = 0;
  #nextClosedLoop = 0;
  #samplesStarted = false;
  readonly #tally: RunTally;
  readonly #done: Uint8Array;
  /** When each request completed (ms), read for the `delayMs` of the requests that follow it. */
  readonly #doneAt: Float64Array;
  /** Multiplies each `delayMs`: a trace replayed `speedup` times faster shortens its delays too. */
  readonly #delayScale: number;
  readonly #parked = new Map<number, number[]>();
  readonly #precision: PrecisionProbe;
  readonly #progressEvery: number;
  /** The KV-event feed, when `kvEvents` is on and a policy takes events. */
  #kv: KvEventFeed | undefined;
  /** Engine restarts done so far (see `engineRestarts`). */
  #restarts = 0;
  /** Every router's shared state, in router order (empty without `sharedState`). */
  #shared: readonly SharedState[] = [];
  /** The priorities and tenants drawn for the requests, when the options ask for a mix. */
  readonly #mix: RequestMix | undefined;
  /** With admission: its counters, and each router's gate (in router order). */
  readonly #admission: AdmissionTally | undefined;
  #gates: readonly AdmissionGate[] = [];
  /** With admission: when each request reached a router (its time to first token starts there). */
  readonly #arrivedAt: Float64Array | undefined;
  /** With admission: requests handed to a router so far (picks the router, round-robin). */
  #entered = 0;
  /** With admission: outcomes the routers decided, and those the run has taken in. */
  #decided = 0;
  #settled = 0;
  /** With admission: the time of the next EXPIRE event queued (`Infinity`: none). */
  #expiresAt = Number.POSITIVE_INFINITY;
  /** With admission: an unexpected error of a router's `admit`, rethrown by `run`. */
  #failure: { readonly error: unknown } | undefined;
  /** With disaggregation: the legs of the requests. */
  readonly #pd: PdDispatch | undefined;
  /** With disaggregation: every router's decode-leg policy, in router order. */
  #decodePolicies: readonly Policy[] = [];

  /** Builds the fleet and the arrival schedule of `o`; nothing runs until {@link run}. */
  constructor(o: ResolvedSimulationOptions) {
    this.#o = o;
    const model = o.fleet;
    this.#total = o.workload.requests.length;
    this.urls = Array.from({ length: model.workers }, (_, i) => `http://sim-worker-${i}:8000`);
    this.#workerOf = new Map(this.urls.map((url, i) => [url, i]));
    const hooks: EngineHooks = {
      wakeAt: (time, worker) => this.#queue.push(time, STEP, worker),
      // The router learns of a first token as a streaming client would: when it arrives.
      ...(o.firstTokens
        ? { firstToken: (job: Job) => (job.handle as WorkerLease).firstToken() }
        : {}),
      completed: (job, time) => this.#completedJob(job, time),
    };
    this.#tally = new RunTally(this.#total, model.workers);
    this.#pd =
      o.disaggregation === undefined
        ? undefined
        : new PdDispatch(
            o.disaggregation,
            {
              engines: this.#engines,
              transferAt: (time, slot) => this.#queue.push(time, TRANSFER, slot),
              completed: (lease, request, sentAt, firstTokenAt, time) =>
                this.#completedRequest(lease, request, sentAt, firstTokenAt, time),
            },
            this.#tally,
            o,
            this.urls,
          );
    const engineHooks = this.#pd?.hooks(hooks) ?? hooks;
    for (let i = 0; i < model.workers; i++) this.#engines.push(new Engine(i, model, engineHooks));
    this.#schedule = ArrivalSchedule.of(o.arrivals, o.workload.requests, o.seed);
    this.#nextClosedLoop = o.arrivals.kind === 'closed_loop' ? this.#schedule.size : 0;
    this.#polls = o.loadPollIntervalMs > 0 ? new LoadPolls(o.loadPollIntervalMs) : undefined;
    this.#timeline = new Timeline(model.workers, o.sampleIntervalMs, 3);
    this.#done = new Uint8Array(this.#total);
    this.#doneAt = new Float64Array(this.#total);
    this.#delayScale = o.arrivals.kind === 'trace' ? 1 / (o.arrivals.speedup ?? 1) : 1;
    this.#precision = new PrecisionProbe(model.workers, model.blockSize, o.precision);
    this.#progressEvery = Math.max(1, Math.floor(this.#total / 100));
    this.#mix = RequestMix.of(o);
    this.#admission = o.admission === undefined ? undefined : new AdmissionTally(this.#total);
    this.#arrivedAt = o.admission === undefined ? undefined : new Float64Array(this.#total);
  }

  /**
   * Replays the workload through `routers` until no event is left. Awaits only with shared
   * state (each router's lookups before a request, its writes after, and the load syncs), during
   * which simulated time stands still.
   * @throws what `onProgress` throws; {@link FleetRouteError} `INVALID_ARGUMENT` when a
   *   request's `tokens()` misbehaves or some requests never ran.
   */
  async run(routers: SimRouters): Promise<void> {
    this.#routers = routers.routers;
    this.#policies = routers.policies;
    this.#shared = routers.shared;
    this.#decodePolicies = routers.decodePolicies;
    if (this.#admission !== undefined) this.#watchAdmission(routers.routers);
    const queue = this.#queue;
    const o = this.#o;
    if (o.kvEvents) {
      this.#kv = KvEventFeed.of(
        routers.policies,
        this.urls,
        {
          delayMs: o.kvEventDelayMs,
          loss: o.kvEventLoss,
          seed: o.seed,
          pageSize: kvPageSizeOf(o),
          blockSize: o.fleet.blockSize,
        },
        (time, worker) => queue.push(time, KV, worker),
      );
      this.#kv?.attach(this.#engines);
    }
    const schedule = this.#schedule;
    this.#o.onProgress?.(0, this.#total);
    if (this.#polls !== undefined) queue.push(0, POLL, 0);
    if (this.#shared.length > 0) queue.push(0, SYNC, 0);
    for (;;) {
      const event = queue.peek();
      const arrival = schedule.nextTime;
      if (event === undefined && arrival === Number.POSITIVE_INFINITY) break;
      this.#events++;
      if (event === undefined || arrival <= event.time) {
        this.#now = arrival;
        const sent = this.#arrive(schedule.take());
        if (sent !== undefined) await sent;
        if (this.#admission !== undefined) await this.#settle();
        continue;
      }
      queue.pop();
      this.#now = event.time;
      switch (event.kind) {
        case RELEASE: {
          this.#releases--;
          const sent = this.#arrive(event.target);
          if (sent !== undefined) await sent;
          break;
        }
        case SYNC:
          await this.#sync();
          break;
        case STEP:
          this.#engines[event.target]!.step(this.#now);
          this.#kv?.flush(event.target, this.#now);
          break;
        case KV:
          this.#kv!.deliver(event.target);
          break;
        case POLL:
          this.#poll(routers);
          break;
        case SAMPLE:
          this.#sample();
          break;
        case EXPIRE:
          this.#expiresAt = Number.POSITIVE_INFINITY;
          for (const gate of this.#gates) gate.expire(this.#now);
          break;
        case TRANSFER:
          this.#pd!.transferred(event.target, this.#now);
          break;
      }
      if (this.#admission !== undefined) await this.#settle();
    }
    if (this.#failure !== undefined) throw this.#failure.error;
    if (this.#completed !== this.#total) {
      throw new FleetRouteError(
        'INVALID_ARGUMENT',
        `workload: ${this.#total - this.#completed} requests never ran (an 'after' names a request that never completes)`,
      );
    }
  }

  /** @internal The engines, in worker order (tests compare their caches with the routers'). */
  get engines(): readonly Engine[] {
    return this.#engines;
  }

  /** What the run measured, once {@link run} has returned. O(requests log requests + workers). */
  result(): PolicyRun {
    let cachedTokens = this.#pd?.savedTokens ?? 0;
    let promptTokens = this.#pd?.promptTokens ?? 0;
    for (const engine of this.#pd === undefined ? this.#engines : []) {
      cachedTokens += engine.cachedTokens;
      promptTokens += engine.promptTokens;
    }
    const run = this.#tally.result({
      policy: runLabelOf(this.#o),
      cachedTokens,
      promptTokens,
      precision: this.#precision.value,
      timeline: {
        intervalMs: this.#timeline.intervalMs,
        inFlight: this.#timeline.channel(0),
        waiting: this.#timeline.channel(1),
        running: this.#timeline.channel(2),
      },
      eventsProcessed: this.#events,
      timestampOffsetMs: this.#schedule.offsetMs,
    });
    const out = withAdapterLoads(run, this.#o.workload, this.#engines);
    if (this.#pd !== undefined) return { ...out, disaggregation: this.#pd.result() };
    return this.#admission === undefined ? out : { ...out, admission: this.#admission.result() };
  }

  /** No request is on a worker or about to be sent: nothing changes until the next arrival. */
  get #idle(): boolean {
    return this.#inFlight === 0 && this.#releases === 0;
  }

  get #busy(): boolean {
    return this.#completed < this.#total;
  }

  #poll(routers: SimRouters): void {
    if (!this.#busy) return;
    const policies = [...routers.policies, ...this.#decodePolicies];
    deliverLoads(policies, this.#engines, this.urls, this.#now, this.#o.adapterResidency);
    const next = this.#polls!.advance(this.#idle ? this.#schedule.nextTime : this.#now);
    if (next !== Number.POSITIVE_INFINITY) this.#queue.push(next, POLL, 0);
  }

  /** Every router syncs its loads, then the next sync is queued while requests remain. */
  async #sync(): Promise<void> {
    if (!this.#busy) return;
    await Promise.all(this.#shared.map((shared) => shared.sync()));
    const next = this.#now + this.#o.sharedRefreshMs;
    // Idle: nothing changes until the next arrival.
    this.#queue.push(this.#idle ? Math.max(next, this.#schedule.nextTime) : next, SYNC, 0);
  }

  #sample(): void {
    if (!this.#busy) return;
    const engines = this.#engines;
    // Channels: 0 in flight, 1 waiting, 2 running.
    let next = this.#timeline.record(this.#now, (w, channel) => {
      const engine = engines[w]!;
      return channel === 0 ? engine.inFlight : channel === 1 ? engine.waiting : engine.running;
    });
    if (this.#idle) next = this.#timeline.skipIdle(this.#schedule.nextTime);
    if (next !== Number.POSITIVE_INFINITY) this.#queue.push(next, SAMPLE, 0);
  }

  /** Sends request `id`: `undefined` when done, a promise while shared state is consulted. */
  #arrive(id: number): Promise<void> | undefined {
    this.#tally.onArrival(this.#now);
    const sent = this.#send(id);
    if (sent !== undefined) return sent.then(() => this.#started());
    this.#started();
    return undefined;
  }

  #started(): void {
    if (!this.#samplesStarted && this.#tally.started) {
      this.#samplesStarted = true;
      this.#queue.push(this.#now, SAMPLE, 0);
    }
  }

  #release(id: number, time = this.#now): void {
    this.#releases++;
    this.#queue.push(time, RELEASE, id);
  }

  #completedJob(job: Job, time: number): void {
    this.#completedRequest(
      job.handle as WorkerLease,
      job.request,
      job.sentAt,
      job.firstTokenAt,
      time,
    );
  }

  /** `request`, sent at `sentAt`, gave its first token at `firstTokenAt` and completed. */
  #completedRequest(
    lease: WorkerLease,
    request: SimRequest,
    sentAt: number,
    firstTokenAt: number,
    time: number,
  ): void {
    const { id, outputLength } = request;
    lease.release({ ok: true, status: 200 });
    this.#inFlight--;
    const arrivedAt = this.#arrivedAt === undefined ? sentAt : this.#arrivedAt[id]!;
    this.#admission?.onFirstToken(id, firstTokenAt - arrivedAt);
    this.#tally.onComplete(time, arrivedAt, firstTokenAt, outputLength);
    this.#finish(id);
  }

  #finish(id: number): void {
    this.#completed++;
    this.#done[id] = 1;
    this.#doneAt[id] = this.#now;
    const waiting = this.#parked.get(id);
    if (waiting !== undefined) {
      this.#parked.delete(id);
      const requests = this.#o.workload.requests;
      for (const next of waiting) this.#release(next, this.#now + this.#delayOf(requests[next]!));
    }
    if (this.#o.arrivals.kind === 'closed_loop' && this.#nextClosedLoop < this.#total) {
      this.#release(this.#nextClosedLoop++);
    }
    const { onProgress } = this.#o;
    const completed = this.#completed;
    if (
      onProgress !== undefined &&
      (completed % this.#progressEvery === 0 || completed === this.#total)
    ) {
      onProgress(completed, this.#total);
    }
  }

  /** How long after its `after` completes `request` is sent (ms of simulated time). */
  #delayOf(request: SimRequest): number {
    return request.delayMs === undefined ? 0 : request.delayMs * this.#delayScale;
  }

  #send(id: number): Promise<void> | undefined {
    const request = this.#o.workload.requests[id]!;
    if (request.after !== undefined) {
      if (this.#done[request.after] === 0) {
        const list = this.#parked.get(request.after);
        if (list === undefined) this.#parked.set(request.after, [id]);
        else list.push(id);
        return undefined;
      }
      const due = this.#doneAt[request.after]! + this.#delayOf(request);
      if (due > this.#now) {
        this.#release(id, due);
        return undefined;
      }
    }
    if (this.#o.skipLowPriority && this.#mix?.priorityOf(id) === LOW_PRIORITY) {
      this.#tally.onSkipped();
      this.#finish(id);
      return undefined;
    }
    if (this.#shared.length > 0) return this.#sendShared(id, request);
    this.#dispatch(id, request);
    return undefined;
  }

  /** With shared state: the router's lookups first, the request, then its writes. */
  async #sendShared(id: number, request: SimRequest): Promise<void> {
    const k = this.#tally.sent % this.#routers.length;
    const prepared = this.#selectRequestOf(request, id);
    await this.#routers[k]!.prepare(prepared.select);
    this.#dispatch(id, request, prepared);
    await this.#shared[k]!.flush();
  }

  /**
   * The request a router is given: the prompt, the routing key, and the priority and tenant of
   * the mix (else the request's own), each only when set, so a run without them routes exactly
   * the requests it always did.
   */
  #selectRequestOf(request: SimRequest, id: number): Prepared {
    const tokens = promptOf(request, id);
    const select: { -readonly [K in keyof SelectRequest]: SelectRequest[K] } = { tokens };
    if (request.routingKey !== undefined) select.routingKey = request.routingKey;
    if (request.adapter !== undefined) select.model = request.adapter;
    const priority = this.#mix?.priorityOf(id) ?? request.priority;
    if (priority !== undefined) select.priority = priority;
    const tenant = this.#mix?.tenantOf(id) ?? request.tenant;
    if (tenant !== undefined) select.tenant = tenant;
    return { tokens, select };
  }

  #dispatch(id: number, request: SimRequest, prepared = this.#selectRequestOf(request, id)): void {
    if (this.#admission !== undefined) {
      this.#enter(id, request, prepared);
      return;
    }
    const k = this.#tally.sent % this.#routers.length;
    const router = this.#routers[k]!;
    if (this.#pd !== undefined) {
      const legs = { prefill: this.#policies[k]!, decode: this.#decodePolicies[k]! };
      const routed = this.#pd.route(id, request, prepared, router, legs, this.#now);
      if (routed) this.#inFlight++;
      else this.#finish(id);
      return;
    }
    this.#route(id, request, prepared.tokens, k, () => router.select(prepared.select));
  }

  /**
   * Routes request `id` through router `k`: `pick` is its `select` (or, with admission, the lease
   * its `admit` gave, and `admitMs` the wall-clock time of the `admit` call), then the engine of
   * the chosen worker takes it.
   */
  #route(
    id: number,
    request: SimRequest,
    tokens: Uint32Array,
    k: number,
    pick: () => WorkerLease | undefined,
    admitMs?: number,
  ): void {
    const now = this.#now;
    if (this.#o.engineRestarts > 0) this.#restartDue();
    // The answer's keys too (the engine caches them at completion), chained in one pass.
    const keys = blockKeys(tokens, this.#o.fleet.blockSize, request.outputTokens);
    if (request.adapter !== undefined) keyByAdapter(keys, request.adapter);
    const tags = this.#kv?.tagsOf(tokens, request.outputTokens, keys.length);
    const best = this.#precision.measure(keys, request.promptLength, this.#engines);
    this.beforeSelect?.(keys, request.promptLength, this.#engines);
    const started = performance.now();
    const lease = pick();
    const routingMs = admitMs ?? performance.now() - started;
    const worker = lease === undefined ? undefined : this.#workerOf.get(lease.worker.url);
    this.#tally.onSend(now, routingMs, worker, request.promptLength);
    if (lease !== undefined) this.#tally.onBranch(this.#policies[k]?.explain?.()?.branch);
    if (lease === undefined || worker === undefined) {
      lease?.release();
      this.#finish(id);
      return;
    }
    this.#precision.record(best, worker);
    this.#inFlight++;
    this.#engines[worker]!.submit(request, keys, lease, now, tags);
    this.#kv?.flush(worker, now);
  }

  /**
   * With admission: hands request `id` to the next router's `admit`. It is routed when admitted
   * (at once, or when a lease releases or a first token frees room), or counted as rejected when
   * turned away; either way in a microtask that {@link #settle} lets run before simulated time
   * moves on.
   */
  #enter(id: number, request: SimRequest, prepared: Prepared): void {
    const k = this.#entered++ % this.#routers.length;
    const { select } = prepared;
    this.#arrivedAt![id] = this.#now;
    this.#admission!.onArrive(id, select.priority ?? 0, select.tenant ?? '', request.promptLength);
    const started = performance.now();
    const admitted = this.#routers[k]!.admit(select);
    // Admitted at once, the call selected the worker; from the queue, it selects later, uncounted.
    const admitMs = performance.now() - started;
    admitted.then(
      (lease) => {
        this.#settled++;
        const waitedMs = this.#now - this.#arrivedAt![id]!;
        if (lease !== undefined) this.#admission!.onServed(id, waitedMs, waitedMs > 0);
        this.#route(id, request, prepared.tokens, k, () => lease, admitMs);
      },
      (error: unknown) => {
        this.#settled++;
        if (!FleetRouteError.is(error, 'SATURATED')) {
          this.#failure ??= { error };
          return;
        }
        this.#tally.onRejected();
        this.#admission!.onRejected(error.reason as SaturatedReason | undefined);
        this.#finish(id);
      },
    );
  }

  /** With admission: reports every outcome to the run as it is decided, counted. */
  #watchAdmission(routers: readonly Router[]): void {
    const gates: AdmissionGate[] = [];
    for (const router of routers) {
      gates.push(routerInternals.admission(router)!);
      router.on('admission', () => {
        this.#decided++;
      });
    }
    this.#gates = gates;
  }

  /**
   * With admission: lets every outcome decided so far reach the run (each is a promise that
   * settles within a few microtasks, none of them waiting on anything outside), so admitted
   * requests start at the simulated time of their grant; then queues an EXPIRE event at the
   * earliest deadline of the routers' queues.
   */
  async #settle(): Promise<void> {
    for (let turns = 0; this.#settled < this.#decided; turns++) {
      if (turns === SETTLE_TURNS) throw new Error('simulate: an admission outcome never settled');
      await undefined;
    }
    let next = Number.POSITIVE_INFINITY;
    for (const gate of this.#gates) next = Math.min(next, gate.nextDeadline);
    if (next < this.#expiresAt) {
      this.#expiresAt = next;
      this.#queue.push(Math.max(next, this.#now), EXPIRE, 0);
    }
  }

  /**
   * Restarts the engines due before the next request is routed: restart `r` comes before
   * request `floor((r + 1) × requests / (restarts + 1))` (in sending order), on worker
   * `r mod workers`. O(1) when none is due.
   */
  #restartDue(): void {
    const restarts = this.#o.engineRestarts;
    const sent = this.#tally.sent;
    while (
      this.#restarts < restarts &&
      Math.floor(((this.#restarts + 1) * this.#total) / (restarts + 1)) <= sent
    ) {
      const worker = this.#restarts % this.#engines.length;
      this.#restarts++;
      this.#engines[worker]!.restart();
      this.#kv?.restarted(worker, this.#now);
    }
  }
}
