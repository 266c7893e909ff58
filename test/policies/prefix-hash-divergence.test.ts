import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPolicy, type Policy, type Worker } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const fleetOf = (n: number) => buildFleet(Array.from({ length: n }, () => ready));
const tokens = (n: number, seed: number) =>
  Array.from({ length: n }, (_, i) => (i * 7919 + seed * 104_729 + 13) % 50_000);

/** Conversation `c` after `turn` turns: the shared prefix, then 300 tokens of its own per turn. */
function conversation(shared: readonly number[], c: number, turn: number): number[] {
  const out = [...shared];
  for (let t = 0; t < turn; t++) out.push(...tokens(300, 1_000 * c + t));
  return out;
}

/** Every turn of every conversation in round order; the picks per conversation from `from` on. */
function chat(
  policy: Policy,
  workers: readonly Worker[],
  shared: readonly number[],
  text: boolean,
  from = 2,
): Worker[][] {
  const picks: Worker[][] = Array.from({ length: 32 }, () => []);
  for (let turn = 1; turn <= 5; turn++) {
    for (let c = 0; c < 32; c++) {
      const prompt = conversation(shared, c, turn);
      const request = text
        ? { text: prompt.map((t) => String.fromCharCode(0x100 + (t % 20_000))).join('') }
        : { tokens: prompt };
      const pick = policy.select(workers, request)!;
      if (turn >= from) picks[c]!.push(pick);
    }
  }
  return picks;
}

describe('prefix_hash follows where prompts diverge', () => {
  it('prompts sharing a 1,024-token prefix spread over the workers by conversation and stick per conversation', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash');

    const picks = chat(policy, workers, tokens(1_024, 7), false);

    for (const mine of picks) expect(new Set(mine).size).toBe(1); // sticks
    expect(new Set(picks.map((mine) => mine[0])).size).toBeGreaterThanOrEqual(10); // spreads
  });

  it('a first turn that ends inside the block past the shared prefix goes where its later turns go', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash');
    const shared = tokens(1_024, 7);
    const turn = (c: number, t: number) => [...shared, ...tokens(96 + 200 * (t - 1), 50 + c)];
    // Two conversations show where prompts diverge (the walk learns a block per request).
    for (let r = 0; r < 3; r++)
      for (const c of [0, 1])
        for (const t of [1, 2, 3]) policy.select(workers, { tokens: turn(c, t) });

    const picks = Array.from({ length: 30 }, (_, i) =>
      [1, 2, 3, 4].map((t) => policy.select(workers, { tokens: turn(i + 2, t) })!),
    );

    for (const mine of picks) expect(new Set(mine).size).toBe(1); // 96 tokens past 1,024: same worker
    expect(new Set(picks.map((mine) => mine[0])).size).toBeGreaterThanOrEqual(10);
  });

  it('text-only prompts sharing a 1,024-character prefix do the same on characters', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash', { prefixTokens: 64 }); // 256-character blocks

    const picks = chat(policy, workers, tokens(1_024, 7), true);

    for (const mine of picks) expect(new Set(mine).size).toBe(1);
    expect(new Set(picks.map((mine) => mine[0])).size).toBeGreaterThanOrEqual(10);
  });

  it('a divergence beyond maxPrefixTokens is not followed: one worker', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash', { maxPrefixTokens: 1_024 });

    const picks = chat(policy, workers, tokens(1_024, 7), false);

    expect(new Set(picks.flat()).size).toBe(1);
  });

  it('a 1,000,000-token prompt reads at most maxPrefixTokens of its tokens', async () => {
    const { workers } = await fleetOf(8);
    const policy = createPolicy('prefix_hash', { maxPrefixTokens: 2_048 });
    const shared = tokens(4_096, 3);
    // Teach the policy every block of the shared 4,096 tokens, so nothing stops a walk early.
    for (let c = 0; c < 20; c++)
      policy.select(workers, { tokens: [...shared, ...tokens(600, 10 + c)] });
    const huge = Array.from({ length: 1_000_000 }, (_, i) => (i < 4_096 ? shared[i]! : i % 50_000));
    let reads = 0;
    const counted = new Proxy(huge, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });

    for (let r = 0; r < 3; r++) expect(policy.select(workers, { tokens: counted })).toBeDefined();

    expect(reads).toBeLessThanOrEqual(3 * 2_048);
  });

  it("a long conversation's turn reads only through the block after the one holding its key", async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash');
    const shared = tokens(2_048, 7); // 8 blocks, then the conversations diverge
    const turn = (c: number, t: number) => {
      const out = [...shared];
      for (let i = 0; i < t; i++) out.push(...tokens(700, 1_000 * c + i));
      return out;
    };
    for (let t = 1; t <= 12; t++)
      for (let c = 0; c < 8; c++) policy.select(workers, { tokens: turn(c, t) });
    const long = turn(0, 12); // 10,448 tokens, every block-boundary prefix seen over and over
    const mine = policy.select(workers, { tokens: turn(0, 1) });
    for (let r = 0; r < 40; r++) expect(policy.select(workers, { tokens: long })).toBe(mine);
    let reads = 0;
    const counted = new Proxy(long, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });

    expect(policy.select(workers, { tokens: counted })).toBe(mine);

    // The branch point ends at 2,048; the key lies in the block after it; one more block is read.
    expect(reads).toBe(2_048 + 2 * 256);
  });

  it('a branch point deep in a conversation is still followed once a shallower one appears above it', async () => {
    const { workers } = await fleetOf(16);
    const policy = createPolicy('prefix_hash');
    const shared = tokens(2_048, 7);
    const base = [...shared, ...tokens(2_100, 1)]; // forks diverge inside the block from 4,096 on
    const fork = (f: number, t: number) => [...base, ...tokens(300 * t, 100 + f)];
    // The forks alone: the walk learns a block per request until it finds them diverging at 4,096.
    let before: (Worker | undefined)[] = [];
    for (let r = 0; r < 25; r++)
      before = Array.from({ length: 16 }, (_, f) => policy.select(workers, { tokens: fork(f, 1) }));
    // Then other conversations make the end of the shared prefix a branch point too.
    for (let r = 0; r < 2; r++)
      for (let c = 0; c < 8; c++)
        policy.select(workers, { tokens: [...shared, ...tokens(700, 5_000 + c)] });
    let reads = 0;
    const counted = new Proxy(fork(0, 2), {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
        return Reflect.get(target, key, receiver);
      },
    });

    const after = Array.from({ length: 16 }, (_, f) =>
      policy.select(workers, { tokens: f === 0 ? counted : fork(f, 2) }),
    );

    expect(after).toEqual(before); // each fork keeps its own key past 4,096
    expect(new Set(after).size).toBeGreaterThanOrEqual(8);
    expect(reads).toBe(4_096 + 2 * 256);
  });

  it('two instances fed the same requests make the same picks, and reset() forgets what was seen', async () => {
    const { workers } = await fleetOf(12);
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 4 })), {
          minLength: 1,
          maxLength: 60,
        }),
        async (requests) => {
          const a = createPolicy('prefix_hash', { prefixTokens: 16, maxTrackedPrefixes: 64 });
          const b = createPolicy('prefix_hash', { prefixTokens: 16, maxTrackedPrefixes: 64 });
          const shared = tokens(48, 1);
          const run = (policy: Policy) =>
            requests.map(([c, turn]) => {
              const prompt = [...shared];
              for (let t = 0; t <= turn; t++) prompt.push(...tokens(20, 100 * c + t));
              return policy.select(workers, { tokens: prompt })!.url;
            });
          const first = run(a);
          expect(run(b)).toEqual(first);
          a.reset?.();
          expect(run(a)).toEqual(first);
        },
      ),
      runs(30, 100),
    );
  });
});
