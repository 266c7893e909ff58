/**
 * The contract every policy honours (docs/policies.md), checked the same way for each:
 * - `select` returns `undefined` or an available member of the list it was given;
 * - it never throws on an empty or odd list (holes, `undefined`, `null`, plain objects, numbers,
 *   look-alikes of workers, objects whose properties throw, duplicates, removed workers), with
 *   text, with tokens (odd token values included) and with load reports;
 * - it reads each candidate's routing state (`routingState()` or `isAvailable()`) at most once
 *   (a worker listed k times: at most k times);
 * - it counts its pick: the chosen worker's `processed` goes up by exactly one.
 */
import fc from 'fast-check';
import { expect, it, vi } from 'vitest';
import type { Policy, SelectRequest, WorkerStatus } from '../../src/index.js';
import { Worker, WorkerRegistry } from '../../src/index.js';
import { workerInternals } from '../../src/workers/worker.js';
import { runs } from '../helpers/fc-settings.js';

type Shape = { status: WorkerStatus; open: boolean; removed: boolean; load: number };

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  status: fc.constantFrom<WorkerStatus>(
    'ready',
    'ready',
    'ready',
    'pending',
    'not_ready',
    'failed',
    'draining',
  ),
  open: fc.constantFrom(false, false, false, false, false, true),
  removed: fc.constantFrom(false, false, false, false, false, false, true),
  load: fc.nat({ max: 6 }),
});

/** Token ids, and values that are not: a policy reads those as 0 and never throws on them. */
const tokenArb: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 8, arbitrary: fc.nat({ max: 50_000 }) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.constantFrom(-1, 2 ** 40, null, undefined, 'x', 3n) },
);

const requestArb: fc.Arbitrary<SelectRequest> = fc.record(
  {
    model: fc.constantFrom('m', 'other', ''),
    text: fc.string({ maxLength: 80 }),
    tokens: fc.array(tokenArb, { maxLength: 40 }),
    routingKey: fc.string({ maxLength: 12 }),
    headers: fc.dictionary(
      fc.constantFrom(
        'x-fleetroute-routing-key',
        'Authorization',
        'x-forwarded-for',
        'cookie',
        'X-Other',
      ),
      fc.oneof(
        fc.string({ maxLength: 10 }),
        fc.array(fc.string({ maxLength: 6 }), { maxLength: 2 }),
      ),
    ),
  },
  { requiredKeys: [] },
) as fc.Arbitrary<SelectRequest>;

/**
 * A request that carries a key: text, tokens (at least two 16-token pages, so token trees store
 * them) or both.
 */
const keyedRequestArb: fc.Arbitrary<SelectRequest> = fc
  .record({
    model: fc.constantFrom('m', 'other', ''),
    text: fc.option(fc.string({ minLength: 1, maxLength: 80 }), { nil: undefined }),
    tokens: fc.option(fc.array(tokenArb, { minLength: 32, maxLength: 48 }), { nil: undefined }),
    routingKey: fc.option(fc.string({ maxLength: 6 }), { nil: undefined }),
  })
  .map(({ model, text, tokens, routingKey }) => {
    const request: Record<string, unknown> = { model };
    if (text !== undefined || tokens === undefined) request.text = text ?? 'hello';
    if (tokens !== undefined) request.tokens = tokens;
    if (routingKey !== undefined) request.routingKey = routingKey;
    return request as SelectRequest;
  });

/** What sits at one position of an odd candidate list. */
type Slot =
  | { kind: 'worker'; index: number }
  | { kind: 'hole' | 'undefined' | 'null' | 'object' | 'number' | 'string' }
  | { kind: 'impostor' | 'hostile'; index: number };

const slotArb: fc.Arbitrary<Slot> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('worker' as const), index: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constantFrom(
        'hole' as const,
        'undefined' as const,
        'null' as const,
        'object' as const,
        'number' as const,
        'string' as const,
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constantFrom('impostor' as const, 'hostile' as const),
      index: fc.nat(),
    }),
  },
);

/** A plain object shaped like `worker` (same URL and id, looks available): never a pick. */
function impostorOf(worker: Worker | undefined): unknown {
  return {
    url: worker?.url ?? 'http://impostor:8000',
    id: worker?.id ?? 'impostor',
    models: ['m'],
    load: 0,
    processed: 0,
    live: true,
    status: 'ready',
    isAvailable: () => true,
    routingState: () => ({ healthy: true, canExecute: true, load: 0, processed: 0 }),
    incrementProcessed: () => {},
  };
}

/** An object whose worker-like properties throw when read (not enumerable: reports stay readable). */
function hostile(): unknown {
  const object = {};
  for (const name of ['url', 'id', 'load', 'processed', 'models', 'isWildcard', 'live', 'status']) {
    Object.defineProperty(object, name, {
      get() {
        throw new Error(`a policy read .${name} of a non-worker`);
      },
    });
  }
  return object;
}

/** The candidate list for `slots` over `workers`: a sparse array where a slot is a hole. */
function oddList(slots: readonly Slot[], workers: readonly Worker[]): unknown[] {
  const list: unknown[] = new Array(slots.length);
  slots.forEach((slot, i) => {
    const worker = 'index' in slot ? workers[slot.index % Math.max(1, workers.length)] : undefined;
    switch (slot.kind) {
      case 'worker':
        if (worker !== undefined) list[i] = worker;
        break;
      case 'hole':
        break;
      case 'undefined':
        list[i] = undefined;
        break;
      case 'null':
        list[i] = null;
        break;
      case 'object':
        list[i] = {};
        break;
      case 'number':
        list[i] = i;
        break;
      case 'string':
        list[i] = 'http://w0:8000';
        break;
      case 'impostor':
        list[i] = impostorOf(worker);
        break;
      case 'hostile':
        list[i] = hostile();
        break;
    }
  });
  return list;
}

/** A fleet built through a real registry, with the given statuses, breakers and loads. */
export async function buildFleet(
  shapes: readonly Shape[],
): Promise<{ registry: WorkerRegistry; workers: Worker[] }> {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  const workers: Worker[] = [];
  for (let i = 0; i < shapes.length; i++) {
    const shape = shapes[i]!;
    const worker = await registry.register({ url: `http://w${i}:8000`, models: ['m'] });
    if (shape.status !== 'ready') await registry.transitionStatus(worker.id, shape.status);
    if (shape.open) worker.circuitBreaker.forceOpen();
    for (let l = 0; l < shape.load; l++) worker.acquire();
    if (shape.removed) await registry.remove(worker.id);
    workers.push(worker);
  }
  return { registry, workers };
}

/**
 * Counts state reads per worker while `fn` runs: `routingState()`, `isAvailable()`, and the
 * internal runtime read (`workerInternals.runtimeOf`) the policies' hot loops use.
 */
export function countReads<T>(
  workers: readonly Worker[],
  fn: () => T,
): { result: T; reads: number[] } {
  const reads = workers.map(() => 0);
  const index = new Map(workers.map((w, i) => [w, i]));
  const original = workerInternals.runtimeOf;
  const runtimeSpy = vi.spyOn(workerInternals, 'runtimeOf').mockImplementation((w: Worker) => {
    const i = index.get(w);
    if (i !== undefined) reads[i]!++;
    return original.call(workerInternals, w);
  });
  const spies = workers.map((worker, i) => [
    vi.spyOn(worker, 'routingState').mockImplementation(function (this: Worker, into) {
      reads[i]!++;
      return Object.getPrototypeOf(worker).routingState.call(worker, into);
    }),
    vi.spyOn(worker, 'isAvailable').mockImplementation(() => {
      reads[i]!++;
      return Object.getPrototypeOf(worker).isAvailable.call(worker);
    }),
  ]);
  try {
    return { result: fn(), reads };
  } finally {
    runtimeSpy.mockRestore();
    for (const pair of spies) for (const spy of pair) spy.mockRestore();
  }
}

/**
 * Registers the contract tests for one policy inside the caller's `describe`.
 *
 * @param make - a fresh policy (called once per property run).
 */
export function policyContract(make: () => Policy): void {
  it('contract: returns undefined or an available member of the list, reading each candidate at most once, and counts its pick', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(shapeArb, { maxLength: 10 }),
        fc.array(requestArb, { minLength: 1, maxLength: 4 }),
        async (shapes, requests) => {
          const { workers } = await buildFleet(shapes);
          const policy = make();
          for (const request of requests) {
            const before = workers.map((w) => w.processed);
            const { result, reads } = countReads(workers, () => policy.select(workers, request));
            for (const count of reads) expect(count).toBeLessThanOrEqual(1);
            if (result !== undefined) {
              expect(workers).toContain(result);
              expect(result.isAvailable()).toBe(true);
              const index = workers.indexOf(result);
              const expected = before.map((p, i) => p + (i === index ? 1 : 0));
              expect(workers.map((w) => w.processed)).toEqual(expected);
            } else {
              expect(workers.map((w) => w.processed)).toEqual(before);
            }
          }
          policy.close?.();
        },
      ),
      runs(60, 300),
    );
  });

  it('contract: on odd lists (holes, non-workers, look-alikes, duplicates), with text, tokens and load reports, never throws and returns undefined or an available worker of the list, reading each listed worker at most once per listing', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(shapeArb, { minLength: 1, maxLength: 6 }),
        fc.array(slotArb, { minLength: 1, maxLength: 12 }),
        fc.array(keyedRequestArb, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        async (shapes, slots, requests, order, reported) => {
          const { workers } = await buildFleet(shapes);
          const list = oddList(slots, workers) as Worker[];
          const listed = workers.map((w) => list.filter((entry) => entry === w).length);
          const policy = make();
          if (reported) {
            policy.updateLoads?.(
              new Map(
                workers.map((w, i) => [
                  w.url,
                  { tokenUsage: (i % 4) / 4, queuedTokens: 100 * i, throughput: 500 + i },
                ]),
              ),
            );
          }
          // Requests drawn from a small pool, so the same key comes back (cache hits, sticky keys).
          for (const pick of order) {
            const request = requests[pick % requests.length]!;
            const before = workers.map((w) => w.processed);
            let outcome: { result: Worker | undefined; reads: number[] } | undefined;
            expect(() => {
              outcome = countReads(workers, () => policy.select(list, request));
            }).not.toThrow();
            const { result, reads } = outcome!;
            reads.forEach((count, i) => {
              expect(count, `reads of worker ${i}`).toBeLessThanOrEqual(listed[i]!);
            });
            if (result === undefined) {
              expect(workers.map((w) => w.processed)).toEqual(before);
              continue;
            }
            expect(result).toBeInstanceOf(Worker);
            expect(list).toContain(result);
            expect(result.isAvailable()).toBe(true);
            const index = workers.indexOf(result);
            expect(workers.map((w) => w.processed)).toEqual(
              before.map((p, i) => p + (i === index ? 1 : 0)),
            );
          }
          policy.close?.();
        },
      ),
      runs(60, 300),
    );
  });

  it('contract: holes, undefined, null, plain objects and numbers between two ready workers, with text or tokens: one of the two', async () => {
    const { workers } = await buildFleet([
      { status: 'ready', open: false, removed: false, load: 0 },
      { status: 'ready', open: false, removed: false, load: 0 },
    ]);
    const [a, b] = workers as [Worker, Worker];
    // biome-ignore lint/suspicious/noSparseArray: a list with a hole is the case under test
    const sparse = [a, , b] as Worker[];
    const lists = [[a, undefined, b], sparse, [a, {}, 3, null, b], [undefined, null, a, b, 7]];
    const tokens = Array.from({ length: 64 }, (_, i) => i);
    const requests: SelectRequest[] = [
      { text: 'hello' },
      { tokens },
      { text: 'hello', tokens, model: 'm' },
      {},
    ];
    const policy = make();
    for (let round = 0; round < 3; round++) {
      for (const list of lists) {
        for (const request of requests) {
          let result: Worker | undefined;
          expect(() => {
            result = policy.select(list as Worker[], request);
          }).not.toThrow();
          expect([a, b]).toContain(result);
        }
      }
    }
    policy.close?.();
  });

  it('contract: never throws on an empty or odd list, and finds nothing where nothing is available', async () => {
    const policy = make();
    const { workers } = await buildFleet([
      { status: 'ready', open: false, removed: false, load: 0 },
      { status: 'not_ready', open: false, removed: false, load: 0 },
    ]);
    const odd: unknown[] = [
      [],
      [undefined],
      [null, 42, 'x', {}],
      [workers[0], workers[0]],
      [workers[1]],
    ];
    for (const list of odd) {
      expect(() => policy.select(list as Worker[], {})).not.toThrow();
      expect(() => policy.select(list as Worker[])).not.toThrow();
    }
    expect(policy.select([])).toBeUndefined();
    expect(policy.select([workers[1]!], { text: 'hello', routingKey: 'k' })).toBeUndefined();
    expect(() => policy.select(undefined as unknown as Worker[])).not.toThrow();
    expect(policy.select([workers[0]!, workers[0]!], { text: 'hello' })).toBe(workers[0]);
    policy.close?.();
  });
}
