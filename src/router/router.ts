/**
 * `Router`: ties a registry, policies and a transport together — health checks, load polling,
 * circuit breakers, retries and leases.
 *
 * @module
 */
import { AbortScopes } from '../core/abort.js';
import { FleetRouteError } from '../core/errors.js';
import { KeepAlive } from '../core/keep-alive.js';
import { log } from '../core/logger.js';
import { fail } from '../core/options.js';
import type { SelectRequest } from '../policies/policy.js';
import { selectPair } from '../policies/select-pair.js';
import type { WorkerEvent } from '../registry/worker-event.js';
import { registryInternals, type WorkerRegistry } from '../registry/worker-registry.js';
import { DEFAULT_HEALTH_TIMEOUT_MS } from '../resilience/health-config.js';
import type { LoadReport } from '../workers/load-report.js';
import type { Worker, WorkerLease } from '../workers/worker.js';
import { AdmissionGate } from './admission-gate.js';
import { BreakerWatch } from './breaker-watch.js';
import { EngineRestarts } from './engine-restarts.js';
import { HealthLoop } from './health-loop.js';
import { LeaseLeaks } from './lease-leaks.js';
import { LoadPoller, type PollRound } from './load-poller.js';
import { ModelDiscovery } from './model-discovery.js';
import type { RouterEventMap } from './observations.js';
import { PolicyPicker } from './policy-picker.js';
import { Readiness, type ReadyOptions } from './readiness.js';
import { RetryConfigs } from './retry-configs.js';
import type { AttemptContext } from './retry-decision.js';
import { type RetryHost, RetryLoop } from './retry-loop.js';
import { RouterEvents } from './router-events.js';
import { routerInternals } from './router-internals.js';
import {
  type ResolvedRouterOptions,
  type RouterOptions,
  resolveRouterOptions,
} from './router-options.js';
import { readRequest } from './router-request.js';
import { RouterCounters, type RouterStats, routerStats } from './router-stats.js';

export type { RouterStats } from './router-stats.js';

/** A prefill lease and a decode lease from {@link Router.selectPair}. @public */
export interface LeasePair {
  readonly prefill: WorkerLease;
  readonly decode: WorkerLease;
}

/**
 * The routing front: picks a worker per request with the model's policy, hands out leases, and
 * keeps the fleet's health, loads and breakers current through the caller's transport.
 *
 * - **Health loop** (`health`): every worker is probed on its own schedule (`intervalMs`), at
 *   most `maxConcurrentProbes` at a time, each bounded by `timeoutMs`, so a hung worker never
 *   delays another. pending → ready after `successThreshold` successes; ready → not_ready after
 *   `failureThreshold` consecutive failures; not_ready → ready after `successThreshold`
 *   successes, → failed after 3 × `failureThreshold`; pending → failed after 10 ×
 *   `failureThreshold`; failed and draining are terminal (`removeFailed` removes failed workers).
 *   New and replaced workers are probed at once; an answer about a replaced worker is discarded.
 * - **Load polling** (`loadPolling`): every `intervalMs`, the ready workers' loads go to every
 *   policy's `updateLoads`; reports older than `staleAfterMs` are ignored by the policies, which
 *   then use in-flight counts.
 * - **Engine restarts**: when the health loop sees a ready worker fail and come back, or a load
 *   report's `startedAt` differs from the one before, every policy's
 *   `workerRestarted(url, { detectedBy })` is called — on a start-time change, while that round
 *   is delivered, before its `updateLoads` — (`cache_aware` forgets what it believed that
 *   engine's cache held) and `workerRestarted` is emitted.
 * - **Breakers**: `circuitBreaker` becomes every worker's default; state changes are emitted as
 *   `circuitChanged` events. When the health loop sees a worker back (`not_ready` → `ready`, or
 *   a successful probe after one failed while its breaker was open), an open breaker turns
 *   half-open at once instead of waiting out `openMs`. A failure answered with a `Retry-After`
 *   cools that worker down for that long (`maxCooldownMs` at most).
 * - **Leases**: `select` increments the chosen worker's `load`; `lease.release(outcome)` takes it
 *   back exactly once and feeds the breaker. A lease garbage-collected without release is
 *   released by a finaliser and, outside production, reported.
 *
 * Nothing leaks: `close()` stops every timer, aborts every probe and poll, and unsubscribes. Call
 * `start()` to begin probing and polling.
 *
 * @example
 * ```ts
 * const router = new Router({ registry, transport: httpTransport(), policy: 'cache_aware' });
 * router.start();
 * const response = await router.execute({ model, text }, (worker, { signal }) =>
 *   fetch(`${worker.baseUrl}/v1/completions`, { method: 'POST', body, signal }),
 * );
 * ```
 * @public
 */
export class Router {
  static {
    routerInternals.admission = (router) => (router as Router).#gate;
  }

  readonly #o: ResolvedRouterOptions;
  /** The observation events: listeners, their counts, and the builders. */
  readonly #events: RouterEvents;
  /** Which policy routes a request, over which candidates; every policy of the router. */
  readonly #picker: PolicyPicker;
  /** Engine start times from the load reports, and what a restart sets off. */
  readonly #restarts: EngineRestarts;
  readonly #health: HealthLoop | undefined;
  readonly #loads: LoadPoller | undefined;
  readonly #discovery: ModelDiscovery | undefined;
  /**
   * One scope per `execute` call in flight: each follows its caller's signal, and `close()`
   * aborts them all.
   */
  readonly #calls = new AbortScopes();
  /** What every `execute` call's {@link RetryLoop} borrows from the router (built once). */
  readonly #retryHost: RetryHost;
  /** Each call's retry settings: the router's, under its model's override. */
  readonly #retryConfigs: RetryConfigs;
  /**
   * Holds the process open while a caller awaits something that no ref'd handle of ours or of
   * the transport would: `ready()` waits, `pollLoads()` rounds. Every background timer stays
   * `unref`'d; this one exists only while somebody waits.
   */
  readonly #keepAlive = new KeepAlive();
  readonly #readiness: Readiness;
  readonly #breakers: BreakerWatch;
  readonly #leaks: LeaseLeaks | undefined;
  /** Admission control (the `admission` option); `undefined` when off. */
  readonly #gate: AdmissionGate | undefined;
  readonly #onEvent = (event: WorkerEvent): void => this.#handle(event);
  readonly #counters = new RouterCounters();
  #started = false;
  #closed = false;

  /**
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
   */
  constructor(options: RouterOptions) {
    this.#o = resolveRouterOptions(options);
    const o = this.#o;
    const events = new RouterEvents(o.logger);
    this.#events = events;
    const picker = new PolicyPicker(o, events);
    this.#picker = picker;
    this.#restarts = new EngineRestarts(o.registry, () => picker.all(), events);
    this.#retryConfigs = new RetryConfigs(o.registry, o.retry);
    // Checked (and resolved) by resolveRouterOptions; written as is.
    if (o.circuitBreaker !== undefined)
      registryInternals.claimBreakerDefaults(o.registry, this, o.circuitBreaker);
    this.#readiness = new Readiness(o.registry, this.#keepAlive);
    // Never after `close()`, which closes the watch first.
    this.#breakers = new BreakerWatch((worker, from, to) => {
      if (to !== 'open') this.#gate?.wake();
      events.circuitChanged(worker, from, to);
    });
    this.#discovery =
      o.discoverModels && o.transport.models !== undefined
        ? new ModelDiscovery(
            o.registry,
            o.transport.models.bind(o.transport),
            o.health?.timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS,
            o.maxConcurrentProbes,
          )
        : undefined;
    this.#health =
      o.health === undefined
        ? undefined
        : new HealthLoop(
            o.registry,
            o.transport,
            o.health,
            o.maxConcurrentProbes,
            (worker, ok, timedOut, durationMs) => events.probe(worker, ok, timedOut, durationMs),
          );
    this.#loads =
      o.loadPolling === undefined || o.transport.loads === undefined
        ? undefined
        : new LoadPoller(
            o.registry,
            o.transport.loads.bind(o.transport),
            o.loadPolling,
            o.maxConcurrentProbes,
            (reports, round) => this.#deliverLoads(reports, round),
          );
    this.#retryHost = {
      pick: (request, tried) =>
        picker.pick(request, this.#gate?.exclude(request, tried) ?? tried, tried.size + 1),
      matched: () => picker.matched,
      lease: (worker) => this.#lease(worker),
      count: (what) => this.#counters.count(what),
      noWorkerReason: (request) => this.#picker.noWorkerReason(request),
      random: o.random,
      shouldRetry: o.shouldRetry,
      onRetry: o.onRetry,
      warn: (message) => log(o.logger, 'warn', 'FLEETROUTE_RETRY_HOOK', message),
      observer: (request) => events.observer(request),
    };
    this.#leaks = o.reportLeakedLeases ? new LeaseLeaks(o.logger) : undefined;
    this.#gate =
      o.admission === undefined
        ? undefined
        : new AdmissionGate(o.admission, o.registry, o.loadPolling?.staleAfterMs ?? Infinity, {
            listening: () => events.listening.admission !== 0,
            emit: (event) => events.emit('admission', event),
          });
  }

  /** The registry this router routes over (the `registry` option). */
  get registry(): WorkerRegistry {
    return this.#o.registry;
  }

  /**
   * Subscribes to the registry (then reads its snapshot, so no worker is missed), observes every
   * breaker, and starts the health loop and load polling. Idempotent.
   *
   * @throws {@link FleetRouteError} `CLOSED` after `close()`.
   */
  start(): void {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the router is closed');
    if (this.#started) return;
    const registry = this.#o.registry;
    // First: a shared state that belongs to another router throws before anything started.
    this.#o.shared?.attach({
      registry,
      logger: this.#o.logger,
      report: (event) => this.#events.sharedState(event),
    });
    this.#started = true;
    this.#gate?.start();
    registry.on('event', this.#onEvent);
    for (const info of registry.snapshot().workers) {
      const worker = registry.get(info.id);
      if (worker !== undefined) this.#adopt(worker);
    }
    this.#loads?.start();
  }

  /**
   * Waits until workers are routable: resolves once `minWorkers` (default 1) workers — of
   * `model`, when given (wildcard workers count for every model) — are `ready`. Starts the router
   * if it has not started. New workers are probed at once and then every
   * `health.startupIntervalMs` (500 ms by default) until they settle, so with the default
   * thresholds a healthy fleet is routable about half a second after `start()`. While it waits,
   * the router holds the process open (one ref'd timer for all waiters, gone when the last one
   * settles), so a script may `await` it before anything else keeps the event loop busy.
   *
   * @example
   * ```ts
   * router.start();
   * await router.ready({ signal: AbortSignal.timeout(30_000) });
   * ```
   * @returns a promise that resolves when the condition holds (at once if it already does).
   * @throws (rejects) the signal's reason when `signal` aborts first; {@link FleetRouteError}
   *   `CLOSED` when the router is or becomes closed; `INVALID_ARGUMENT` naming a bad option.
   *   Cost: one pass over the model's workers per registry event while waiting.
   */
  ready(options?: ReadyOptions): Promise<void> {
    if (this.#closed) return Promise.reject(new FleetRouteError('CLOSED', 'the router is closed'));
    try {
      const condition = this.#readiness.read(options);
      this.start();
      return this.#readiness.wait(condition);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /**
   * Adds a listener for one kind of observation event (see {@link RouterObservation}): breaker
   * changes, decisions, attempts, first tokens, token usage, retries, no-worker, probes, status
   * changes, engine restarts, load rounds.
   * Listeners run synchronously where the event happens (inside `select`, for a decision): keep
   * them short. One that throws is caught and reported once per listener as a process warning;
   * routing goes on.
   *
   * Cost: nothing for event types nobody listens to — their events are never built. With a
   * listener on `decision`, a `select` also reads the clock twice and builds one event object.
   *
   * @returns `this`.
   */
  on<K extends keyof RouterEventMap>(type: K, listener: RouterEventMap[K]): this {
    this.#events.on(type, listener);
    return this;
  }

  /** Removes a listener. @returns `this`. */
  off<K extends keyof RouterEventMap>(type: K, listener: RouterEventMap[K]): this {
    this.#events.off(type, listener);
    return this;
  }

  /**
   * Picks a worker for `request` with the policy of `request.model` (else the default policy),
   * over `registry.getByModel(request.model)`, and takes a lease on it.
   *
   * With admission on (the `admission` option), `select` cannot wait its turn: while the model's
   * workers are all full, or other requests wait for them, it throws `SATURATED` (reason `busy`)
   * rather than jump the queue; {@link Router.admit} waits instead.
   *
   * @returns the lease (`lease.worker`, `lease.release(outcome?)`), or `undefined` when no worker
   *   is available. Cost: the policy's (with admission, one pass over the candidates more).
   * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `request` is neither an object nor
   *   `undefined` / `null` (which route like `{}`); with admission, `SATURATED` (above), and
   *   `INVALID_ARGUMENT` for a `priority`, `tenant` or `size` out of bounds.
   */
  select(request?: SelectRequest): WorkerLease | undefined {
    if (this.#closed) return undefined;
    const req = readRequest(request);
    const gate = this.#gate;
    if (gate !== undefined && !gate.wouldAdmit(req)) throw gate.refusedSelect(req);
    return this.#select(req);
  }

  /**
   * `select`, after waiting for admission: resolves when a worker of the request's model has room
   * and the request's turn has come (at once when admission is off or nobody waits), with a lease
   * as `select` gives it.
   *
   * @returns (resolves to) the lease, or `undefined` when no worker is available.
   * @throws (rejects) {@link FleetRouteError} `SATURATED` when admission turns the request away
   *   (`reason`: `shed`, `queue_full`, `timeout`; `retryAfterMs`), `CLOSED` when the router is or
   *   becomes closed, the signal's reason as soon as `signal` aborts (the request leaves the
   *   queue at once), `INVALID_ARGUMENT` for a bad `request` or `signal`.
   */
  async admit(
    request?: SelectRequest,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<WorkerLease | undefined> {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the router is closed');
    const signal = options?.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal))
      fail('signal', 'an AbortSignal', signal);
    const req = readRequest(request);
    const gate = this.#gate;
    if (gate === undefined) return this.#select(req);
    const scope = this.#calls.open(signal);
    try {
      const waited = gate.wait(req, scope.signal);
      const ticket = waited instanceof Promise ? await waited : waited;
      try {
        return this.#select(req);
      } finally {
        ticket.release();
      }
    } finally {
      this.#calls.close(scope);
    }
  }

  #select(req: SelectRequest): WorkerLease | undefined {
    this.#counters.selects++;
    const worker = this.#picker.pick(req, this.#gate?.exclude(req, undefined), 1);
    if (worker === undefined) {
      this.#counters.noWorker++;
      const events = this.#events;
      if (events.listening.noWorker !== 0) events.noWorker(req, this.#picker.noWorkerReason(req));
      return undefined;
    }
    return this.#lease(worker);
  }

  /**
   * Fetches what the router's shared state (the `shared` option) knows about `request` — the
   * worker of its session, the workers that were sent its prefix — so that a `select` right
   * after routes on it. `execute` does this itself; call it before `select` when you route with
   * `select`. Waits at most the shared state's lookup deadline, never past `close()`, and not at
   * all while the store is degraded or when there is no shared state.
   *
   * @returns a promise that resolves (never rejects for a store fault).
   * @throws (rejects) {@link FleetRouteError} `INVALID_ARGUMENT` for a `request` that is not an
   *   object.
   */
  async prepare(request?: SelectRequest): Promise<void> {
    const shared = this.#o.shared;
    if (shared === undefined || this.#closed) return;
    const req = readRequest(request);
    const pending = shared.prepare(req, this.#picker.policyOf(req));
    if (pending === undefined) return;
    // `close()` fires the scope, which ends the wait at once.
    const scope = this.#calls.open(undefined);
    try {
      await scope.race(pending).catch(ignore);
    } finally {
      this.#calls.close(scope);
    }
  }

  /**
   * A prefill worker and a decode worker for a disaggregated request, each by its leg's policy,
   * with a lease on each (`undefined`, and no lease, when either leg has no available worker).
   */
  selectPair(request?: SelectRequest): LeasePair | undefined {
    if (this.#closed) return undefined;
    const req = readRequest(request);
    const registry = this.#o.registry;
    const pair = selectPair(registry.getPrefillWorkers(), registry.getDecodeWorkers(), req, {
      prefill: this.#o.prefillPolicy,
      decode: this.#o.decodePolicy,
    });
    if (pair === undefined) {
      this.#counters.noWorker++;
      const events = this.#events;
      if (events.listening.noWorker !== 0) {
        const known =
          registry.getPrefillWorkers().length > 0 && registry.getDecodeWorkers().length > 0;
        events.noWorker(req, known ? 'unavailable' : 'unknown_model');
      }
      return undefined;
    }
    return { prefill: this.#lease(pair.prefill), decode: this.#lease(pair.decode) };
  }

  /**
   * Sends a request with retries. A request with `leg: 'prefill'` or `'decode'` is one leg of a
   * disaggregated request: it is routed by `prefillPolicy` / `decodePolicy` among the model's
   * workers of that type (`registry.getByModel(model, leg)`), and otherwise like any request
   * (`select` does the same), but a prefill leg never waits for admission (it runs within its
   * request's admitted decode leg). Each attempt picks a worker not tried yet, calls
   * `send(worker, { signal, attempt })`, and releases the lease with the outcome: a thrown error
   * is a failed attempt; a returned value with a numeric `status` is an HTTP outcome, a failure
   * when the status is in the worker's breaker `failureStatuses`. A success is returned at once.
   * An error thrown with a `retryable: false` property is a failed attempt that ends the call at
   * once (for instance a stream that broke after its first bytes reached the client).
   * After any other failure, while attempts remain (`retry.maxAttempts`, or the model's override
   * from `registry.setModelRetryConfig`), `retry.shouldRetry` decides: a delay, reported to
   * `retry.onRetry` and then waited, before another worker is tried, or a stop. By default a
   * response with a readable `Retry-After` is retried at once on another worker — the worker that
   * sent it cools down for that long (its breaker's `maxCooldownMs` at most) and no call is sent
   * to it meanwhile — and any other failure after exponential backoff with jitter
   * (`defaultShouldRetry`). With admission on, the call first waits for admission (see
   * docs/admission.md): its first attempt starts once a worker of its model has room and its turn
   * has come.
   *
   * @returns the first successful result; when every attempt failed, the last response that had
   *   a status.
   * @throws the last error when no attempt returned a status; {@link FleetRouteError} `NO_WORKER`
   *   when no worker was available at all, with its `reason`: `unknown_model` (no registered
   *   worker serves the model) or `unavailable` (none of them is available now); the signal's
   *   reason as soon as `signal` aborts (a wait on the shared state's lookup ends, the backoff is
   *   cancelled; a `send` that ignores its signal is abandoned and its late outcome ignored);
   *   `CLOSED` as soon as the router closes; `SATURATED` when admission turns the call away
   *   (its `reason` and `retryAfterMs`); `INVALID_ARGUMENT` for a `request` that is not an
   *   object, a `send` that is not a function or a `signal` that is not an `AbortSignal`.
   */
  async execute<T>(
    request: SelectRequest,
    send: (worker: Worker, context: AttemptContext) => Promise<T>,
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<T> {
    if (this.#closed) throw new FleetRouteError('CLOSED', 'the router is closed');
    if (typeof send !== 'function') fail('send', 'a function', send);
    const signal = options?.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal))
      fail('signal', 'an AbortSignal', signal);
    const req = readRequest(request);
    this.#counters.executions++;
    const scope = this.#calls.open(signal);
    let admitted: { release(): void } | undefined;
    try {
      const shared = this.#o.shared;
      if (shared !== undefined) {
        const pending = shared.prepare(req, this.#picker.policyOf(req));
        // The caller's abort and `close()` fire the scope, which ends the wait at once; the
        // call then ends as either ends it (the loop throws the abort's reason).
        if (pending !== undefined) await scope.race(pending).catch(ignore);
        if (this.#closed) throw new FleetRouteError('CLOSED', 'the router is closed');
      }
      // Released by the loop once its first attempt holds a lease, or below.
      // No admission, or room now: no wait, the first attempt starts in this same turn.
      // A prefill leg runs inside its admitted decode leg: waiting again could deadlock.
      const waited = req.leg === 'prefill' ? undefined : this.#gate?.wait(req, scope.signal);
      admitted = waited instanceof Promise ? await waited : waited;
      const config = this.#retryConfigs.of(req);
      const call = { request: req, send, config, signal: scope.signal, admitted };
      const loop = new RetryLoop(call, this.#retryHost);
      if (this.#events.listening.executed === 0) return await loop.run();
      return await this.#events.execution(req, loop, signal, () => this.#closed);
    } finally {
      admitted?.release();
      this.#calls.close(scope);
    }
  }

  /**
   * Runs one load-polling round now; resolves when its reports are delivered (at once when
   * polling is off), or when the router closes. Keeps the process alive while it runs (the polls'
   * deadlines are background timers that would not).
   */
  async pollLoads(): Promise<void> {
    if (this.#loads !== undefined) await this.#keepAlive.during(this.#loads.poll());
  }

  /** Counters, per-worker breaker states and cooldowns, health and polling figures. O(n). */
  stats(): RouterStats {
    const parts = {
      leakedLeases: this.#leaks?.count ?? 0,
      health: this.#health?.stats,
      loads: this.#loads?.stats,
      models: this.#discovery?.stats,
      admission: this.#gate?.stats(),
    };
    return routerStats(this.#counters, parts, this.#o.registry);
  }

  /**
   * Stops everything: health timers, polling, probes, polls and model discoveries in flight
   * (aborted; one that ignores its signal is abandoned), in-flight `execute` calls (rejected
   * with `CLOSED`), pending `ready()` calls (rejected with `CLOSED`), pending `pollLoads()` calls
   * (resolved), the registry subscription, breaker observers, and every policy's `close()`;
   * then the shared state (`shared`), which writes what it has queued and withdraws this
   * router's loads from the store, waiting at most `loads.timeoutMs` for each. Idempotent;
   * resolves without waiting for transports that never settle.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // First, so no circuitChanged event is emitted from here on (an abort listener below may
    // run user code that moves a breaker).
    this.#breakers.close();
    this.#gate?.close();
    this.#calls.abortAll(new FleetRouteError('CLOSED', 'the router is closed'));
    this.#o.registry.off('event', this.#onEvent);
    this.#health?.close();
    this.#loads?.close();
    this.#discovery?.close();
    this.#readiness.close();
    registryInternals.releaseBreakerDefaults(this.#o.registry, this);
    // Before the policies: its last writes read their state (manual's sessions).
    if (this.#o.shared !== undefined && this.#started) await this.#o.shared.close();
    for (const policy of this.#picker.all()) policy.close?.();
    this.#events.close();
    await Promise.resolve();
  }

  #lease(worker: Worker): WorkerLease {
    const lease = worker.acquire();
    this.#picker.charge(lease);
    this.#leaks?.watch(lease);
    return lease;
  }

  #deliverLoads(reports: ReadonlyMap<string, LoadReport>, round: PollRound): void {
    this.#restarts.observe(reports);
    for (const policy of this.#picker.all()) {
      try {
        policy.updateLoads?.(reports);
      } catch {
        // A policy that throws on reports must not stop the others or the loop.
      }
    }
    this.#events.loadsPolled(reports, round);
    this.#gate?.updateLoads(reports);
  }

  #handle(event: WorkerEvent): void {
    switch (event.type) {
      case 'registered':
        this.#adopt(event.worker);
        this.#gate?.wake();
        break;
      case 'replaced':
        this.#adopt(event.new);
        this.#gate?.wake();
        break;
      case 'removed':
        this.#gate?.forget(event.worker.url);
        this.#breakers.unwatch(event.worker);
        this.#health?.untrack(event.workerId);
        this.#discovery?.forget(event.workerId);
        this.#restarts.forget(event.worker.url);
        for (const policy of this.#picker.all()) policy.removeWorker?.(event.worker.url);
        break;
      case 'statusChanged':
        this.#health?.statusChanged(event.worker);
        this.#discovery?.consider(event.worker);
        this.#events.statusChanged(event.workerId, event.worker, event.from, event.to);
        this.#gate?.wake();
        if (
          event.from === 'not_ready' &&
          event.to === 'ready' &&
          this.#health?.cameBack(event.workerId)
        )
          this.#restarts.cameBack(event.worker);
        break;
    }
    this.#readiness.check();
  }

  /** Observes the worker's breaker, starts probing it (now), and asks for its models if due. */
  #adopt(worker: Worker): void {
    this.#breakers.watch(worker);
    this.#health?.track(worker);
    this.#discovery?.consider(worker);
  }
}

/** Swallows the rejection of a wait the caller's abort or `close()` ended: what follows handles it. */
const ignore = (): void => {};
