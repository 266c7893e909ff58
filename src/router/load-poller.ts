/**
 * Load polling: every interval, asks each ready worker for its load through the transport and
 * pushes the reports to the policies.
 *
 * @module
 * @internal
 */
import { AbortScopes, type ScopeTimeout } from '../core/abort.js';
import { backgroundTimeout, callWithDeadline } from '../core/bounded-wait.js';
import type { WorkerRegistry } from '../registry/worker-registry.js';
import type { Transport } from '../transport/transport.js';
import type { LoadReport } from '../workers/load-report.js';
import type { ResolvedLoadPollingConfig } from './router-options.js';
import { TaskLimiter } from './task-limiter.js';

/** @internal Counters for the router's stats. */
export interface LoadPollerStats {
  rounds: number;
  polls: number;
  reports: number;
  failures: number;
}

/**
 * @internal One round per `intervalMs` over the ready workers (at most `maxInFlight` polls at
 * once, each bounded by `timeoutMs`). A round's reports go to every policy in one
 * `updateLoads` call; workers that did not answer are simply absent, and policies drop reports
 * older than `staleAfterMs`, falling back to in-flight counts. A round that is still running when
 * the next is due is not overlapped: the next starts when it ends.
 */
/** @internal What a round tells besides its reports. */
export interface PollRound {
  /** Ready workers polled. */
  readonly polled: number;
  readonly durationMs: number;
  /** Ready workers whose last report is older than `staleAfterMs`. */
  readonly stale: number;
  /** Age of the oldest last report among the ready workers (0: all reported now). */
  readonly oldestReportAgeMs: number;
}

export class LoadPoller {
  readonly #registry: WorkerRegistry;
  readonly #loads: NonNullable<Transport['loads']>;
  readonly #config: ResolvedLoadPollingConfig;
  /** Hands a round's reports on, with how many workers were polled and how long it took. */
  readonly #deliver: (reports: ReadonlyMap<string, LoadReport>, round: PollRound) => void;
  /** Worker URL → when its last report arrived (`performance.now`), for the ready workers. */
  #reportedAt = new Map<string, number>();
  readonly #limiter: TaskLimiter;
  /** The polls in flight, aborted by `close()`. */
  readonly #polls = new AbortScopes();
  readonly #timeout: ScopeTimeout;
  readonly stats: LoadPollerStats = { rounds: 0, polls: 0, reports: 0, failures: 0 };
  #timer: ReturnType<typeof setTimeout> | undefined;
  #running = false;
  #closed = false;

  constructor(
    registry: WorkerRegistry,
    loads: NonNullable<Transport['loads']>,
    config: ResolvedLoadPollingConfig,
    maxInFlight: number,
    deliver: (reports: ReadonlyMap<string, LoadReport>, round: PollRound) => void,
  ) {
    this.#registry = registry;
    this.#loads = loads;
    this.#config = config;
    this.#timeout = backgroundTimeout(config.timeoutMs);
    this.#limiter = new TaskLimiter(maxInFlight);
    this.#deliver = deliver;
  }

  /** Starts the rounds (the first one now). */
  start(): void {
    if (!this.#closed && this.#timer === undefined && !this.#running) this.#schedule(0);
  }

  /**
   * Runs one round now and resolves when its reports are delivered — or, after `close()`, as soon
   * as its polls in flight are aborted and the waiting ones dropped (nothing is delivered then).
   */
  async poll(): Promise<void> {
    if (this.#closed) return;
    this.#running = true;
    this.stats.rounds++;
    const started = performance.now();
    const reports = new Map<string, LoadReport>();
    const ready = this.#registry.getAll().filter((w) => w.status === 'ready');
    await Promise.all(
      ready.map(
        (worker) =>
          new Promise<void>((resolve) => {
            // A poll still waiting for a slot when the router closes is dropped, and settles.
            this.#limiter.run(async () => {
              const report = await this.#pollOne(worker);
              if (report !== undefined) reports.set(worker.url, report);
              resolve();
            }, resolve);
          }),
      ),
    );
    this.#running = false;
    if (this.#closed) return;
    this.stats.reports += reports.size;
    // Freshness: how long since each ready worker last reported (a worker never heard from counts
    // from its first round); only the ready workers are remembered.
    const now = performance.now();
    const seen = new Map<string, number>();
    let stale = 0;
    let oldest = 0;
    for (const worker of ready) {
      const at = reports.has(worker.url) ? now : (this.#reportedAt.get(worker.url) ?? started);
      seen.set(worker.url, at);
      const age = now - at;
      if (age > oldest) oldest = age;
      if (age > this.#config.staleAfterMs) stale++;
    }
    this.#reportedAt = seen;
    this.#deliver(reports, {
      polled: ready.length,
      durationMs: now - started,
      stale,
      oldestReportAgeMs: oldest,
    });
  }

  /** Stops the rounds and aborts every poll in flight. */
  close(): void {
    this.#closed = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#polls.abortAll();
    this.#limiter.clear();
  }

  #schedule(delay: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      void this.poll().then(() => {
        if (!this.#closed) this.#schedule(this.#config.intervalMs);
      });
    }, delay);
    this.#timer.unref?.();
  }

  /** One worker's report, or undefined (no answer in time, an error, nothing usable). */
  async #pollOne(
    worker: Parameters<NonNullable<Transport['loads']>>[0],
  ): Promise<LoadReport | undefined> {
    if (this.#closed) return undefined;
    this.stats.polls++;
    const scope = this.#polls.open(undefined, this.#timeout);
    const value = await callWithDeadline((signal) => this.#loads(worker, signal), scope);
    this.#polls.close(scope);
    const report = typeof value === 'object' && value !== null ? value : undefined;
    if (report === undefined) this.stats.failures++;
    return report;
  }
}
