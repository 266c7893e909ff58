/**
 * One simulation of a comparison — a policy's run or the oracle's — as it is run in this thread
 * or described to a worker thread, and how its errors cross threads.
 *
 * @module
 * @internal
 */
import { FleetRouteError, type FleetRouteErrorCode } from '../core/errors.js';
import { simulateOracle } from './oracle.js';
import type { PolicyRun } from './result.js';
import { simulateResolved } from './simulation.js';
import type { ResolvedSimulationOptions } from './simulation-options.js';
import type { Workload, WorkloadRecipe } from './workload.js';

/** @internal One run of a comparison: the name it reports progress under, and its options. */
export interface CompareJob {
  /** The run's label (the policy, or a variant of it: `cache_aware+events`), or `'greedy-oracle'`. */
  readonly name: string;
  /** The oracle's run (`plan.policy` is then ignored). */
  readonly oracle: boolean;
  /** Resolved options, the workload and the forwarding `onProgress` included. */
  readonly plan: ResolvedSimulationOptions;
}

/** @internal A plan without what cannot cross threads: the workload and the progress callback. */
export type PlanData = Omit<ResolvedSimulationOptions, 'workload' | 'onProgress'>;

/** @internal What a worker thread is started with. */
export interface WorkerSetup {
  readonly recipe: WorkloadRecipe;
  /** The workload the recipe must give again, or the worker refuses to serve. */
  readonly fingerprint: string;
}

/** @internal The main thread's messages: run job number `job`. */
export interface JobMessage {
  readonly job: number;
  readonly oracle: boolean;
  readonly plan: PlanData;
  /** Whether to post progress messages. */
  readonly progress: boolean;
}

/**
 * @internal Tells an idle worker thread to stop: it closes its port and exits by itself (a
 * `terminate()` of a thread V8 may still be working in can abort the process on Node 20).
 */
export interface StopMessage {
  readonly stop: true;
}

/** @internal An error, as posted from a worker thread. */
export interface PostedError {
  readonly name: string;
  readonly message: string;
  /** Set for a {@link FleetRouteError}. */
  readonly code?: FleetRouteErrorCode;
}

/** @internal A worker thread's messages. */
export type WorkerMessage =
  | { readonly type: 'ready' }
  | { readonly type: 'unusable'; readonly reason: string }
  | {
      readonly type: 'progress';
      readonly job: number;
      readonly completed: number;
      readonly total: number;
    }
  | { readonly type: 'result'; readonly job: number; readonly run: PolicyRun }
  | { readonly type: 'error'; readonly job: number; readonly error: PostedError };

/**
 * @internal Runs `plan`: `simulateResolved`, or the oracle's run.
 * @throws what the run throws.
 */
export function runPlan(plan: ResolvedSimulationOptions, oracle: boolean): Promise<PolicyRun> {
  return oracle ? simulateOracle(plan) : simulateResolved(plan);
}

/** @internal `plan` without its workload and progress callback. O(1). */
export function planData(plan: ResolvedSimulationOptions): PlanData {
  const { workload: _workload, onProgress: _onProgress, ...data } = plan;
  return data;
}

/** @internal What identifies a workload well enough to notice a rebuilt one differs. O(1). */
export function fingerprintOf(workload: Workload): string {
  return JSON.stringify([
    workload.name,
    workload.description,
    workload.requests.length,
    workload.parameters,
  ]);
}

/** @internal `error` as a worker thread posts it. */
export function postError(error: unknown): PostedError {
  if (FleetRouteError.is(error)) {
    return { name: error.name, message: error.message, code: error.code };
  }
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: 'Error', message: String(error) };
}

/** @internal The error a worker thread posted: the same `FleetRouteError` (code and message). */
export function revivedError(posted: PostedError): Error {
  if (posted.code !== undefined) return new FleetRouteError(posted.code, posted.message);
  const error = new Error(posted.message);
  error.name = posted.name;
  return error;
}
