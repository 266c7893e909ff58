/**
 * The contract every policy honours (docs/policies.md), checked the same way for each:
 * - `select` returns `undefined` or an available member of the list it was given;
 * - it never throws on an empty or odd list (holes, non-workers, duplicates, removed workers);
 * - it reads each candidate's routing state (`routingState()` or `isAvailable()`) at most once;
 * - it counts its pick: the chosen worker's `processed` goes up by exactly one.
 */
import fc from 'fast-check';
import { expect, it, vi } from 'vitest';
import type { Policy, SelectRequest, WorkerStatus } from '../../src/index.js';
import { Worker, WorkerRegistry } from '../../src/index.js';
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

const requestArb: fc.Arbitrary<SelectRequest> = fc.record(
  {
    model: fc.constantFrom('m', 'other'),
    text: fc.string({ maxLength: 80 }),
    tokens: fc.array(fc.oneof(fc.nat({ max: 50_000 }), fc.double(), fc.constant(-1)), {
      maxLength: 40,
    }),
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
 * internal runtime read (`Worker.runtimeOf`) the policies' hot loops use.
 */
export function countReads<T>(
  workers: readonly Worker[],
  fn: () => T,
): { result: T; reads: number[] } {
  const reads = workers.map(() => 0);
  const index = new Map(workers.map((w, i) => [w, i]));
  const internal = Worker as unknown as { runtimeOf(w: Worker): unknown };
  const original = internal.runtimeOf;
  const runtimeSpy = vi.spyOn(internal, 'runtimeOf').mockImplementation((w: Worker) => {
    const i = index.get(w);
    if (i !== undefined) reads[i]!++;
    return original.call(Worker, w);
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
