/**
 * The wildcard ring: a ring over
 * every worker, deduplicated by URL, that is the very same object as the model's ring when the
 * registry serves exactly one model.
 */
import { describe, expect, it } from 'vitest';
import { HashRing, type WorkerRegistry, type WorkerSpec } from '../../src/index.js';
import { expectConsistent, recordedRegistry } from '../support/fixtures.js';

const VN = 150;

async function registryWith(specs: readonly WorkerSpec[]): Promise<WorkerRegistry> {
  const { registry } = await recordedRegistry();
  for (const spec of specs) await registry.register(spec);
  return registry;
}

describe('wildcard ring', () => {
  it('is the only model ring: the same object, whichever is read first', async () => {
    // Arrange
    const specs = [
      { url: 'h:1', models: ['llama'] },
      { url: 'h:2', models: ['llama'] },
      { url: 'h:3', models: ['llama'] },
    ];
    const modelFirst = await registryWith(specs);
    const wildcardFirst = await registryWith(specs);

    // Act
    const ringM = modelFirst.getHashRing('llama');
    const ringW = wildcardFirst.getHashRing();

    // Assert
    expect(modelFirst.getHashRing()).toBe(ringM);
    expect(wildcardFirst.getHashRing('llama')).toBe(ringW);
    expect(modelFirst.getHashRing('')).toBe(ringM);
    expect(modelFirst.getHashRing('*')).toBe(ringM);
    expect(ringM.workerCount).toBe(3);
    expect(modelFirst.stats().ringsBuilt).toBe(1);
  });

  it('is the only model ring also when wildcard workers serve alongside that model', async () => {
    const registry = await registryWith([{ url: 'h:1', models: ['llama'] }, { url: 'h:2' }]);
    expect(registry.getHashRing()).toBe(registry.getHashRing('llama'));
    expect(registry.getHashRing().urls).toEqual(['http://h:1', 'http://h:2']);
  });

  it('unions all models: its worker count is the sum over models of disjoint workers', async () => {
    // Arrange
    const registry = await registryWith([
      { url: 'h:1', models: ['a'] },
      { url: 'h:2', models: ['a'] },
      { url: 'h:3', models: ['b'] },
      { url: 'h:4', models: ['b'] },
      { url: 'h:5', models: ['c'] },
    ]);

    // Act
    const wildcard = registry.getHashRing();

    // Assert
    const sum = ['a', 'b', 'c'].reduce((n, m) => n + registry.getHashRing(m).workerCount, 0);
    expect(wildcard.workerCount).toBe(sum);
    expect(wildcard.workerCount).toBe(5);
    expect(wildcard).not.toBe(registry.getHashRing('a'));
    for (const model of ['a', 'b', 'c']) {
      for (const url of registry.getHashRing(model).urls) expect(wildcard.has(url)).toBe(true);
    }
  });

  it('holds a worker serving two models once, with one share of virtual nodes', async () => {
    // Arrange
    const registry = await registryWith([
      { url: 'h:1', models: ['a', 'b'] },
      { url: 'h:2', models: ['a'] },
      { url: 'h:3', models: ['b'] },
    ]);

    // Act
    const wildcard = registry.getHashRing();

    // Assert
    expect(wildcard.workerCount).toBe(3);
    expect(wildcard.size).toBe(3 * VN);
    expect(wildcard.urls.filter((u) => u === 'http://h:1')).toHaveLength(1);
    const share = new Map<string, number>();
    for (let i = 0; i < 9000; i++) {
      const url = wildcard.find(`k${i}`)!;
      share.set(url, (share.get(url) ?? 0) + 1);
    }
    expect(share.get('http://h:1')).toBeLessThan(4500);
  });

  it('follows removals until it is empty', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    const b = await registry.register({ url: 'h:2', models: ['b'] });
    const c = await registry.register({ url: 'h:3', models: ['a', 'b'] });
    expect(registry.getHashRing().workerCount).toBe(3);

    // Act / Assert
    await registry.remove(c.id);
    expect(registry.getHashRing().urls).toEqual(['http://h:1', 'http://h:2']);
    await registry.removeByUrl('h:2');
    expect(registry.getHashRing().urls).toEqual(['http://h:1']);
    expect(registry.getHashRing()).toBe(registry.getHashRing('a'));
    await registry.remove(a.id);
    expect(registry.getHashRing().workerCount).toBe(0);
    expect(registry.getHashRing().find('anything')).toBeUndefined();
    expect(b.live).toBe(false);
  });

  it('gives a model-less request a worker in a registry whose workers all name models', async () => {
    const registry = await registryWith([
      { url: 'h:1', models: ['a'] },
      { url: 'h:2', models: ['b'] },
    ]);

    for (let i = 0; i < 100; i++) {
      expect(['http://h:1', 'http://h:2']).toContain(registry.getHashRing().find(`session-${i}`));
    }
  });

  it('routes a key like a standalone ring over every URL (placement is the public one)', async () => {
    const registry = await registryWith([
      { url: 'h:1', models: ['a'] },
      { url: 'h:2', models: ['b'] },
      { url: 'h:3' },
    ]);
    const standalone = await HashRing.create(['http://h:3', 'http://h:1', 'http://h:2']);

    for (let i = 0; i < 1000; i++) {
      expect(registry.getHashRing().find(`k${i}`)).toBe(standalone.find(`k${i}`));
    }
  });

  interface Row {
    readonly name: string;
    readonly steps: (registry: WorkerRegistry) => Promise<unknown>;
    readonly urls: readonly string[];
    readonly sameAs?: string;
    readonly differsFrom?: string;
  }

  const rows: readonly Row[] = [
    {
      name: 'one model, then a second model appears: no longer the same object',
      steps: async (r) => {
        await r.register({ url: 'h:1', models: ['a'] });
        r.getHashRing('a');
        await r.register({ url: 'h:2', models: ['b'] });
      },
      urls: ['http://h:1', 'http://h:2'],
      differsFrom: 'a',
    },
    {
      name: 'two models, then one loses its last worker: the same object again',
      steps: async (r) => {
        await r.register({ url: 'h:1', models: ['a'] });
        await r.register({ url: 'h:2', models: ['b'] });
        r.getHashRing();
        await r.removeByUrl('h:2');
      },
      urls: ['http://h:1'],
      sameAs: 'a',
    },
    {
      name: 'a replace moves the only worker of b to a: one model left, the same object',
      steps: async (r) => {
        await r.register({ url: 'h:1', models: ['a'] });
        const b = await r.register({ url: 'h:2', models: ['b'] });
        r.getHashRing();
        await r.replace(b.id, { url: 'h:2', models: ['a'] });
      },
      urls: ['http://h:1', 'http://h:2'],
      sameAs: 'a',
    },
    {
      name: 'only wildcard workers: every model ring is the wildcard ring',
      steps: async (r) => {
        await r.register({ url: 'h:1' });
        await r.register({ url: 'h:2' });
      },
      urls: ['http://h:1', 'http://h:2'],
      sameAs: 'any-model',
    },
    {
      name: 'a dp-ranked pair counts as two workers',
      steps: async (r) => {
        await r.register({ url: 'h:1@0', models: ['a'] });
        await r.register({ url: 'h:1@1', models: ['b'] });
      },
      urls: ['http://h:1@0', 'http://h:1@1'],
      differsFrom: 'a',
    },
  ];

  it.each(rows)('$name', async ({ steps, urls, sameAs, differsFrom }) => {
    // Arrange
    const { registry } = await recordedRegistry();

    // Act
    await steps(registry);

    // Assert
    const wildcard = registry.getHashRing();
    expect(wildcard.urls).toEqual(urls);
    if (sameAs !== undefined) expect(registry.getHashRing(sameAs)).toBe(wildcard);
    if (differsFrom !== undefined) expect(registry.getHashRing(differsFrom)).not.toBe(wildcard);
    expectConsistent(registry);
  });
});
