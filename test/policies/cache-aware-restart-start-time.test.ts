/**
 * `cache_aware.workerRestarted(url, { detectedBy: 'start_time' })`: the restart shows in the
 * first load report with the engine's new start time, up to a poll after it happened, while the
 * worker kept taking requests. The policy forgets what it learned before the worker's previous
 * report (the last one with the old start time) and keeps what it sent the worker since — the
 * restarted engine may hold it — whichever order the router tells it and delivers that round in.
 * The engines' block index is left alone: a KV-event feed clears the worker at the restart itself.
 */
import { describe, expect, it } from 'vitest';
import {
  blockHashes,
  type CacheAwarePolicy,
  createPolicy,
  type LoadReport,
  type Worker,
  WorkerRegistry,
  type WorkerRestart,
} from '../../src/index.js';
import { cacheAwareTreeOf } from '../../src/policies/cache-aware.js';
import { essay } from '../support/fixtures.js';

const START_TIME: WorkerRestart = { detectedBy: 'start_time' };
const HEALTH: WorkerRestart = { detectedBy: 'health' };
const OLD = 1_764_000_000_000;
const NEW = 1_764_000_090_000;

async function fleet(n: number) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < n; i++)
    await registry.register({ url: `http://gpu${i}:8000`, models: ['m'] });
  return registry.getByModel('m');
}

/** A round of reports: `a` with the start time given, every other worker with `OLD`. */
function round(workers: readonly Worker[], a: Worker, startedAt: number) {
  return new Map<string, LoadReport>(
    workers.map((w) => [w.url, { runningRequests: 0, startedAt: w === a ? startedAt : OLD }]),
  );
}

/** Units of `text` the text tree matches for `worker` (0 when the match does not name it). */
function heldBy(policy: CacheAwarePolicy, text: string, worker: Worker): number {
  const tree = cacheAwareTreeOf(policy, 'm', 'text');
  if (tree === undefined) return 0;
  const match = tree.match(text);
  return tree.holdersOf(match).includes(worker.url) ? match.matched : 0;
}

const system = essay(9, 300);
const beforeFirst = essay(1); // sent before the first report
const beforeLast = system + essay(2, 100); // between the first report and the last old one
const since = system + essay(3, 100); // after the last report with the old start time

/** Prompts sent to `a` around two rounds with the old start time, one to `b`. */
async function routedAroundReports() {
  const workers = await fleet(2);
  const [a, b] = workers as [Worker, Worker];
  const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
  const onB = essay(4);
  policy.select([a], { model: 'm', text: beforeFirst });
  policy.select([b], { model: 'm', text: onB });
  policy.updateLoads(round(workers, a, OLD));
  policy.select([a], { model: 'm', text: beforeLast });
  policy.updateLoads(round(workers, a, OLD)); // the last round with the old start time
  policy.select([a], { model: 'm', text: since });
  expect(heldBy(policy, beforeFirst, a)).toBe(400);
  expect(heldBy(policy, beforeLast, a)).toBe(400);
  return { workers, a, b, policy, onB };
}

describe('cache_aware: an engine restart seen by its start time (approximate trees)', () => {
  it.each([
    ['told before the round is delivered (as a Router does)', 'before'],
    ['told after the round is delivered', 'after'],
  ] as const)(
    'forgets what it sent the worker before its previous report, keeps what it sent since: %s',
    async (_name, order) => {
      // Arrange
      const { workers, a, b, policy, onB } = await routedAroundReports();

      // Act: the round showing the new start time.
      if (order === 'before') policy.workerRestarted(a.url, START_TIME);
      policy.updateLoads(round(workers, a, NEW));
      if (order === 'after') policy.workerRestarted(a.url, START_TIME);

      // Assert: the system prompt stays with what was sent since; the rest of before is gone.
      expect(heldBy(policy, beforeFirst, a)).toBe(0);
      expect(heldBy(policy, beforeLast, a)).toBe(system.length);
      expect(heldBy(policy, since, a)).toBe(400);
      expect(heldBy(policy, onB, b)).toBe(400);
      policy.select(workers, { model: 'm', text: since });
      expect(policy.explain()?.branch).toBe('cache_hit');
    },
  );

  it('the next start-time restart is measured from the round before its own', async () => {
    const { workers, a, policy } = await routedAroundReports();
    policy.workerRestarted(a.url, START_TIME);
    policy.updateLoads(round(workers, a, NEW));
    const later = essay(5);
    policy.select([a], { model: 'm', text: later });
    policy.updateLoads(round(workers, a, NEW)); // the last round with this start time
    const latest = essay(6);
    policy.select([a], { model: 'm', text: latest });

    policy.updateLoads(round(workers, a, NEW + 60_000));
    policy.workerRestarted(a.url, START_TIME);

    expect(heldBy(policy, since, a)).toBe(0);
    expect(heldBy(policy, later, a)).toBe(0);
    expect(heldBy(policy, latest, a)).toBe(400);
  });

  it('restarts in two rounds running, each told before its round: each from the round before', async () => {
    const { workers, a, policy } = await routedAroundReports();
    policy.workerRestarted(a.url, START_TIME);
    policy.updateLoads(round(workers, a, NEW));
    const between = essay(5);
    policy.select([a], { model: 'm', text: between });

    policy.workerRestarted(a.url, START_TIME);
    policy.updateLoads(round(workers, a, NEW + 60_000));

    expect(heldBy(policy, since, a)).toBe(0); // sent before the round that showed NEW
    expect(heldBy(policy, between, a)).toBe(400); // sent after it
  });

  it('a restart the health loop saw forgets what was sent since the previous report too', async () => {
    const { workers, a, b, policy, onB } = await routedAroundReports();

    policy.workerRestarted(a.url, HEALTH);
    policy.updateLoads(round(workers, a, NEW));

    expect(heldBy(policy, since, a)).toBe(0);
    expect(heldBy(policy, onB, b)).toBe(400);
  });

  it('before any load report, a start-time restart forgets everything in the trees', async () => {
    const workers = await fleet(2);
    const a = workers[0]!;
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    policy.select([a], { model: 'm', text: since });

    policy.workerRestarted(a.url, START_TIME);

    expect(heldBy(policy, since, a)).toBe(0);
  });

  it('a worker silent for more than 8 rounds is measured against the oldest round kept', async () => {
    const workers = await fleet(2);
    const [a, b] = workers as [Worker, Worker];
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    policy.select([a], { model: 'm', text: beforeFirst });
    policy.updateLoads(round(workers, a, OLD)); // a's last report: round 1
    policy.select([a], { model: 'm', text: beforeLast });
    const onlyB = new Map<string, LoadReport>([[b.url, { runningRequests: 0, startedAt: OLD }]]);
    for (let i = 0; i < 8; i++) policy.updateLoads(onlyB); // rounds 2 … 9
    policy.select([a], { model: 'm', text: since });

    policy.workerRestarted(a.url, START_TIME);
    policy.updateLoads(round(workers, a, NEW));

    // The oldest round kept is round 2: what was sent before it goes, round 1 or not.
    expect(heldBy(policy, beforeFirst, a)).toBe(0);
    expect(heldBy(policy, beforeLast, a)).toBe(system.length);
    expect(heldBy(policy, since, a)).toBe(400);
  });
});

describe('cache_aware: an engine restart seen by its start time (event mode)', () => {
  const prompt = Array.from({ length: 64 }, (_, i) => 500 + i); // 4 blocks of 16
  const other = blockHashes(prompt.map((t) => t + 7));

  it('leaves the engines’ block index alone: the KV-event feed owns it', async () => {
    const workers = await fleet(4);
    const a = workers[0]!;
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load' });
    policy.applyKvEvents(workers[3]!.url, [{ type: 'stored', model: 'm', hashes: other }]);
    policy.updateLoads(round(workers, a, OLD));
    // Reported since the restart (the feed cleared the worker at the restart itself).
    policy.applyKvEvents(a.url, [{ type: 'stored', model: 'm', hashes: blockHashes(prompt) }]);

    policy.workerRestarted(a.url, START_TIME);
    policy.updateLoads(round(workers, a, NEW));

    expect(policy.select(workers, { model: 'm', tokens: prompt })).toBe(a);
    expect(policy.explain()?.branch).toBe('event_overlap');
  });

  it('drops the placements of misses made before the previous report, keeps those made since', async () => {
    let now = 100;
    const workers = await fleet(4);
    const a = workers[0]!;
    const policy = createPolicy('cache_aware', { missPlacement: 'least_load', clock: () => now });
    policy.applyKvEvents(workers[3]!.url, [{ type: 'stored', model: 'm', hashes: other }]);
    const early = prompt.map((t) => t + 1_000);
    const late = prompt.map((t) => t + 2_000);
    expect(policy.select([a], { model: 'm', tokens: early })).toBe(a); // placed at 100
    now = 200;
    policy.updateLoads(round(workers, a, OLD));
    now = 300;
    expect(policy.select([a], { model: 'm', tokens: late })).toBe(a); // placed at 300

    now = 400;
    policy.workerRestarted(a.url, START_TIME);
    policy.updateLoads(round(workers, a, NEW));

    policy.select(workers, { model: 'm', tokens: early });
    expect(policy.explain()?.branch).toBe('cache_miss');
    expect(policy.select(workers, { model: 'm', tokens: late })).toBe(a);
    expect(policy.explain()?.branch).toBe('cache_hit');
  });
});
