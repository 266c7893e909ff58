/**
 * The entry of a worker thread of `comparePolicies`: builds the workload again from its recipe,
 * then runs the jobs the main thread posts, one at a time, posting progress and the outcome.
 *
 * @module
 * @internal
 */
import { parentPort, workerData } from 'node:worker_threads';
import {
  fingerprintOf,
  type JobMessage,
  postError,
  runPlan,
  type StopMessage,
  type WorkerMessage,
  type WorkerSetup,
} from './compare-job.js';
import type { Workload } from './workload.js';
import { rebuildWorkload } from './workloads/rebuild.js';

const port = parentPort;
if (port !== null) {
  const setup = workerData as WorkerSetup;
  const post = (message: WorkerMessage): void => port.postMessage(message);
  let workload: Workload | undefined;
  try {
    workload = await rebuildWorkload(setup.recipe);
    if (fingerprintOf(workload) !== setup.fingerprint) {
      post({ type: 'unusable', reason: 'the workload built again differs' });
      workload = undefined;
    }
  } catch (error) {
    post({ type: 'unusable', reason: postError(error).message });
  }
  if (workload !== undefined) {
    const rebuilt = workload;
    port.on('message', (message: JobMessage | StopMessage) => {
      if ('stop' in message) {
        port.close();
        return;
      }
      const { job } = message;
      const onProgress = message.progress
        ? (completed: number, total: number) => post({ type: 'progress', job, completed, total })
        : undefined;
      runPlan({ ...message.plan, workload: rebuilt, onProgress }, message.oracle).then(
        (run) => post({ type: 'result', job, run }),
        (error: unknown) => post({ type: 'error', job, error: postError(error) }),
      );
    });
    post({ type: 'ready' });
  }
}
