/**
 * `cache_aware`'s cost model (`decideBy: 'ttft'`, the default): each candidate's predicted time
 * to first token — prefill work queued ahead plus the prompt's uncached tokens there, at the
 * worker's prefill speed — decides, on hand-built states.
 */
import { describe, expect, it } from 'vitest';
import {
  blockHashes,
  type CacheAwarePolicy,
  createPolicy,
  type Worker,
  type WorkerLease,
  WorkerRegistry,
} from '../../src/index.js';
import { chargePrefill } from '../../src/workers/worker.js';

const PAGE = 16;
/** A prompt of `pages` full pages, distinct per `seed`. */
const promptOf = (seed: number, pages: number) =>
  Array.from({ length: pages * PAGE }, (_, i) => 1_000 + seed * 100_000 + i);

async function fleet(n: number, prefix = 'w'): Promise<readonly Worker[]> {
  return fleetOf(Array.from({ length: n }, (_, i) => `http://${prefix}${i}:8000`));
}

/** A registry of `urls`, registered in that order: its candidate list. */
async function fleetOf(urls: readonly string[]): Promise<readonly Worker[]> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (const url of urls) await registry.register({ url, models: ['m'] });
  return registry.getByModel('m');
}

/** Engine events: `worker` holds the first `pages` pages of `tokens`. */
function holds(policy: CacheAwarePolicy, worker: Worker, tokens: number[], pages: number): void {
  policy.applyKvEvents(worker.url, [
    { type: 'stored', model: 'm', hashes: blockHashes(tokens).slice(0, pages) },
  ]);
}

/** `count` requests in flight on `worker`, awaiting their first token, charged `tokens` each. */
function queue(worker: Worker, count: number, tokens: number): WorkerLease[] {
  return Array.from({ length: count }, () => {
    const lease = worker.acquire();
    chargePrefill(lease, tokens, 0);
    return lease;
  });
}

const release = (leases: WorkerLease[]) => {
  for (const lease of leases) lease.release();
};

describe('cache_aware decideBy ttft: queue against recompute', () => {
  it('a holder with a long queue loses to an idle worker when recomputing is cheaper, and wins when it is not', async () => {
    // Arrange: 1 token per ms; worker 0 holds the whole 512-token prompt.
    const workers = await fleet(2);
    const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 1_000 });
    const tokens = promptOf(1, 32);
    holds(policy, workers[0]!, tokens, 32);
    holds(policy, workers[1]!, promptOf(9, 1), 1); // the model has event data on both

    // Act / Assert: 2,000 tokens queued on the holder (2 s) against 512 to recompute (0.5 s).
    const long = queue(workers[0]!, 2, 1_000);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[1]);
    expect(policy.explain()?.branch).toBe('holder_overloaded');
    release(long);

    // 200 queued (0.2 s) against 512 to recompute: the holder keeps it.
    const short = queue(workers[0]!, 2, 100);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[0]);
    expect(policy.explain()?.branch).toBe('event_overlap');
    release(short);
  });

  it('an idle worker takes a held prompt once the holder queue costs about as much as the prefill there (ranked at 0.9, no near-tie to the holder)', async () => {
    // Arrange: 1 token per ms; worker 0 holds the whole 512-token prompt, worker 1 is idle.
    const workers = await fleet(2);
    const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 1_000 });
    const tokens = promptOf(13, 32);
    holds(policy, workers[0]!, tokens, 32);
    holds(policy, workers[1]!, promptOf(14, 1), 1);

    // Act / Assert: 520 tokens queued on the holder (520 ms) against 512 to recompute on the
    // idle worker (ranked as 461, so the holder is no near-tie: 520 > 461 × 1.1): the idle one.
    const queued = queue(workers[0]!, 1, 520);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[1]);
    const why = policy.explain()!;
    expect(why.branch).toBe('holder_overloaded');
    expect(why.predicted?.winner.ttftMs).toBe(512); // the prediction, not the rank
    expect(why.predicted?.runnerUp?.ttftMs).toBe(520);
    // Not idle (more in flight than the fleet's idlest): a near-tie, so the holder keeps it.
    const busy = [...queue(workers[1]!, 1, 0), ...queue(workers[1]!, 1, 0)];
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[0]);
    release(busy);
    release(queued);
    // 500 queued on the holder: a near-tie with the idle worker's 461, the holder keeps it.
    const shorter = queue(workers[0]!, 1, 500);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[0]);
    release(shorter);
  });

  it('the same in tree mode: the tree credits the holder with the prompt it was sent', async () => {
    // Arrange
    const workers = await fleet(2);
    const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 1_000 });
    const tokens = promptOf(2, 32);
    const holder = policy.select(workers, { model: 'm', tokens })!;
    const other = workers.find((w) => w !== holder)!;

    // Act / Assert: 300 queued (0.3 s) against 512 to recompute, then 3,000 (3 s).
    const short = queue(holder, 1, 300);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(holder);
    expect(policy.explain()?.branch).toBe('cache_hit');
    release(short);
    const long = queue(holder, 3, 1_000);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(other);
    expect(policy.explain()?.branch).toBe('holder_overloaded');
    release(long);
  });

  it('a worker holding a shorter prefix gets partial credit (tree path, not only the deepest match)', async () => {
    // Arrange: worker A was sent the first 16 pages, worker B the whole 32; B is busy.
    const workers = await fleet(3);
    const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 1_000 });
    const tokens = promptOf(3, 32);
    const a = policy.select(workers, { model: 'm', tokens: tokens.slice(0, 16 * PAGE) })!;
    const aBusy = queue(a, 1, 100_000);
    const b = policy.select(workers, { model: 'm', tokens })!;
    release(aBusy);
    expect(b).not.toBe(a);
    const bBusy = queue(b, 1, 1_000); // 1 s ahead on B; 256 tokens to recompute on A

    // Act
    const chosen = policy.select(workers, { model: 'm', tokens });

    // Assert: A (256 uncached) beats the third, idle worker (512 uncached) and busy B.
    expect(chosen).toBe(a);
    expect(policy.explain()?.predicted?.winner.uncachedTokens).toBe(256);
    release(bBusy);
  });
});

describe('cache_aware decideBy ttft: speeds learned from first tokens', () => {
  it('heterogeneous speeds, learned from first tokens, change the choice', async () => {
    for (const fast of [0, 1]) {
      // Arrange: both workers hold the prompt; the prior says 10 tokens per ms for both.
      const workers = await fleet(2);
      let now = 0;
      const clock = () => now;
      const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 10_000, clock });
      const tokens = promptOf(4, 8);
      for (const w of workers) holds(policy, w, tokens, 8);
      // First tokens: worker `fast` prefills 1,000 tokens in 100 ms, the other in 400 ms.
      for (let round = 0; round < 60; round++) {
        const leases = workers.map((w) => {
          const lease = w.acquire();
          chargePrefill(lease, 1_000, 0, clock, 10);
          return lease;
        });
        now += 100;
        leases[fast]!.firstToken();
        now += 300;
        leases[1 - fast]!.firstToken();
        release(leases);
      }
      // The slow worker has less queued: 1,500 tokens against 2,500.
      const queued = [queue(workers[fast]!, 1, 2_500), queue(workers[1 - fast]!, 1, 1_500)];

      // Act
      const chosen = policy.select(workers, { model: 'm', tokens });

      // Assert: 2,500 at 10 per ms (250 ms) beats 1,500 at 2.5 per ms (600 ms).
      expect(chosen).toBe(workers[fast]);
      const why = policy.explain()!.predicted!;
      expect(why.winner.tokensPerSecond).toBeGreaterThan(why.runnerUp!.tokensPerSecond * 2);
      for (const leases of queued) release(leases);
    }
  });
});

describe('cache_aware decideBy ttft: near-ties', () => {
  it('go to the candidate holding the most of the prompt', async () => {
    // Arrange: 100 tokens per ms, so 32 uncached tokens cost 0.3 ms (within the 5 ms tolerance).
    const workers = await fleet(3);
    const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 100_000 });
    const tokens = promptOf(5, 4);
    holds(policy, workers[1]!, tokens, 2);
    holds(policy, workers[2]!, tokens, 4);
    // Worker 2 has 200 tokens queued (2 ms): still a near-tie with worker 1.
    const leases = queue(workers[2]!, 1, 200);

    // Act / Assert
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[2]);
    release(leases);
  });

  it('between equally busy workers go to the one whose queue started first (nearest its next first token)', async () => {
    for (const early of [0, 1]) {
      // Arrange: 10 tokens per ms; both workers hold half the prompt, and each has one request
      // of 1,000 tokens awaiting its first token, the `early` one's charged at 0 ms, the other's
      // at 50 ms; now is 80 ms.
      const workers = await fleet(2);
      let now = 0;
      const clock = () => now;
      const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 10_000, clock });
      const tokens = promptOf(20, 4);
      for (const w of workers) holds(policy, w, tokens, 2); // both hold the first 2 pages
      const charged = (worker: Worker) => {
        const lease = worker.acquire();
        chargePrefill(lease, 1_000, 0, clock, 10);
        return lease;
      };
      const leases = [charged(workers[early]!)];
      now = 50;
      leases.push(charged(workers[1 - early]!));
      now = 80;

      // Act: predicted (1,000 + 32) / 10 ms on either worker.
      const chosen = policy.select(workers, { model: 'm', tokens });

      // Assert: 200 tokens left on the early one against 700.
      expect(chosen).toBe(workers[early]);
      release(leases);
    }
  });

  it('between equal holders go by the prompt (the same worker every time; different prompts spread), and two instances with the same state agree, whatever the order of their candidates', async () => {
    // Arrange: two routers' policies over two registries of the same URLs; every worker holds
    // every prompt's first page; the second registry lists the workers in another order.
    const a = await fleet(8);
    const b = await fleetOf(Array.from({ length: 8 }, (_, i) => `http://w${(i * 5) % 8}:8000`));
    const pa = createPolicy('cache_aware');
    const pb = createPolicy('cache_aware');
    const prompts = Array.from({ length: 64 }, (_, i) => promptOf(100 + i, 4));
    for (const tokens of prompts) {
      for (let w = 0; w < 8; w++) {
        holds(pa, a[w]!, tokens, 1);
        holds(pb, b[w]!, tokens, 1);
      }
    }

    // Act
    const chosenA = prompts.map((tokens) => pa.select(a, { model: 'm', tokens })!.url);
    const again = prompts.map((tokens) => pa.select(a, { model: 'm', tokens })!.url);
    const chosenB = prompts.map((tokens) => pb.select(b, { model: 'm', tokens })!.url);

    // Assert
    expect(b.map((w) => w.url)).not.toEqual(a.map((w) => w.url));
    expect(again).toEqual(chosenA);
    expect(chosenB).toEqual(chosenA);
    expect(new Set(chosenA).size).toBeGreaterThanOrEqual(6);
  });
});

describe('cache_aware decideBy ttft: the hard guard', () => {
  it('a worker far past the fleet (64 more in flight than the idlest, and 1.5 times it) cannot win, however cheap', async () => {
    // Arrange: worker 0 holds the whole prompt, with 100 requests in flight, all decoding.
    const workers = await fleet(2);
    const policy = createPolicy('cache_aware');
    const tokens = promptOf(6, 64);
    holds(policy, workers[0]!, tokens, 64);
    holds(policy, workers[1]!, promptOf(7, 1), 1);
    const busy = Array.from({ length: 100 }, () => workers[0]!.acquire());
    for (const lease of busy) lease.firstToken();

    // Act / Assert
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[1]);
    // At the guard (64 more in flight, not past it) the holder keeps it.
    release(busy.slice(64));
    expect(policy.select(workers, { model: 'm', tokens })).toBe(workers[0]);
    release(busy);
  });
});

describe('cache_aware decideBy ttft: explain()', () => {
  it("gives the winner's and the runner-up's predicted figures", async () => {
    // Arrange
    const workers = await fleet(2);
    const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 2_000 });
    const tokens = promptOf(8, 10);
    holds(policy, workers[0]!, tokens, 6);
    holds(policy, workers[1]!, tokens, 2);
    const leases = queue(workers[0]!, 1, 40);

    // Act
    policy.select(workers, { model: 'm', tokens });

    // Assert: worker 0: (40 + 64) / 2 = 52 ms; worker 1: (0 + 128) / 2 = 64 ms.
    const why = policy.explain()!;
    expect(why.branch).toBe('event_overlap');
    expect(why.predicted).toEqual({
      winner: {
        url: workers[0]!.url,
        queuedTokens: 40,
        uncachedTokens: 64,
        tokensPerSecond: 2_000,
        ttftMs: 52,
      },
      runnerUp: {
        url: workers[1]!.url,
        queuedTokens: 0,
        uncachedTokens: 128,
        tokensPerSecond: 2_000,
        ttftMs: 64,
      },
    });
    release(leases);
  });
});

describe('cache_aware decideBy ttft: misses placed while their events are due', () => {
  it('draw the same prompt to their worker while it is not busier than recomputing elsewhere, and not after', async () => {
    // Arrange: event mode is on (another prompt's blocks are known); a new prompt is placed.
    const workers = await fleet(3);
    const policy = createPolicy('cache_aware', { prefillTokensPerSecond: 1_000 });
    holds(policy, workers[2]!, promptOf(11, 1), 1);
    const tokens = promptOf(12, 8);
    const placed = policy.select(workers, { model: 'm', tokens })!;

    // Act / Assert: idle, it keeps the prompt (its events are due) …
    expect(policy.select(workers, { model: 'm', tokens })).toBe(placed);
    expect(policy.explain()?.branch).toBe('cache_hit');
    // … with 10,000 tokens queued (10 s) against 128 to recompute elsewhere, it does not.
    const busy = queue(placed, 1, 10_000);
    expect(policy.select(workers, { model: 'm', tokens })).not.toBe(placed);
    release(busy);
  });
});

describe('cache_aware decideBy ttft: the holders of a tree match', () => {
  it("credits the worker that holds a prompt now, when another's tree id passed to it", async () => {
    // One candidate list throughout, so only the tree's ids change between selections.
    const workers = await fleet(4);
    const [a, , , d] = workers as [Worker, Worker, Worker, Worker];
    const policy = createPolicy('cache_aware');
    const tokens = promptOf(3, 16);
    const busyBut = (free: Worker) => workers.filter((w) => w !== free).map((w) => w.acquire());
    // b holds another prompt, so the tree outlives a's leaving it.
    const [, b] = workers as [Worker, Worker];
    let leases = busyBut(b);
    expect(policy.select(workers, { model: 'm', tokens: promptOf(4, 16) })).toBe(b);
    release(leases);
    // a takes the prompt (the others busy), then is chosen again as its holder.
    leases = busyBut(a);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(a);
    release(leases);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(a);
    // a leaves the tree; d takes the prompt and, with it, the tree id a had.
    policy.removeWorker(a.url);
    leases = busyBut(d);
    expect(policy.select(workers, { model: 'm', tokens })).toBe(d);
    release(leases);
    // Every worker equally idle: the holder, d, wins — not a, whose id d now has.
    expect(policy.select(workers, { model: 'm', tokens })).toBe(d);
    expect(policy.explain()?.branch).toBe('cache_hit');
  });
});
