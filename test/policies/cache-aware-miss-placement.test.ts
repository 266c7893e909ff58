/**
 * `cache_aware`'s `missPlacement: 'ring'`: a miss goes to the prompt's owner on the hash ring
 * (as `prefix_hash` places it), so routers with different histories put a new prefix on the
 * same worker; the walk passes over owners still busy prefilling.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type CacheAwarePolicy, createPolicy, type Worker } from '../../src/index.js';
import { essay, throwsCode } from '../support/fixtures.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const fleet = (n: number) => buildFleet(Array.from({ length: n }, () => ready));
const opened: CacheAwarePolicy[] = [];
function policy(missPlacement?: 'least_load' | 'ring'): CacheAwarePolicy {
  const p = createPolicy('cache_aware', missPlacement === undefined ? {} : { missPlacement });
  opened.push(p);
  return p;
}
afterEach(() => {
  for (const p of opened.splice(0)) p.close();
});

/** A prompt of its own per `i`: different from its first token on. */
function prompt(i: number): number[] {
  return Array.from({ length: 600 }, (_, t) => (i * 7_919 + t * 104_729) % 150_000);
}

describe('cache_aware: missPlacement ring', () => {
  it('routers with different histories send a new prompt to the same worker, the one prefix_hash picks', async () => {
    // Arrange: router A has routed 40 other prompts (its tree and pick counts differ from B's);
    // no lease is held, so loads are equal when the new prompts arrive. The registry's own
    // array: for any other list the miss goes to the least-loaded worker (see the option).
    const workers = (await fleet(8)).registry.getAll();
    const a = policy('ring');
    const b = policy('ring');
    for (let i = 1_000; i < 1_040; i++) a.select(workers, { tokens: prompt(i) });
    const reference = createPolicy('prefix_hash');

    // Act / Assert: for 30 new prompts, both routers agree, with prefix_hash's owner.
    let agreeing = 0;
    for (let i = 0; i < 30; i++) {
      const request = { tokens: prompt(i) };
      const fromA = a.select(workers, request);
      const fromB = b.select(workers, request);
      expect(fromA).toBe(fromB);
      expect(fromA).toBe(reference.select(workers, request));
      agreeing++;
    }
    expect(agreeing).toBe(30);
    expect(a.stats()).toMatchObject({ reasons: { cache_miss: 70 } });
  });

  it('with least_load placement, the same routers can disagree', async () => {
    const workers = (await fleet(8)).registry.getAll();
    const a = policy('least_load');
    const b = policy('least_load');
    // A's earlier picks moved its least-loaded choice: it counts processed picks per worker.
    for (let i = 1_000; i < 1_003; i++) a.select(workers, { tokens: prompt(i) });
    let differ = 0;
    for (let i = 0; i < 30; i++) {
      const request = { tokens: prompt(i) };
      if (a.select(workers, request) !== b.select(workers, request)) differ++;
    }
    expect(differ).toBeGreaterThan(0);
  });

  it('on a list the registry did not hand out, a miss goes to the least-loaded worker', async () => {
    const { workers } = await fleet(8);
    workers[0]!.acquire();
    const picks = new Set(
      Array.from({ length: 7 }, (_, i) => policy('ring').select(workers, { tokens: prompt(i) })),
    );
    expect(picks.has(workers[0])).toBe(false);
  });

  it('passes over an owner with a request awaiting its first token, and comes back once it is past it', async () => {
    // Arrange: every worker decodes three requests (past their first token); the owner of a
    // prompt gets a fourth, still in prefill — within the bounded-load cap (ceil(1.25 × 26 / 8)).
    // The registry's own array: its load groups give the fewest awaiting a first token.
    const workers = (await fleet(8)).registry.getAll();
    for (const worker of workers) for (let i = 0; i < 3; i++) worker.acquire().firstToken();
    const probe = policy('ring');
    const request = { tokens: prompt(7) };
    const owner = probe.select(workers, request) as Worker;
    const lease = owner.acquire();

    // Act: a fresh router places the same prompt (a miss for it).
    const whilePrefilling = policy('ring').select(workers, request);
    lease.firstToken();
    const afterFirstToken = policy('ring').select(workers, request);
    lease.release();

    // Assert
    expect(whilePrefilling).not.toBe(owner);
    expect(afterFirstToken).toBe(owner);
  });

  it('a hit still follows the holder: only misses move', async () => {
    const workers = (await fleet(8)).registry.getAll();
    const p = policy('ring');
    const text = essay(3);
    const first = p.select(workers, { text });
    expect(p.select(workers, { text })).toBe(first);
    expect(p.stats()).toMatchObject({ reasons: { cache_miss: 1, cache_hit: 1 } });
  });

  it('rejects an unknown placement, naming the option', () => {
    const error = throwsCode(
      () => createPolicy('cache_aware', { missPlacement: 'nearest' as never }),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toMatch(/missPlacement/);
  });
});
