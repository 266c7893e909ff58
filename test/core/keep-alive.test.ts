import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeepAlive } from '../../src/core/keep-alive.js';

describe('KeepAlive', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('one timer while any wait holds, none once the last one released', () => {
    const keepAlive = new KeepAlive();
    expect(vi.getTimerCount()).toBe(0);

    keepAlive.hold();
    keepAlive.hold();
    expect(vi.getTimerCount()).toBe(1);
    keepAlive.release();
    expect(vi.getTimerCount()).toBe(1);
    keepAlive.release();

    expect(vi.getTimerCount()).toBe(0);
    expect(keepAlive.holds).toBe(0);
  });

  it('a release without a hold does nothing, so a later hold still holds', () => {
    const keepAlive = new KeepAlive();
    keepAlive.release();
    keepAlive.hold();
    expect(keepAlive.holds).toBe(1);
    expect(vi.getTimerCount()).toBe(1);
    keepAlive.release();
    expect(vi.getTimerCount()).toBe(0);
  });

  it('during(promise) holds until it settles, resolved or rejected, and settles like it', async () => {
    const keepAlive = new KeepAlive();
    let resolve!: (value: number) => void;
    let reject!: (error: Error) => void;
    const ok = keepAlive.during(new Promise<number>((r) => (resolve = r)));
    const bad = keepAlive.during(new Promise<number>((_, r) => (reject = r)));
    expect(keepAlive.holds).toBe(2);

    resolve(7);
    expect(await ok).toBe(7);
    expect(keepAlive.holds).toBe(1);
    reject(new Error('boom'));
    await expect(bad).rejects.toThrow('boom');

    expect(keepAlive.holds).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
