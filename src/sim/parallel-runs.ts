/**
 * `runJobs`: the runs of one comparison, in a pool of worker threads when the workload can be
 * built again there, else one after another in this thread.
 *
 * @module
 * @internal
 */
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import {
  type CompareJob,
  fingerprintOf,
  type JobMessage,
  planData,
  revivedError,
  runPlan,
  type StopMessage,
  type WorkerMessage,
  type WorkerSetup,
} from './compare-job.js';
import type { PolicyRun } from './result.js';
import { recipeOf, type Workload, type WorkloadRecipe } from './workload.js';

/** @internal The runs of {@link runJobs}, in job order, and how many worker threads ran some. */
export interface JobRuns {
  readonly runs: PolicyRun[];
  /** Worker threads that started (built the workload); 0 when every run ran in this thread. */
  readonly threads: number;
}

/** The worker entry: a module, or (from the sources) a script that registers `tsx` first. */
interface WorkerEntry {
  readonly source: URL | string;
  readonly eval: boolean;
}

/**
 * @internal Runs `jobs` and returns their runs in job order. With `threads` > 1, a workload that
 * has a recipe and plans whose policy configuration is plain data (no functions, no class
 * instances), the jobs go to a pool of `min(jobs, threads)` worker threads, each taking the
 * next job when done; otherwise, and when no worker thread starts, they run here in order.
 * Either way the runs are the same (but for `routingMicrosPerRequest`, wall-clock time).
 *
 * `onProgress(job, completed, total)` receives every run's progress (a worker's by message).
 *
 * @throws the first error a run throws (a worker's `FleetRouteError` comes back with its code
 *   and message) or `onProgress` throws, as is; the other workers are stopped.
 * Cost: per worker, one rebuild of the workload; per run, its plan and result are copied once.
 */
export async function runJobs(
  workload: Workload,
  jobs: readonly CompareJob[],
  threads: number,
  onProgress: ((job: number, completed: number, total: number) => void) | undefined,
): Promise<JobRuns> {
  const recipe = recipeOf(workload);
  const pool = Math.min(jobs.length, threads);
  const entry = pool > 1 && recipe !== undefined ? workerEntry() : undefined;
  if (entry === undefined || !jobs.every((job) => isPlainData(job.plan.policyConfig))) {
    return { runs: await runHere(jobs, 0, []), threads: 0 };
  }
  const setup: WorkerSetup = {
    recipe: recipe as WorkloadRecipe,
    fingerprint: fingerprintOf(workload),
  };
  return new WorkerPool(jobs, entry, setup, onProgress).run(pool);
}

/** Runs `jobs[from…]` in this thread, in order, into `runs`. */
async function runHere(
  jobs: readonly CompareJob[],
  from: number,
  runs: PolicyRun[],
): Promise<PolicyRun[]> {
  for (let i = from; i < jobs.length; i++) runs[i] = await runPlan(jobs[i]!.plan, jobs[i]!.oracle);
  return runs;
}

/**
 * The worker entry next to this module: `compare-worker.js` next to the bundle (the ESM and CJS
 * bundles and the command share it), or, from the sources (development, tests),
 * `compare-worker.ts` imported through `tsx`'s ESM API, which a worker thread's own loader does
 * not know; `undefined` when neither can be located.
 */
function workerEntry(): WorkerEntry | undefined {
  try {
    const here =
      (import.meta as { url?: string }).url ??
      (typeof __filename === 'string' ? pathToFileURL(__filename).href : undefined);
    if (here === undefined) return undefined;
    if (!/\.[cm]?ts$/.test(new URL(here).pathname)) {
      return { source: new URL('./compare-worker.js', here), eval: false };
    }
    const require = createRequire(here);
    const manifest = require.resolve('tsx/package.json');
    const exported = (require(manifest) as TsxManifest).exports['./esm/api'].import.default;
    const api = new URL(exported, pathToFileURL(manifest)).href;
    const entry = new URL('./compare-worker.ts', here).href;
    const script =
      `import(${JSON.stringify(api)})` +
      `.then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`;
    return { source: script, eval: true };
  } catch {
    return undefined;
  }
}

/** The part of `tsx`'s package.json that locates its ESM API. */
interface TsxManifest {
  readonly exports: { readonly './esm/api': { readonly import: { readonly default: string } } };
}

/** Whether `value` is made of primitives, arrays and plain objects only (posts as is). */
function isPlainData(value: unknown, depth = 0): boolean {
  if (depth > 64) return false;
  if (value === null) return true;
  const type = typeof value;
  if (type === 'function' || type === 'symbol') return false;
  if (type !== 'object') return true;
  if (Array.isArray(value)) return value.every((v) => isPlainData(v, depth + 1));
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) return false;
  return Object.values(value as object).every((v) => isPlainData(v, depth + 1));
}

/**
 * The pool of one {@link runJobs} call. A worker that fails to start (its module does not load,
 * or the workload cannot be built again there) drops out; when none is left, the remaining
 * jobs run in this thread.
 */
class WorkerPool {
  readonly #jobs: readonly CompareJob[];
  readonly #entry: WorkerEntry;
  readonly #setup: WorkerSetup;
  readonly #onProgress: ((job: number, completed: number, total: number) => void) | undefined;
  readonly #runs: PolicyRun[] = [];
  readonly #workers = new Set<Worker>();
  /** Workers running a job now. */
  readonly #busy = new Set<Worker>();
  #next = 0;
  #done = 0;
  #live = 0;
  #settled = false;
  #resolve: (runs: JobRuns) => void = () => undefined;
  /** Workers that became ready. */
  #served = 0;
  #reject: (error: unknown) => void = () => undefined;

  constructor(
    jobs: readonly CompareJob[],
    entry: WorkerEntry,
    setup: WorkerSetup,
    onProgress: ((job: number, completed: number, total: number) => void) | undefined,
  ) {
    this.#jobs = jobs;
    this.#entry = entry;
    this.#setup = setup;
    this.#onProgress = onProgress;
  }

  /** Starts `size` workers and settles once every job has run or one has failed. */
  run(size: number): Promise<JobRuns> {
    const settled = new Promise<JobRuns>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
    for (let i = 0; i < size; i++) this.#start();
    if (this.#live === 0) this.#runRest();
    return settled;
  }

  #start(): void {
    let worker: Worker;
    try {
      worker = new Worker(this.#entry.source, { eval: this.#entry.eval, workerData: this.#setup });
    } catch {
      return;
    }
    this.#live++;
    this.#workers.add(worker);
    let ready = false;
    let current = -1;
    let gone = false;
    const drop = (): void => {
      if (gone) return;
      gone = true;
      this.#live--;
      this.#workers.delete(worker);
      this.#busy.delete(worker);
      // Idle (no job given, or its result in): let it exit by itself; else stop it now.
      if (current < 0) stop(worker);
      else void worker.terminate();
      if (this.#live === 0 && !this.#settled && this.#next < this.#jobs.length) this.#runRest();
    };
    const give = (): void => {
      if (this.#settled) return;
      if (this.#next >= this.#jobs.length) {
        drop();
        return;
      }
      current = this.#next++;
      this.#busy.add(worker);
      const job = this.#jobs[current]!;
      const message: JobMessage = {
        job: current,
        oracle: job.oracle,
        plan: planData(job.plan),
        progress: this.#onProgress !== undefined,
      };
      worker.postMessage(message);
    };
    worker.on('message', (message: WorkerMessage) => {
      if (this.#settled) return;
      switch (message.type) {
        case 'ready':
          ready = true;
          this.#served++;
          give();
          break;
        case 'unusable':
          drop();
          break;
        case 'progress':
          try {
            this.#onProgress?.(message.job, message.completed, message.total);
          } catch (error) {
            this.#fail(error);
          }
          break;
        case 'result':
          this.#runs[message.job] = message.run;
          current = -1;
          this.#busy.delete(worker);
          if (++this.#done === this.#jobs.length) this.#finish();
          else give();
          break;
        case 'error':
          this.#fail(revivedError(message.error));
          break;
      }
    });
    worker.on('error', (error) => {
      if (ready) this.#fail(error);
      else drop();
    });
    worker.on('exit', () => {
      if (!gone && ready && current >= 0 && !this.#settled) {
        this.#fail(new Error(`a simulation worker thread exited during job ${current}`));
      }
      drop();
    });
  }

  /** Runs every job not yet given out in this thread, then settles. */
  #runRest(): void {
    const from = this.#next;
    this.#next = this.#jobs.length;
    runHere(this.#jobs, from, this.#runs).then(
      () => {
        this.#done += this.#jobs.length - from;
        if (this.#done === this.#jobs.length) this.#finish();
      },
      (error: unknown) => this.#fail(error),
    );
  }

  #finish(): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#stopAll();
    this.#resolve({ runs: this.#runs, threads: this.#served });
  }

  #fail(error: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#stopAll();
    this.#reject(error);
  }

  /** Stops every worker: idle ones by message, busy ones (a failed comparison) at once. */
  #stopAll(): void {
    for (const worker of this.#workers) {
      if (this.#busy.has(worker)) void worker.terminate();
      else stop(worker);
    }
    this.#workers.clear();
  }
}

/** Asks an idle worker thread to exit by itself (see `StopMessage`). */
function stop(worker: Worker): void {
  const message: StopMessage = { stop: true };
  try {
    worker.postMessage(message);
  } catch {
    // Already gone.
  }
}
