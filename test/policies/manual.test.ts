/**
 * `manual`: sticky routing key → worker placement: stickiness, failover to a stored
 * secondary, win-back by a recovered primary, idle expiry with a lazy sweep, the key bound, and
 * `removeWorker`; then a property over random operation sequences.
 */
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import {
  createPolicy,
  type ManualConfig,
  ManualPolicy,
  type RequestLeg,
  type SelectRequest,
  type Worker,
  WorkerRegistry,
} from '../../src/index.js';
import type { ManualMode } from '../../src/policies/manual.js';
import { manualSnapshotOf } from '../../src/policies/manual.js';
import { runs } from '../helpers/fc-settings.js';
import { type FakeClock, fakeClock, throwsCode } from '../support/fixtures.js';

const HOUR = 3_600_000;

interface Fleet {
  readonly registry: WorkerRegistry;
  /** Every worker ever registered, by index (removed ones included). */
  readonly workers: readonly Worker[];
  /** The registry's current candidate list (same identity until membership changes). */
  candidates(): readonly Worker[];
}

async function fleet(n: number): Promise<Fleet> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const workers: Worker[] = [];
  for (let i = 0; i < n; i++) {
    workers.push(await registry.register({ url: `http://w${i}:8000`, models: ['m'] }));
  }
  return { registry, workers, candidates: () => registry.getByModel('m') };
}

function manual(config: ManualConfig = {}): { policy: ManualPolicy; clock: FakeClock } {
  const clock = fakeClock();
  return { policy: new ManualPolicy({ seed: 1, clock: clock.read, ...config }), clock };
}

function entryOf(policy: ManualPolicy, key: string) {
  return manualSnapshotOf(policy).entries.find((e) => e.key === key);
}

function keysOf(policy: ManualPolicy): string[] {
  return manualSnapshotOf(policy).entries.map((e) => e.key);
}

const fail = (worker: Worker) => worker.circuitBreaker.forceOpen();
const recover = (worker: Worker) => worker.circuitBreaker.reset();

/** Counts `routingState()` and `isAvailable()` calls per worker while `fn` runs. */
function countReads<T>(workers: readonly Worker[], fn: () => T): { result: T; reads: number[] } {
  const reads = workers.map(() => 0);
  const spies = workers.flatMap((worker, i) => {
    const proto = Object.getPrototypeOf(worker) as Worker;
    return [
      vi.spyOn(worker, 'routingState').mockImplementation((into) => {
        reads[i]!++;
        return proto.routingState.call(worker, into);
      }),
      vi.spyOn(worker, 'isAvailable').mockImplementation(() => {
        reads[i]!++;
        return proto.isAvailable.call(worker);
      }),
    ];
  });
  try {
    return { result: fn(), reads };
  } finally {
    for (const spy of spies) spy.mockRestore();
  }
}

describe('manual policy: options', () => {
  it.each([
    [{ mode: 'fastest' }, "manual.mode must be one of 'random', 'min_load', 'min_group'"],
    [{ ttlMs: 0 }, 'manual.ttlMs must be an integer between 1'],
    [{ ttlMs: 1.5 }, 'manual.ttlMs must be an integer'],
    [{ sweepIntervalMs: -1 }, 'manual.sweepIntervalMs must be an integer between 0'],
    [{ maxKeys: 0 }, 'manual.maxKeys must be an integer between 1'],
    [{ identityHeaders: 'yes' }, 'manual.identityHeaders must be a boolean'],
    [{ ttl: 5 }, 'manual.ttl is not an option of manual'],
  ])('rejects %o with INVALID_ARGUMENT naming the field', (config, message) => {
    const error = throwsCode(
      () => createPolicy('manual', config as ManualConfig),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toContain(message);
  });

  it('accepts every documented option', () => {
    const policy = createPolicy('manual', {
      mode: 'min_group',
      ttlMs: 1000,
      sweepIntervalMs: 0,
      maxKeys: 1,
      identityHeaders: true,
      seed: 3,
      clock: () => 0,
    });
    expect(policy).toBeInstanceOf(ManualPolicy);
    expect(policy.name).toBe('manual');
    expect(policy.size).toBe(0);
  });
});

describe('manual policy: stickiness', () => {
  it('sends every request with the same key to the same worker', async () => {
    // Arrange
    const { candidates, workers } = await fleet(4);
    const { policy } = manual();

    // Act
    const picks = Array.from({ length: 50 }, () =>
      policy.select(candidates(), { routingKey: 'u1' }),
    );

    // Assert
    const first = picks[0]!;
    expect(picks.every((w) => w === first)).toBe(true);
    expect(first.processed).toBe(50);
    expect(workers.filter((w) => w !== first).every((w) => w.processed === 0)).toBe(true);
    expect(policy.size).toBe(1);
    expect(policy.keyCount(first.url)).toBe(1);
  });

  it('keys on the routing-key header when the request has no routingKey, and routingKey wins', async () => {
    // Arrange
    const { candidates } = await fleet(3);
    const { policy } = manual();

    // Act
    policy.select(candidates(), { headers: { 'X-FleetRoute-Routing-Key': 'from-header' } });
    policy.select(candidates(), { headers: new Headers({ 'x-fleetroute-routing-key': 'h2' }) });
    policy.select(candidates(), {
      routingKey: 'explicit',
      headers: { 'x-fleetroute-routing-key': 'ignored' },
    });

    // Assert
    expect(keysOf(policy)).toEqual(['from-header', 'h2', 'explicit']);
  });

  it('spreads different keys uniformly in random mode', async () => {
    // Arrange
    const { candidates, workers } = await fleet(4);
    const { policy } = manual({ mode: 'random', seed: 42 });

    // Act
    for (let k = 0; k < 400; k++) policy.select(candidates(), { routingKey: `k${k}` });

    // Assert
    for (const worker of workers) {
      expect(policy.keyCount(worker.url)).toBeGreaterThan(70);
      expect(policy.keyCount(worker.url)).toBeLessThan(130);
    }
  });

  it('spreads different keys evenly in min_group mode, ties going to the lower index', async () => {
    // Arrange
    const { candidates, workers } = await fleet(4);
    const { policy } = manual({ mode: 'min_group' });

    // Act
    const picks = Array.from(
      { length: 8 },
      (_, k) => policy.select(candidates(), { routingKey: `k${k}` })!,
    );

    // Assert
    expect(picks.map((w) => workers.indexOf(w))).toEqual([0, 1, 2, 3, 0, 1, 2, 3]);
  });

  it('places a new key on the least-loaded worker in min_load mode, and the key then stays', async () => {
    // Arrange
    const { candidates, workers } = await fleet(4);
    const { policy } = manual({ mode: 'min_load' });
    const loads = [2, 0, 1, 3];
    loads.forEach((load, i) => {
      for (let l = 0; l < load; l++) workers[i]!.acquire();
    });

    // Act
    const a = policy.select(candidates(), { routingKey: 'a' });
    workers[1]!.acquire();
    workers[1]!.acquire();
    const b = policy.select(candidates(), { routingKey: 'b' });
    const aAgain = policy.select(candidates(), { routingKey: 'a' });

    // Assert
    expect(a).toBe(workers[1]);
    expect(b).toBe(workers[2]);
    expect(aAgain).toBe(workers[1]);
  });
});

describe('manual policy: failover', () => {
  it('fails over to a secondary that it stores, and gives the key back to the recovered primary', async () => {
    // Arrange
    const { candidates, workers } = await fleet(4);
    const { policy } = manual({ mode: 'min_group' });
    const [w0, w1] = workers as [Worker, Worker];
    expect(policy.select(candidates(), { routingKey: 'k' })).toBe(w0);

    // Act
    fail(w0);
    const duringOutage = [1, 2, 3].map(() => policy.select(candidates(), { routingKey: 'k' }));
    recover(w0);
    const afterRecovery = policy.select(candidates(), { routingKey: 'k' });
    fail(w0);
    const secondOutage = policy.select(candidates(), { routingKey: 'k' });

    // Assert
    expect(duringOutage).toEqual([w1, w1, w1]);
    expect(afterRecovery).toBe(w0);
    expect(secondOutage).toBe(w1);
    expect(entryOf(policy, 'k')).toMatchObject({ primary: w0.url, secondary: w1.url });
    expect(policy.keyCount(w0.url)).toBe(1);
    expect(policy.keyCount(w1.url)).toBe(1);
  });

  it('replaces the secondary with a third worker when primary and secondary are both down, keeping the primary', async () => {
    // Arrange
    const { candidates, workers } = await fleet(4);
    const { policy } = manual({ mode: 'min_group' });
    const [w0, w1, w2] = workers as [Worker, Worker, Worker];
    policy.select(candidates(), { routingKey: 'k' });
    fail(w0);
    policy.select(candidates(), { routingKey: 'k' });

    // Act
    fail(w1);
    const third = policy.select(candidates(), { routingKey: 'k' });
    recover(w0);
    const back = policy.select(candidates(), { routingKey: 'k' });

    // Assert
    expect(third).toBe(w2);
    expect(back).toBe(w0);
    expect(entryOf(policy, 'k')).toMatchObject({ primary: w0.url, secondary: w2.url });
    expect(policy.keyCount(w1.url)).toBe(0);
    expect(policy.keyCount(w2.url)).toBe(1);
  });

  it('serves a key from the given candidates when its primary is not among them, and returns to the primary when it is', async () => {
    // Arrange
    const { candidates, workers } = await fleet(3);
    const [w0, w1, w2] = workers as [Worker, Worker, Worker];
    const { policy } = manual({ mode: 'min_group' });
    policy.select(candidates(), { routingKey: 'k' });

    // Act
    const elsewhere = policy.select([w1, w2], { routingKey: 'k' });
    const home = policy.select(candidates(), { routingKey: 'k' });

    // Assert
    expect(elsewhere).toBe(w1);
    expect(home).toBe(w0);
    expect(entryOf(policy, 'k')).toMatchObject({ primary: w0.url, secondary: w1.url });
  });

  it('returns undefined and keeps the key when no candidate is available', async () => {
    // Arrange
    const { candidates, workers } = await fleet(2);
    const { policy } = manual();
    const owner = policy.select(candidates(), { routingKey: 'k' })!;
    for (const worker of workers) fail(worker);

    // Act
    const result = policy.select(candidates(), { routingKey: 'k' });

    // Assert
    expect(result).toBeUndefined();
    expect(entryOf(policy, 'k')).toMatchObject({ primary: owner.url, secondary: undefined });
    expect(workers.map((w) => w.processed)).toEqual(workers.map((w) => (w === owner ? 1 : 0)));
  });

  it.each<ManualMode>(['random', 'min_load', 'min_group'])(
    'reads each candidate at most once while failing over (%s), even with the primary listed twice',
    async (mode) => {
      // Arrange
      const { candidates, workers } = await fleet(5);
      const { policy } = manual({ mode });
      const primary = policy.select(candidates(), { routingKey: 'k' })!;
      fail(primary);
      const secondary = policy.select(candidates(), { routingKey: 'k' })!;
      const withDuplicate = [primary, ...candidates()];

      // Act
      const toSecondary = countReads(workers, () =>
        policy.select(withDuplicate, { routingKey: 'k' }),
      );
      fail(secondary);
      const toThird = countReads(workers, () => policy.select(withDuplicate, { routingKey: 'k' }));

      // Assert
      expect(toSecondary.result).toBe(secondary);
      expect(Math.max(...toSecondary.reads)).toBeLessThanOrEqual(1);
      expect(toThird.result).not.toBe(primary);
      expect(toThird.result).not.toBe(secondary);
      expect(toThird.result?.isAvailable()).toBe(true);
      expect(Math.max(...toThird.reads)).toBeLessThanOrEqual(1);
      expect(entryOf(policy, 'k')?.secondary).toBe(toThird.result?.url);
    },
  );
});

describe('manual policy: requests without a key', () => {
  it('routes them by the mode and stores nothing', async () => {
    // Arrange
    const { candidates } = await fleet(3);
    const { policy } = manual();
    const requests: (SelectRequest | undefined)[] = [
      undefined,
      {},
      { text: 'hello', tokens: [1, 2, 3] },
      { routingKey: '' },
      {
        headers: { authorization: 'Bearer secret', cookie: 'sid=1', 'x-forwarded-for': '10.0.0.1' },
      },
    ];

    // Act
    const picks = requests.map((request) => policy.select(candidates(), request));

    // Assert
    for (const pick of picks) expect(candidates()).toContain(pick);
    expect(policy.size).toBe(0);
  });

  it('keys on identity headers only when identityHeaders is set', async () => {
    // Arrange
    const { candidates } = await fleet(3);
    const { policy } = manual({ identityHeaders: true });
    const request = { headers: { authorization: 'Bearer a' } };

    // Act
    const first = policy.select(candidates(), request);
    const again = Array.from({ length: 10 }, () => policy.select(candidates(), request));

    // Assert
    expect(keysOf(policy)).toEqual(['Bearer a']);
    expect(again.every((w) => w === first)).toBe(true);
  });
});

describe('manual policy: memory bounds', () => {
  it('places a key afresh once it has been idle for longer than ttlMs', async () => {
    // Arrange
    const { candidates, workers } = await fleet(3);
    const { policy, clock } = manual({ mode: 'min_load', ttlMs: 1000 });
    expect(policy.select(candidates(), { routingKey: 'k' })).toBe(workers[0]);
    workers[0]!.acquire();

    // Act
    clock.now = 1000;
    const atTtl = policy.select(candidates(), { routingKey: 'k' });
    clock.now = 2001;
    const pastTtl = policy.select(candidates(), { routingKey: 'k' });

    // Assert
    expect(atTtl).toBe(workers[0]);
    expect(pastTtl).toBe(workers[1]);
    expect(entryOf(policy, 'k')).toEqual({
      key: 'k',
      primary: workers[1]!.url,
      secondary: undefined,
      lastUsed: 2001,
    });
    expect(policy.keyCount(workers[0]!.url)).toBe(0);
  });

  it('sweeps idle keys inside select, at most once per sweepIntervalMs', async () => {
    // Arrange
    const { candidates } = await fleet(2);
    const { policy, clock } = manual({ ttlMs: 1000, sweepIntervalMs: 5000 });
    policy.select(candidates(), { routingKey: 'a' });
    clock.now = 4000;
    policy.select(candidates(), { routingKey: 'b' });

    // Act
    clock.now = 4999;
    policy.select(candidates());
    const beforeInterval = policy.size;
    clock.now = 5000;
    policy.select(candidates());
    const atInterval = keysOf(policy);
    clock.now = 9999;
    policy.select(candidates());
    const withinNextInterval = policy.size;
    clock.now = 10_000;
    policy.select(candidates());

    // Assert
    expect(beforeInterval).toBe(2);
    expect(atInterval).toEqual(['b']);
    expect(withinNextInterval).toBe(1);
    expect(policy.size).toBe(0);
    expect(manualSnapshotOf(policy).counts).toEqual({});
  });

  it('keeps a key for 4 hours of idleness by default', async () => {
    // Arrange
    const { candidates } = await fleet(2);
    const { policy, clock } = manual();
    policy.select(candidates(), { routingKey: 'k' });

    // Act
    clock.now = 4 * HOUR;
    policy.select(candidates());
    const atFourHours = policy.size;
    clock.now = 4 * HOUR + 60_000 + 1;
    policy.select(candidates());

    // Assert
    expect(atFourHours).toBe(1);
    expect(policy.size).toBe(0);
  });

  it('evicts the least recently used key when a new key would exceed maxKeys', async () => {
    // Arrange
    const { candidates, workers } = await fleet(3);
    const { policy } = manual({ maxKeys: 3 });
    for (const key of ['a', 'b', 'c']) policy.select(candidates(), { routingKey: key });

    // Act
    policy.select(candidates(), { routingKey: 'a' });
    policy.select(candidates(), { routingKey: 'd' });

    // Assert
    expect(keysOf(policy)).toEqual(['c', 'a', 'd']);
    const total = workers.reduce((sum, w) => sum + policy.keyCount(w.url), 0);
    expect(total).toBe(3);
  });
  it('holds a long key as a digest: 200 keys of 1 MiB cost a few KB, each still sticky and distinct', async () => {
    // Arrange: each key is built when used, so only the policy could keep it alive.
    const { candidates } = await fleet(4);
    const { policy } = manual({ mode: 'min_group' });
    const longKey = (i: number) => `${String(i).padStart(8, '0')}${'k'.repeat(1_048_568)}`;
    const first: (Worker | undefined)[] = [];

    // Act
    for (let i = 0; i < 200; i++)
      first.push(policy.select(candidates(), { routingKey: longKey(i) }));
    const again = Array.from({ length: 200 }, (_, i) =>
      policy.select(candidates(), { routingKey: longKey(i) }),
    );

    // Assert: 200 entries, none holding more than 256 characters of key (2 bytes each at most).
    const keys = keysOf(policy);
    expect(keys).toHaveLength(200);
    expect(new Set(keys).size).toBe(200);
    expect(Math.max(...keys.map((k) => k.length))).toBeLessThanOrEqual(256);
    expect(keys.reduce((sum, k) => sum + k.length, 0) * 2).toBeLessThan(200 * 512);
    expect(again).toEqual(first);
  });

  it('keeps a key of up to 256 characters as it is, and a longer one under its digest', async () => {
    // Arrange
    const { candidates } = await fleet(2);
    const { policy } = manual();
    const atLimit = 'a'.repeat(256);
    const over = 'a'.repeat(257);

    // Act
    policy.select(candidates(), { routingKey: atLimit });
    policy.select(candidates(), { routingKey: over });
    policy.select(candidates(), { routingKey: over, leg: 'prefill' });

    // Assert: a digest is `#` and 16 hex digits; the leg's namespace is part of what is hashed.
    const keys = keysOf(policy);
    expect(keys[0]).toBe(atLimit);
    expect(keys[1]).toMatch(/^#[0-9a-f]{16}$/);
    expect(keys[2]).toMatch(/^#[0-9a-f]{16}$/);
    expect(keys[2]).not.toBe(keys[1]);
  });
});

describe('manual policy: removeWorker, reset, close', () => {
  it('removeWorker drops the URL from every entry and its counts, forgetting keys left with no worker', async () => {
    // Arrange: a → [w0, w1], b → [w1], c → [w2], d → [w0]
    const { registry, candidates, workers } = await fleet(3);
    const [w0, w1, w2] = workers as [Worker, Worker, Worker];
    const { policy } = manual({ mode: 'min_group' });
    for (const key of ['a', 'b', 'c']) policy.select(candidates(), { routingKey: key });
    fail(w0);
    policy.select(candidates(), { routingKey: 'a' });
    recover(w0);
    policy.select(candidates(), { routingKey: 'd' });
    expect(manualSnapshotOf(policy).entries).toMatchObject([
      { key: 'b', primary: w1.url, secondary: undefined },
      { key: 'c', primary: w2.url, secondary: undefined },
      { key: 'a', primary: w0.url, secondary: w1.url },
      { key: 'd', primary: w0.url, secondary: undefined },
    ]);

    // Act
    await registry.remove(w0.id);
    policy.removeWorker(w0.url);

    // Assert
    expect(manualSnapshotOf(policy).entries).toMatchObject([
      { key: 'b', primary: w1.url, secondary: undefined },
      { key: 'c', primary: w2.url, secondary: undefined },
      { key: 'a', primary: w1.url, secondary: undefined },
    ]);
    expect(manualSnapshotOf(policy).counts).toEqual({ [w1.url]: 2, [w2.url]: 1 });
    expect(policy.select(candidates(), { routingKey: 'a' })).toBe(w1);
  });

  it('removeWorker of a secondary clears it and keeps the primary', async () => {
    // Arrange
    const { candidates, workers } = await fleet(3);
    const [w0, w1] = workers as [Worker, Worker];
    const { policy } = manual({ mode: 'min_group' });
    policy.select(candidates(), { routingKey: 'k' });
    fail(w0);
    policy.select(candidates(), { routingKey: 'k' });

    // Act
    policy.removeWorker(w1.url);
    policy.removeWorker('http://unknown:1');

    // Assert
    expect(entryOf(policy, 'k')).toMatchObject({ primary: w0.url, secondary: undefined });
    expect(manualSnapshotOf(policy).counts).toEqual({ [w0.url]: 1 });
  });

  it('reset and close forget every key and count', async () => {
    // Arrange
    const { candidates, workers } = await fleet(2);
    const { policy } = manual();
    for (const key of ['a', 'b', 'c']) policy.select(candidates(), { routingKey: key });

    // Act
    policy.reset();
    const afterReset = policy.size;
    policy.select(candidates(), { routingKey: 'a' });
    policy.close();

    // Assert
    expect(afterReset).toBe(0);
    expect(policy.size).toBe(0);
    expect(workers.map((w) => policy.keyCount(w.url))).toEqual([0, 0]);
  });
});

describe('manual policy: min_group and legs', () => {
  it('min_group places a new key on the worker with the fewest live keys, counting secondaries', async () => {
    // Arrange: x → w0, y → w1 with w0 as its secondary, z → w2; key counts 2, 1, 1.
    const { candidates, workers } = await fleet(3);
    const [w0, w1, w2] = workers as [Worker, Worker, Worker];
    const { policy } = manual({ mode: 'min_group' });
    for (const key of ['x', 'y', 'z']) policy.select(candidates(), { routingKey: key });
    fail(w1);
    expect(policy.select(candidates(), { routingKey: 'y' })).toBe(w0);
    recover(w1);
    expect([w0, w1, w2].map((w) => policy.keyCount(w.url))).toEqual([2, 1, 1]);

    // Act
    const next = policy.select(candidates(), { routingKey: 'new' });

    // Assert: not w0, whose secondary counts; w1 wins the tie with w2 by index.
    expect(next).toBe(w1);
    expect([w0, w1, w2].map((w) => policy.keyCount(w.url))).toEqual([2, 2, 1]);
  });

  it('min_group breaks a tie on key count by fewer requests in flight', async () => {
    // Arrange
    const { candidates, workers } = await fleet(3);
    const { policy } = manual({ mode: 'min_group' });
    workers[0]!.acquire();
    workers[1]!.acquire();

    // Act
    const pick = policy.select(candidates(), { routingKey: 'k' });

    // Assert
    expect(pick).toBe(workers[2]);
  });

  it('keeps the prefill and decode legs of one key apart', async () => {
    // Arrange
    const { candidates, workers } = await fleet(2);
    const [w0, w1] = workers as [Worker, Worker];
    const { policy } = manual({ mode: 'min_group' });
    const leg = (l: RequestLeg): SelectRequest => ({ routingKey: 's', leg: l });

    // Act
    const prefill = policy.select(candidates(), leg('prefill'));
    const decode = policy.select(candidates(), leg('decode'));
    fail(w0);
    const prefillDuringOutage = policy.select(candidates(), leg('prefill'));

    // Assert
    expect(prefill).toBe(w0);
    expect(decode).toBe(w1);
    expect(prefillDuringOutage).toBe(w1);
    expect(manualSnapshotOf(policy).entries).toMatchObject([
      { key: 'decode:s', primary: w1.url, secondary: undefined },
      { key: 'prefill:s', primary: w0.url, secondary: w1.url },
    ]);
    expect(entryOf(policy, 's')).toBeUndefined();
  });
});

type Op =
  | { readonly kind: 'select'; readonly key: number | undefined; readonly leg: RequestLeg }
  | { readonly kind: 'fail'; readonly worker: number; readonly how: 'status' | 'breaker' }
  | { readonly kind: 'recover'; readonly worker: number }
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'remove'; readonly worker: number }
  | { readonly kind: 'add'; readonly worker: number }
  /** Fails or removes a worker some entry names, so failover and promotion happen often. */
  | {
      readonly kind: 'hit';
      readonly entry: number;
      readonly role: 'primary' | 'secondary';
      readonly remove: boolean;
    };

const WORKERS = 4;
const TTL = 1000;
const workerArb = fc.nat({ max: WORKERS - 1 });

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      kind: fc.constant('select' as const),
      key: fc.option(fc.nat({ max: 2 }), { nil: undefined, freq: 6 }),
      leg: fc.constantFrom<RequestLeg>('single', 'single', 'single', 'prefill', 'decode'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('fail' as const),
      worker: workerArb,
      how: fc.constantFrom<'status' | 'breaker'>('status', 'breaker'),
    }),
  },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('recover' as const), worker: workerArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('advance' as const), ms: fc.nat(TTL) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), worker: workerArb }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('add' as const), worker: workerArb }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('hit' as const),
      entry: fc.nat({ max: 7 }),
      role: fc.constantFrom<'primary' | 'secondary'>('primary', 'secondary'),
      remove: fc.constantFrom(false, false, false, true),
    }),
  },
);

/** The fleet, policy and bookkeeping one property run drives. */
interface Run {
  readonly registry: WorkerRegistry;
  /** The worker at each slot; a re-registered URL gets a new worker in its slot. */
  readonly workers: Worker[];
  readonly policy: ManualPolicy;
  readonly clock: FakeClock;
  readonly removed: Set<string>;
}

/** Applies one operation that is not a select. */
async function apply(run: Run, op: Exclude<Op, { kind: 'select' }>): Promise<void> {
  const { registry, workers, policy, removed } = run;
  if (op.kind === 'advance') {
    run.clock.now += op.ms;
    return;
  }
  const slot = op.kind === 'hit' ? slotOfEntry(run, op) : op.worker;
  const worker = workers[slot];
  if (worker === undefined) return;
  const gone = removed.has(worker.url);
  if (op.kind === 'add') {
    if (!gone) return;
    workers[slot] = await registry.register({ url: worker.url, models: ['m'] });
    removed.delete(worker.url);
  } else if (gone) {
    return;
  } else if (op.kind === 'remove' || (op.kind === 'hit' && op.remove)) {
    await registry.remove(worker.id);
    policy.removeWorker(worker.url);
    removed.add(worker.url);
  } else if (op.kind === 'recover') {
    recover(worker);
    await registry.transitionStatus(worker.id, 'ready');
  } else if (op.kind === 'fail' && op.how === 'status') {
    await registry.transitionStatus(worker.id, 'not_ready');
  } else {
    fail(worker);
  }
}

/** The slot of the worker that the `op.entry`-th entry (mod their count) names in `op.role`. */
function slotOfEntry(run: Run, op: Extract<Op, { kind: 'hit' }>): number {
  const { entries } = manualSnapshotOf(run.policy);
  if (entries.length === 0) return -1;
  const entry = entries[op.entry % entries.length]!;
  const url = op.role === 'primary' ? entry.primary : entry.secondary;
  return run.workers.findIndex((w) => w.url === url);
}

/** The table's invariants: key bound, no removed URL, per-URL counts equal a recount. */
function checkTable(run: Run, maxKeys: number): void {
  const { entries, counts } = manualSnapshotOf(run.policy);
  expect(entries.length).toBe(run.policy.size);
  expect(entries.length).toBeLessThanOrEqual(maxKeys);
  const recount: Record<string, number> = {};
  for (const e of entries) {
    expect(run.removed.has(e.primary)).toBe(false);
    expect(e.secondary === undefined || !run.removed.has(e.secondary)).toBe(true);
    expect(e.secondary).not.toBe(e.primary);
    for (const url of [e.primary, e.secondary]) {
      if (url !== undefined) recount[url] = (recount[url] ?? 0) + 1;
    }
  }
  expect(counts).toEqual(recount);
  for (const w of run.workers) expect(run.policy.keyCount(w.url)).toBe(recount[w.url] ?? 0);
}

describe('manual policy: invariants', () => {
  it('over any sequence of selects, failures, recoveries, clock moves, removals and re-registrations: picks are available and prefer primary then secondary, the key bound holds, removed URLs vanish, counts match a recount', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<ManualMode>('random', 'min_load', 'min_group'),
        fc.integer({ min: 1, max: 6 }),
        fc.nat({ max: 2 * TTL }),
        fc.array(opArb, { maxLength: 80, size: 'max' }),
        async (mode, maxKeys, sweepIntervalMs, ops) => {
          // Arrange
          const { registry, candidates, workers } = await fleet(WORKERS);
          const { policy, clock } = manual({ mode, maxKeys, ttlMs: TTL, sweepIntervalMs });
          const run: Run = { registry, workers: [...workers], policy, clock, removed: new Set() };

          for (const op of ops) {
            // Act (selects are checked against the routing rules as they run)
            if (op.kind === 'select') checkSelect(policy, candidates(), op, clock.now);
            else await apply(run, op);

            // Assert
            checkTable(run, maxKeys);
          }
        },
      ),
      runs(200, 1000),
    );
  });
});

/** One select, checked against the rules: available or undefined, sticky, stored when keyed. */
function checkSelect(
  policy: ManualPolicy,
  list: readonly Worker[],
  op: Extract<Op, { kind: 'select' }>,
  now: number,
): void {
  const raw = op.key === undefined ? undefined : `k${op.key}`;
  const key = raw === undefined || op.leg === 'single' ? raw : `${op.leg}:${raw}`;
  const sizeBefore = policy.size;
  const before = key === undefined ? undefined : entryOf(policy, key);
  const live = before !== undefined && now - before.lastUsed <= TTL ? before : undefined;
  const availableUrl = (url: string | undefined) =>
    list.some((w) => w.url === url && w.isAvailable());

  const result = policy.select(list, { routingKey: raw, leg: op.leg } as SelectRequest);

  expect(result === undefined).toBe(!list.some((w) => w.isAvailable()));
  if (result !== undefined) {
    expect(list).toContain(result);
    expect(result.isAvailable()).toBe(true);
  }
  if (live !== undefined && availableUrl(live.primary)) expect(result?.url).toBe(live.primary);
  else if (live !== undefined && availableUrl(live.secondary))
    expect(result?.url).toBe(live.secondary);
  if (key === undefined) {
    expect(policy.size).toBeLessThanOrEqual(sizeBefore);
  } else if (result !== undefined) {
    const after = entryOf(policy, key)!;
    expect([after.primary, after.secondary]).toContain(result.url);
    if (live !== undefined) expect(after.primary).toBe(live.primary);
  }
}
