import { describe, expect, it } from 'vitest';
import { UrlLocks } from '../../src/registry/url-locks.js';

/** A promise the test resolves by hand. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const tick = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('UrlLocks', () => {
  it('runs work on one URL one at a time, in call order', async () => {
    // Arrange: park the first holder inside the lock.
    const parked = gate();
    let parkFirst = true;
    const locks = new UrlLocks({
      insideLock: async () => {
        if (parkFirst) {
          parkFirst = false;
          await parked.promise;
        }
      },
    });
    const order: string[] = [];

    // Act
    const first = locks.run('u', () => order.push('first'));
    const second = locks.run('u', () => order.push('second'));
    await tick();
    const whileParked = [...order];
    parked.open();
    await Promise.all([first, second]);

    // Assert
    expect(whileParked).toEqual([]);
    expect(order).toEqual(['first', 'second']);
  });

  it('lets work on different URLs interleave', async () => {
    // Arrange
    const parked = gate();
    const locks = new UrlLocks({
      insideLock: async (url) => {
        if (url === 'slow') await parked.promise;
      },
    });
    const order: string[] = [];

    // Act
    const slow = locks.run('slow', () => order.push('slow'));
    await locks.run('fast', () => order.push('fast'));
    parked.open();
    await slow;

    // Assert
    expect(order).toEqual(['fast', 'slow']);
  });

  it('returns the value of the work', async () => {
    const locks = new UrlLocks();
    await expect(locks.run('u', () => 42)).resolves.toBe(42);
  });

  it('releases the lock when the work throws, and rejects with that error', async () => {
    // Arrange
    const locks = new UrlLocks();
    const boom = new Error('boom');

    // Act
    const failed = locks.run('u', () => {
      throw boom;
    });
    const next = locks.run('u', () => 'after');

    // Assert
    await expect(failed).rejects.toBe(boom);
    await expect(next).resolves.toBe('after');
    expect(locks.size).toBe(0);
  });

  it('counts URLs with a holder or a waiter and forgets them when idle', async () => {
    // Arrange
    const parked = gate();
    const locks = new UrlLocks({ insideLock: () => parked.promise });

    // Act
    const runs = [locks.run('a', () => 1), locks.run('a', () => 2), locks.run('b', () => 3)];
    const busy = locks.size;
    parked.open();
    await Promise.all(runs);

    // Assert
    expect(busy).toBe(2);
    expect(locks.size).toBe(0);
  });

  it('calls beforeLock before queueing for the lock', async () => {
    // Arrange
    const calls: string[] = [];
    const locks = new UrlLocks({
      beforeLock: async (url) => {
        calls.push(`before:${url}`);
      },
      insideLock: async (url) => {
        calls.push(`inside:${url}`);
      },
    });

    // Act
    await locks.run('u', () => calls.push('work'));

    // Assert
    expect(calls).toEqual(['before:u', 'inside:u', 'work']);
  });
});
