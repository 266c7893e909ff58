/**
 * The health loop against status changes made while a probe answer is being applied: the answer
 * was decided from the status the worker had when it arrived, and must not overwrite a status set
 * in between (an operator draining the worker).
 */
import { describe, expect, it } from 'vitest';
import { loadHasher } from '../../src/core/hash.js';
import { Router, type WorkerEvent, type WorkerStatus } from '../../src/index.js';
import type { LockHooks } from '../../src/registry/url-locks.js';
import { createRegistryWithHooks } from '../../src/registry/worker-registry.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

// A few milliseconds: enough for timers of 0 ms (the first probe) and every microtask.
const settle = () => new Promise<void>((resolve) => setTimeout(resolve, 5));

/** A registry whose n-th lock holder waits for `inside[n]` before it reads any state. */
async function parkable(defaultStatus: WorkerStatus) {
  const inside: (Promise<void> | undefined)[] = [];
  const hooks: LockHooks = {
    insideLock: async () => {
      await inside.shift();
    },
  };
  const registry = createRegistryWithHooks(await loadHasher(), { defaultStatus }, hooks);
  const events: WorkerEvent[] = [];
  registry.on('event', (e) => {
    events.push(e);
  });
  return { registry, events, inside };
}

/** A probe the test answers by hand. */
function handProbe() {
  const answers: ((ok: boolean) => void)[] = [];
  return {
    transport: {
      probe: () =>
        new Promise<boolean>((resolve) => {
          answers.push(resolve);
        }),
    },
    answer: (ok: boolean) => answers.shift()?.(ok),
    get waiting() {
      return answers.length;
    },
  };
}

describe('health answers never overwrite a status set meanwhile', { timeout: 10_000 }, () => {
  it.each<[WorkerStatus, boolean, WorkerStatus]>([
    // [status before, probe answer, the transition that answer calls for]
    ['pending', true, 'ready'],
    ['ready', false, 'not_ready'],
  ])(
    'a %s worker answering %s: draining set while the answer waits for the lock stays draining',
    async (initial, ok) => {
      // Arrange: the operator's drain holds the worker's lock when the probe answer arrives.
      const { registry, events, inside } = await parkable(initial);
      const worker = await registry.register({ url: 'http://h:8000' });
      const probe = handProbe();
      const router = new Router({
        registry,
        transport: probe.transport,
        health: { intervalMs: 60_000, successThreshold: 1, failureThreshold: 1 },
        loadPolling: false,
      });
      router.start();
      await settle();
      expect(probe.waiting).toBe(1);
      const held = gate();
      inside.push(held.promise); // the next lock holder (the drain) parks inside the lock
      const drain = registry.transitionStatus(worker.id, 'draining');
      await settle();

      // Act: the answer arrives (decided from `initial`), then the drain completes.
      probe.answer(ok);
      await settle();
      held.open();
      await drain;
      await settle();

      // Assert
      expect(registry.get(worker.id)!.status).toBe('draining');
      const changes = events.filter((e) => e.type === 'statusChanged');
      expect(changes.map((e) => (e.type === 'statusChanged' ? e.to : ''))).toEqual(['draining']);
      expect(router.select()).toBeUndefined();
      await router.close();
    },
  );

  it('transitionStatus with expectedStatus changes nothing (and emits nothing) when the status moved', async () => {
    const { registry, events } = await parkable('pending');
    const worker = await registry.register({ url: 'http://h:8000' });
    await registry.transitionStatus(worker.id, 'draining');
    events.length = 0;

    const result = await registry.transitionStatus(worker.id, 'ready', {
      expectedStatus: 'pending',
    });

    expect(result).toBeUndefined();
    expect(registry.get(worker.id)!.status).toBe('draining');
    expect(events).toEqual([]);
    expect(
      await registry.transitionStatus(worker.id, 'ready', { expectedStatus: 'draining' }),
    ).toEqual({ from: 'draining', to: 'ready' });
  });

  it('rejects an unknown expectedStatus with INVALID_ARGUMENT', async () => {
    const { registry } = await parkable('pending');
    const worker = await registry.register({ url: 'http://h:8000' });
    await expect(
      registry.transitionStatus(worker.id, 'ready', { expectedStatus: 'up' as never }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});
