import { describe, expect, it } from 'vitest';
import { HashRing } from '../../src/index.js';
import { expectConsistent, recordedRegistry } from '../support/fixtures.js';

describe('WorkerIndex rings (through the registry)', () => {
  it('builds rings lazily: registering N workers builds none, the first read builds one', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    for (let i = 1; i <= 50; i++) await registry.register({ url: `h:${i}`, models: ['m'] });
    expect(registry.stats().ringsBuilt).toBe(0);

    // Act
    const ring = registry.getHashRing('m');
    const again = registry.getHashRing('m');

    // Assert
    expect(registry.stats().ringsBuilt).toBe(1);
    expect(again).toBe(ring);
    expect(ring.workerCount).toBe(50);
  });

  it('returns the same ring object until the model membership changes, then a new one', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['b'] });
    const ringA = registry.getHashRing('a');
    const ringB = registry.getHashRing('b');

    // Act
    await registry.transitionStatus(a.id, 'draining');
    const afterStatus = registry.getHashRing('a');
    await registry.register({ url: 'h:3', models: ['a'] });

    // Assert
    expect(afterStatus).toBe(ringA);
    expect(registry.getHashRing('a')).not.toBe(ringA);
    expect(registry.getHashRing('a').urls).toEqual(['http://h:1', 'http://h:3']);
    expect(registry.getHashRing('b')).toBe(ringB);
  });

  it('reuses a ring when a replace keeps the same URLs', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['a', 'b'] });
    const ring = registry.getHashRing('a');
    const all = registry.getHashRing();
    const built = registry.stats().ringsBuilt;

    // Act
    await registry.replace(a.id, { url: 'h:1', models: ['a'], labels: { v: '99' } });

    // Assert
    expect(registry.getHashRing('a')).toBe(ring);
    expect(registry.getHashRing()).toBe(all);
    expect(registry.stats().ringsBuilt).toBe(built);
  });

  it('every ring holds exactly its model workers, named plus wildcard', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['a', 'b'] });
    await registry.register({ url: 'h:3', models: ['c'] });
    await registry.register({ url: 'h:4' });

    // Act / Assert
    expect(registry.getHashRing('a').urls).toEqual(['http://h:1', 'http://h:2', 'http://h:4']);
    expect(registry.getHashRing('b').urls).toEqual(['http://h:2', 'http://h:4']);
    expect(registry.getHashRing('c').urls).toEqual(['http://h:3', 'http://h:4']);
    expect(registry.getHashRing('unknown').urls).toEqual(['http://h:4']);
    expectConsistent(registry);
  });

  it('an unknown model with no wildcard workers gets an empty ring', async () => {
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['b'] });

    const ring = registry.getHashRing('unknown');

    expect(ring).toBeInstanceOf(HashRing);
    expect(ring.workerCount).toBe(0);
    expect(ring.find('k')).toBeUndefined();
  });

  it('an empty registry has an empty wildcard ring', async () => {
    const { registry } = await recordedRegistry();
    expect(registry.getHashRing().size).toBe(0);
    expect(registry.getHashRing('m').size).toBe(0);
  });

  it('rings use the registry virtualNodes and the public placement', async () => {
    // Arrange
    const { registry } = await recordedRegistry({ virtualNodes: 20 });
    await registry.register({ url: 'h:1', models: ['m'] });
    await registry.register({ url: 'h:2', models: ['m'] });
    const standalone = await HashRing.create(['http://h:2', 'http://h:1'], { virtualNodes: 20 });

    // Act
    const ring = registry.getHashRing('m');

    // Assert
    expect(ring.size).toBe(40);
    for (let i = 0; i < 500; i++) expect(ring.find(`k${i}`)).toBe(standalone.find(`k${i}`));
  });

  it('rebuilds a model ring after the model disappears and comes back', async () => {
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    await registry.register({ url: 'h:2', models: ['b'] });
    const before = registry.getHashRing('a');

    await registry.remove(a.id);
    expect(registry.getHashRing('a').workerCount).toBe(0);
    await registry.register({ url: 'h:3', models: ['a'] });

    expect(registry.getHashRing('a')).not.toBe(before);
    expect(registry.getHashRing('a').urls).toEqual(['http://h:3']);
  });
});

describe('WorkerIndex collections (through the registry)', () => {
  it('type and connection arrays keep their identity until their membership changes', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    await registry.register({ url: 'h:1', type: 'prefill' });
    await registry.register({ url: 'grpc://h:2', type: 'decode' });
    const prefill = registry.getPrefillWorkers();
    const grpc = registry.getByConnection('grpc');

    // Act
    await registry.register({ url: 'h:3', type: 'decode' });

    // Assert
    expect(registry.getPrefillWorkers()).toBe(prefill);
    expect(registry.getByConnection('grpc')).toBe(grpc);
    expect(registry.getDecodeWorkers()).toHaveLength(2);
  });

  it('getAll keeps its identity across reads and changes it after any membership change', async () => {
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1' });
    const first = registry.getAll();
    expect(registry.getAll()).toBe(first);

    await registry.remove(a.id);

    expect(registry.getAll()).not.toBe(first);
    expect(registry.getAll()).toEqual([]);
  });

  it('a replace keeps the worker position in registration order', async () => {
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1' });
    const b = await registry.register({ url: 'h:2' });

    const next = await registry.replace(a.id, { url: 'h:1', labels: { v: '1' } });

    expect(registry.getAll()).toEqual([next, b]);
  });

  it('a wildcard worker joining or leaving updates every model array', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const a = await registry.register({ url: 'h:1', models: ['a'] });
    const b = await registry.register({ url: 'h:2', models: ['b'] });
    const beforeA = registry.getByModel('a');

    // Act
    const wild = await registry.register({ url: 'h:3' });
    const withWild = [registry.getByModel('a'), registry.getByModel('b')];
    await registry.remove(wild.id);

    // Assert
    expect(withWild).toEqual([
      [a, wild],
      [b, wild],
    ]);
    expect(registry.getByModel('a')).not.toBe(beforeA);
    expect(registry.getByModel('a')).toEqual([a]);
    expect(registry.getByModel('b')).toEqual([b]);
  });
});
