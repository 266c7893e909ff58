import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { StreamItem, WorkerEvent } from '../../src/index.js';
import { EventStream } from '../../src/registry/event-stream.js';
import { recordedRegistry, throwsCode } from '../support/fixtures.js';

/**
 * Reads up to `n` items from an iterator, stopping early when it ends or when no item arrives
 * within 200 ms (so a broken stream fails the assertion instead of hanging the test).
 */
async function take(iterator: AsyncIterator<StreamItem>, n: number): Promise<StreamItem[]> {
  const items: StreamItem[] = [];
  for (let i = 0; i < n; i++) {
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<'idle'>((resolve) => {
      timer = setTimeout(() => resolve('idle'), 200);
    });
    const result = await Promise.race([iterator.next(), idle]);
    clearTimeout(timer);
    if (result === 'idle' || result.done) break;
    items.push(result.value);
  }
  return items;
}

function seqs(items: readonly StreamItem[]): (number | string)[] {
  return items.map((item) => (item.type === 'lagged' ? `lagged:${item.missed}` : item.seq));
}

/** A settled flag for a pending promise. */
function track<T>(promise: Promise<T>): { settled: boolean; value?: T } {
  const state: { settled: boolean; value?: T } = { settled: false };
  promise.then((value) => {
    state.settled = true;
    state.value = value;
  });
  return state;
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('WorkerRegistry.events', { timeout: 5_000 }, () => {
  it('yields every event in order, the same objects the listeners get', async () => {
    // Arrange
    const { registry, events } = await recordedRegistry();
    const stream = registry.events();

    // Act
    const w = await registry.register({ url: 'h:1' });
    await registry.transitionStatus(w.id, 'draining');
    await registry.replace(w.id, { url: 'h:1', labels: { v: '1' } });
    await registry.remove(w.id);
    const items = await take(stream, 4);

    // Assert
    expect(items.map((i) => i.type)).toEqual([
      'registered',
      'statusChanged',
      'replaced',
      'removed',
    ]);
    expect(items).toEqual(events);
    items.forEach((item, i) => {
      expect(item).toBe(events[i]);
    });
  });

  it('a pending next() resolves when the next event arrives', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const stream = registry.events();
    const pending = track(stream.next());
    await tick();
    expect(pending.settled).toBe(false);

    // Act
    const w = await registry.register({ url: 'h:1' });
    await tick();

    // Assert
    expect(pending.settled).toBe(true);
    expect(pending.value).toEqual({
      value: expect.objectContaining({ workerId: w.id }),
      done: false,
    });
  });

  it('several next() calls in flight settle in the order they were made, one event each', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const stream = registry.events();
    const first = track(stream.next());
    const second = track(stream.next());
    const third = track(stream.next());

    // Act
    const a = await registry.register({ url: 'h:1' });
    const b = await registry.register({ url: 'h:2' });
    await tick();

    // Assert
    expect(first.value).toEqual({
      value: expect.objectContaining({ workerId: a.id }),
      done: false,
    });
    expect(second.value).toEqual({
      value: expect.objectContaining({ workerId: b.id }),
      done: false,
    });
    expect(third.settled).toBe(false);
  });

  it('close() settles every next() still in flight as done', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const stream = registry.events();
    const pending = [stream.next(), stream.next(), stream.next()];

    // Act
    registry.close();

    // Assert
    expect(await Promise.all(pending)).toEqual([
      { value: undefined, done: true },
      { value: undefined, done: true },
      { value: undefined, done: true },
    ]);
  });

  it('a slow consumer past its buffer reads { type: lagged, missed } and then the newest events', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const stream = registry.events({ bufferSize: 3 });

    // Act
    for (let i = 1; i <= 5; i++) await registry.register({ url: `h:${i}` });
    const first = await take(stream, 4);
    await registry.register({ url: 'h:6' });
    const after = await take(stream, 1);

    // Assert
    expect(first).toEqual([
      { type: 'lagged', missed: 2 },
      expect.objectContaining({ seq: 3 }),
      expect.objectContaining({ seq: 4 }),
      expect.objectContaining({ seq: 5 }),
    ]);
    expect(seqs(after)).toEqual([6]);
  });

  it('counts every dropped event in one lagged item however far behind the consumer fell', async () => {
    const { registry } = await recordedRegistry();
    const stream = registry.events({ bufferSize: 2 });

    for (let i = 1; i <= 50; i++) await registry.register({ url: `h:${i}` });

    expect(seqs(await take(stream, 3))).toEqual(['lagged:48', 49, 50]);
  });

  it('lags again after a resync when the consumer falls behind a second time', async () => {
    const { registry } = await recordedRegistry();
    const stream = registry.events({ bufferSize: 1 });

    for (let i = 1; i <= 3; i++) await registry.register({ url: `h:${i}` });
    const firstRound = await take(stream, 2);
    for (let i = 4; i <= 5; i++) await registry.register({ url: `h:${i}` });
    const secondRound = await take(stream, 2);

    expect(seqs(firstRound)).toEqual(['lagged:2', 3]);
    expect(seqs(secondRound)).toEqual(['lagged:1', 5]);
  });

  it('uses the registry eventBufferSize when the subscriber gives none', async () => {
    const { registry } = await recordedRegistry({ eventBufferSize: 2 });
    const stream = registry.events();

    for (let i = 1; i <= 4; i++) await registry.register({ url: `h:${i}` });

    expect(seqs(await take(stream, 3))).toEqual(['lagged:2', 3, 4]);
  });

  it('gives each subscriber its own buffer: one lagging does not affect another', async () => {
    const { registry } = await recordedRegistry();
    const slow = registry.events({ bufferSize: 1 });
    const fast = registry.events({ bufferSize: 10 });

    for (let i = 1; i <= 3; i++) await registry.register({ url: `h:${i}` });

    expect(seqs(await take(fast, 3))).toEqual([1, 2, 3]);
    expect(seqs(await take(slow, 2))).toEqual(['lagged:2', 3]);
  });

  it('an AbortSignal ends the iterator: a pending next() resolves done and the subscription goes', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const controller = new AbortController();
    const baseline = registry.stats().subscribers;
    const stream = registry.events({ signal: controller.signal });
    const pending = stream.next();
    expect(registry.stats().subscribers).toBe(baseline + 1);

    // Act
    controller.abort();

    // Assert
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
    expect(registry.stats().subscribers).toBe(baseline);
    await registry.register({ url: 'h:1' });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('an already-aborted signal gives an iterator that is done at once and never subscribes', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const baseline = registry.stats().subscribers;

    // Act
    const stream = registry.events({ signal: AbortSignal.abort() });
    await registry.register({ url: 'h:1' });

    // Assert
    expect(await stream.next()).toEqual({ value: undefined, done: true });
    expect(registry.stats().subscribers).toBe(baseline);
  });

  it('break out of for-await unsubscribes and removes its abort listener', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const controller = new AbortController();
    const baseline = registry.stats().subscribers;
    const stream = registry.events({ signal: controller.signal });
    await registry.register({ url: 'h:1' });
    await registry.register({ url: 'h:2' });
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(1);

    // Act
    const seen: number[] = [];
    for await (const item of stream) {
      if (item.type !== 'lagged') seen.push(item.seq);
      break;
    }

    // Assert
    expect(seen).toEqual([1]);
    expect(registry.stats().subscribers).toBe(baseline);
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0);
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('return() discards buffered events and ends the iterator', async () => {
    const { registry } = await recordedRegistry();
    const stream = registry.events();
    await registry.register({ url: 'h:1' });

    expect(await stream.return?.()).toEqual({ value: undefined, done: true });
    expect(await stream.next()).toEqual({ value: undefined, done: true });
  });

  it('close() ends every iterator after its buffered events, and resolves a pending next()', async () => {
    // Arrange
    const { registry } = await recordedRegistry();
    const buffered = registry.events();
    const waiting = registry.events();
    await registry.register({ url: 'h:1' });
    await take(waiting, 1);
    const pending = waiting.next();

    // Act
    registry.close();

    // Assert
    expect(await pending).toEqual({ value: undefined, done: true });
    expect(seqs(await take(buffered, 5))).toEqual([1]);
    expect(await buffered.next()).toEqual({ value: undefined, done: true });
    expect(registry.stats().subscribers).toBe(0);
  });

  it('supports the late-subscriber pattern: subscribe, snapshot, then skip seq <= snapshot.seq', async () => {
    // Arrange
    const { registry } = await recordedRegistry({ eventBufferSize: 100 });
    await registry.register({ url: 'h:1' });
    const stream = registry.events();
    await registry.register({ url: 'h:2' });
    const snapshot = registry.snapshot();
    await registry.register({ url: 'h:3' });

    // Act
    const fresh = (await take(stream, 2)).filter(
      (item): item is WorkerEvent => item.type !== 'lagged' && item.seq > snapshot.seq,
    );

    // Assert
    expect(snapshot.workers.map((w) => w.url)).toEqual(['http://h:1', 'http://h:2']);
    expect(fresh.map((e) => e.seq)).toEqual([3]);
  });

  it.each<[string, unknown]>([
    ['events.bufferSize', { bufferSize: 0 }],
    ['events.bufferSize', { bufferSize: 1.5 }],
    ['events.bufferSize', { bufferSize: Number.NaN }],
    ['events.bufferSize', { bufferSize: '8' }],
    ['events.signal', { signal: { aborted: false } }],
    ['events options', null],
    ['events options', 5],
  ])('rejects a bad %s with INVALID_ARGUMENT and subscribes nothing', async (field, options) => {
    const { registry } = await recordedRegistry();
    const baseline = registry.stats().subscribers;

    const error = throwsCode(() => registry.events(options as never), 'INVALID_ARGUMENT');

    expect(error.message.startsWith(field)).toBe(true);
    expect(registry.stats().subscribers).toBe(baseline);
  });

  it('is its own async iterator', async () => {
    const { registry } = await recordedRegistry();
    const stream = registry.events();
    expect(stream[Symbol.asyncIterator]()).toBe(stream);
    await stream.return?.();
  });
});

describe('EventStream (internal buffer)', () => {
  const event = (seq: number): WorkerEvent =>
    ({ type: 'removed', seq, workerId: `w${seq}` }) as unknown as WorkerEvent;

  it('end() lets buffered events drain, then reports done; closed flips at once', async () => {
    // Arrange
    const closedWith: EventStream[] = [];
    const stream = new EventStream(4, (s) => closedWith.push(s));
    stream.push(event(1));
    stream.push(event(2));

    // Act
    stream.end();
    stream.push(event(3));

    // Assert
    expect(stream.closed).toBe(true);
    expect(closedWith).toEqual([stream]);
    expect(seqs(await take(stream, 5))).toEqual([1, 2]);
  });

  it('close() is idempotent and calls onClose once', () => {
    const calls: number[] = [];
    const stream = new EventStream(1, () => calls.push(1));
    stream.close();
    stream.close();
    stream.end();
    expect(calls).toEqual([1]);
  });

  it('keeps working across many wrap-arounds of its ring buffer', async () => {
    const stream = new EventStream(3, () => undefined);
    const seen: (number | string)[] = [];
    for (let seq = 1; seq <= 30; seq++) {
      stream.push(event(seq));
      if (seq % 2 === 0) seen.push(...seqs(await take(stream, 2)));
    }
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => i + 1));
  });
});
