/**
 * The legs of a disaggregated request through `Router.execute` (`leg: 'prefill' | 'decode'`):
 * routed among the model's workers of that type by the leg's policy, with retries, leases and
 * the no-worker reasons of any request; and the registry's typed lists they come from.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { Router, type RouterOptions, type Worker, WorkerRegistry } from '../../src/index.js';

let closing: Array<() => unknown> = [];
afterEach(async () => {
  for (const close of closing.reverse()) await close();
  closing = [];
});

async function fleet(options: Partial<Omit<RouterOptions, 'registry'>> = {}) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  closing.push(() => registry.close());
  for (const [i, type] of (
    ['regular', 'prefill', 'prefill', 'decode', 'decode'] as const
  ).entries())
    await registry.register({ url: `http://10.0.0.${i + 1}:8000`, models: ['m'], type });
  await registry.register({ url: 'http://10.0.1.1:8000', models: ['other'], type: 'prefill' });
  const router = new Router({
    registry,
    transport: { probe: async () => true },
    health: false,
    loadPolling: false,
    retry: { initialBackoffMs: 1, maxBackoffMs: 1 },
    ...options,
  });
  router.start();
  closing.push(() => router.close());
  return { registry, router };
}

describe('Router.execute with a leg', () => {
  it('routes each leg among the model’s workers of its type only; a single request among all', async () => {
    const { router } = await fleet({ prefillPolicy: 'round_robin', decodePolicy: 'round_robin' });
    const seen = { prefill: new Set<string>(), decode: new Set<string>() };
    for (let i = 0; i < 6; i++)
      for (const leg of ['prefill', 'decode'] as const)
        await router.execute({ model: 'm', leg }, async (worker) => {
          expect(worker.type).toBe(leg);
          expect(worker.models).toEqual(['m']);
          seen[leg].add(worker.url);
          return { status: 200 };
        });
    expect(seen.prefill.size).toBe(2);
    expect(seen.decode.size).toBe(2);
  });

  it('a failed leg is retried on another worker of its type, the breaker told', async () => {
    const { router } = await fleet();
    const tried: Worker[] = [];
    const result = await router.execute({ model: 'm', leg: 'prefill' }, async (worker) => {
      tried.push(worker);
      return { status: tried.length === 1 ? 503 : 200 };
    });
    expect(result.status).toBe(200);
    expect(tried.map((w) => w.type)).toEqual(['prefill', 'prefill']);
    expect(tried[0]).not.toBe(tried[1]);
    expect(tried.every((w) => w.load === 0)).toBe(true); // leases released
  });

  it('no worker of the leg’s type: NO_WORKER, unknown_model; all unavailable: unavailable', async () => {
    const { registry, router } = await fleet();
    await expect(
      router.execute({ model: 'other', leg: 'decode' }, async () => ({ status: 200 })),
    ).rejects.toMatchObject({ code: 'NO_WORKER', reason: 'unknown_model' });
    for (const w of registry.getByModel('m', 'prefill'))
      await registry.transitionStatus(w.id, 'not_ready');
    await expect(
      router.execute({ model: 'm', leg: 'prefill' }, async () => ({ status: 200 })),
    ).rejects.toMatchObject({ code: 'NO_WORKER', reason: 'unavailable' });
  });

  it('a decode leg’s attempt is told what its policy matched there; other requests are not', async () => {
    const { router } = await fleet({ decodePolicy: 'cache_aware' });
    const text = 'the same long prompt '.repeat(30);
    const matched: Array<number | undefined> = [];
    for (const leg of ['decode', 'decode', undefined] as const)
      await router.execute({ model: 'm', text, ...(leg ? { leg } : {}) }, async (_w, context) => {
        matched.push(context.matched);
        return { status: 200 };
      });
    expect(matched[0] ?? 0).toBe(0);
    expect(matched[1]).toBeGreaterThan(0.9);
    expect(matched[2]).toBeUndefined();
  });

  it('with admission, a prefill leg inside an admitted decode leg never waits for admission', async () => {
    // One request in flight per worker: the fleet is full while the decode leg holds its lease.
    const { router } = await fleet({ admission: { maxInFlight: 1, maxWaitMs: 2_000 } });
    const others = Array.from({ length: 5 }, (_, i) =>
      router.admit({ model: 'm' }).then((lease) => {
        expect(lease, `lease ${i}`).toBeDefined();
        return lease!;
      }),
    );
    const held = await Promise.all(others);
    const legs: string[] = [];
    const gated = router.execute({ model: 'm', leg: 'decode' }, async (decode) => {
      legs.push(decode.type);
      await router.execute({ model: 'm', leg: 'prefill' }, async (prefill) => {
        legs.push(prefill.type);
        return { status: 200 };
      });
      return { status: 200 };
    });
    // The decode leg waits for room like any request; once admitted (a decode worker freed, which
    // it takes), its prefill leg runs at once, though the fleet is full again.
    expect(legs).toEqual([]);
    const freed = held.find((lease) => lease.worker.type === 'decode')!;
    freed.release();
    await gated;
    expect(legs).toEqual(['decode', 'prefill']);
    for (const lease of held) if (lease !== freed) lease.release();
  });

  it('selectPair still picks one worker of each type', async () => {
    const { router } = await fleet();
    const pair = router.selectPair({ model: 'm' })!;
    expect(pair.prefill.worker.type).toBe('prefill');
    expect(pair.decode.worker.type).toBe('decode');
    pair.prefill.release();
    pair.decode.release();
  });
});

describe('WorkerRegistry.getByModel(model, type)', () => {
  it('lists the model’s workers of that type, the same array until membership changes', async () => {
    const { registry } = await fleet();
    const prefill = registry.getByModel('m', 'prefill');
    expect(prefill.map((w) => w.type)).toEqual(['prefill', 'prefill']);
    expect(registry.getByModel('m', 'prefill')).toBe(prefill);
    expect(registry.getByModel(undefined, 'prefill')).toHaveLength(3);
    expect(registry.getByModel('nothing', 'decode')).toHaveLength(0);
    await registry.register({ url: 'http://10.0.2.1:8000', models: ['m'], type: 'prefill' });
    expect(registry.getByModel('m', 'prefill')).toHaveLength(3);
    expect(() => registry.getByModel('m', 'both' as never)).toThrow(/type/);
  });

  it('is getByModel filtered by type, whatever the fleet (property)', async () => {
    const types = ['regular', 'prefill', 'decode'] as const;
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom(...types), fc.constantFrom('a', 'b', '')), {
          maxLength: 12,
        }),
        async (specs) => {
          const registry = await WorkerRegistry.create();
          try {
            for (const [i, [type, model]] of specs.entries())
              await registry.register({
                url: `http://10.1.0.${i + 1}:8000`,
                models: model === '' ? [] : [model],
                type,
              });
            for (const model of ['a', 'b', undefined])
              for (const type of types)
                expect(registry.getByModel(model, type)).toEqual(
                  registry.getByModel(model).filter((w) => w.type === type),
                );
          } finally {
            registry.close();
          }
        },
      ),
      { numRuns: 50 },
    );
  });
});
