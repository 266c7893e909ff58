import { describe, expect, it } from 'vitest';
import xxhash from 'xxhash-wasm';
import { loadHasher } from '../../src/core/hash.js';

describe('Hasher', () => {
  it('loads once per process: every call shares one instance', async () => {
    const [a, b] = await Promise.all([loadHasher(), loadHasher()]);
    expect(a).toBe(b);
  });

  it.each(['', 'a', 'http://10.0.0.1:8000#0', 'é😀', 'x'.repeat(10_000)])(
    'hashString(%j) splits xxh64 (seed 0) into hi and lo 32-bit halves',
    async (input) => {
      // Arrange
      const hasher = await loadHasher();
      const reference = (await xxhash()).h64(input);

      // Act
      hasher.hashString(input);

      // Assert
      expect(hasher.hi).toBe(Number(reference >> 32n));
      expect(hasher.lo).toBe(Number(reference & 0xffff_ffffn));
      expect(hasher.h64(input)).toBe(reference);
    },
  );

  it('hashBytes hashes raw bytes like h64 hashes the same UTF-8 string', async () => {
    // Arrange
    const hasher = await loadHasher();
    const text = 'prefix-cache-key';
    const expected = hasher.h64(text);

    // Act
    hasher.hashBytes(new TextEncoder().encode(text));

    // Assert
    expect(hasher.hi).toBe(Number(expected >> 32n));
    expect(hasher.lo).toBe(Number(expected & 0xffff_ffffn));
  });

  it('matches the published xxh64 test vector of the empty string', async () => {
    const hasher = await loadHasher();
    expect(hasher.h64('')).toBe(0xef46db3751d8e999n);
  });
});
