import { describe, expect, it, vi } from 'vitest';
import { IdentityMemo } from '../../src/core/identity-memo.js';

describe('IdentityMemo', () => {
  it('builds once per key object, answers the last key and older ones, and forgets on clear', () => {
    const memo = new IdentityMemo<object, number>();
    const build = vi.fn((key: object) => Object.keys(key).length);
    const a = { x: 1 };
    const b = { x: 1, y: 2 };
    expect(memo.get(a, build)).toBe(1);
    expect(memo.get(a, build)).toBe(1);
    expect(memo.get(b, build)).toBe(2);
    expect(memo.get(a, build)).toBe(1);
    expect(build).toHaveBeenCalledTimes(2);
    expect(memo.peek({ x: 1 })).toBeUndefined(); // identity, not equality
    memo.set(a, 7);
    expect(memo.peek(a)).toBe(7);
    memo.clear();
    expect(memo.peek(a)).toBeUndefined();
    expect(memo.get(a, build)).toBe(1);
    expect(build).toHaveBeenCalledTimes(3);
  });
});
