/**
 * The workers a `DnsDiscovery` registered itself, and the pure part of keeping them in step
 * with an answer: which URLs to add, to bring back from draining, and to drain.
 *
 * @module
 * @internal
 */
import type { WorkerStatus } from '../workers/worker-spec.js';

/** @internal A worker the discovery registered: its id, and whether (since when) it drains. */
export interface OwnedWorker {
  /** The registry id it was registered under: a worker at the URL with another id is not ours. */
  readonly id: string;
  draining: boolean;
  /** When the drain began (the discovery's clock), while draining. */
  drainedAt: number;
  /** Its status when the drain began, restored when its address comes back. */
  previous: WorkerStatus;
}

/** @internal What an answer asks of the owned workers. */
export interface AnswerPlan {
  /** URLs of the answer the discovery does not own: to register (unless another holds them). */
  readonly add: readonly string[];
  /** Owned, draining URLs back in the answer. */
  readonly revive: readonly string[];
  /** Owned URLs, not draining, absent from the answer. */
  readonly drain: readonly string[];
}

/**
 * @internal The plan for a non-empty answer `urls` over the owned workers. Pure; O(owned +
 * answer).
 */
export function planAnswer(
  owned: ReadonlyMap<string, Pick<OwnedWorker, 'draining'>>,
  urls: readonly string[],
): AnswerPlan {
  const add: string[] = [];
  const revive: string[] = [];
  const drain: string[] = [];
  const answer = new Set(urls);
  for (const url of answer) {
    const mine = owned.get(url);
    if (mine === undefined) add.push(url);
    else if (mine.draining) revive.push(url);
  }
  for (const [url, mine] of owned) if (!mine.draining && !answer.has(url)) drain.push(url);
  return { add, revive, drain };
}

/**
 * @internal The draining URLs to remove now: those past `drainMs`, those with nothing in flight
 * (`load(url)` is 0), and the oldest beyond `maxDraining`. Pure but for `load`; O(draining log
 * draining) when over `maxDraining`, else O(draining).
 */
export function dueForRemoval(
  owned: ReadonlyMap<string, Pick<OwnedWorker, 'draining' | 'drainedAt'>>,
  now: number,
  drainMs: number,
  maxDraining: number,
  load: (url: string) => number,
): string[] {
  const due: string[] = [];
  const waiting: [string, number][] = [];
  for (const [url, mine] of owned) {
    if (!mine.draining) continue;
    if (now - mine.drainedAt >= drainMs || load(url) === 0) due.push(url);
    else waiting.push([url, mine.drainedAt]);
  }
  if (waiting.length > maxDraining) {
    waiting.sort((a, b) => a[1] - b[1]);
    for (const [url] of waiting.slice(0, waiting.length - maxDraining)) due.push(url);
  }
  return due;
}
