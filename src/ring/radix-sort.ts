/**
 * Stable LSD radix sort of 64-bit keys held as (hi, lo) 32-bit halves, carrying a parallel
 * slot array along. Four passes of 16 bits: O(n + 65,536) per pass, no comparator calls.
 *
 * @module
 * @internal
 */

const counts = new Uint32Array(65_537);

/**
 * Sorts `hi`/`lo`/`slot` in place by the unsigned 64-bit value `hi·2³² + lo`, ascending.
 * Equal keys keep their input order (the sort is stable).
 *
 * @internal
 */
export function radixSort64(
  hi: Uint32Array,
  lo: Uint32Array,
  slot: Uint16Array | Uint32Array,
): void {
  const n = hi.length;
  if (n < 2) return;
  let srcHi: Uint32Array = hi;
  let srcLo: Uint32Array = lo;
  let srcSlot: Uint16Array | Uint32Array = slot;
  let dstHi: Uint32Array = new Uint32Array(n);
  let dstLo: Uint32Array = new Uint32Array(n);
  let dstSlot: Uint16Array | Uint32Array =
    slot instanceof Uint16Array ? new Uint16Array(n) : new Uint32Array(n);
  for (let pass = 0; pass < 4; pass++) {
    const word = pass < 2 ? srcLo : srcHi;
    const shift = (pass & 1) * 16;
    counts.fill(0);
    for (let i = 0; i < n; i++) counts[((word[i]! >>> shift) & 0xffff) + 1]!++;
    for (let d = 1; d <= 65_536; d++) counts[d]! += counts[d - 1]!;
    for (let i = 0; i < n; i++) {
      const at = counts[(word[i]! >>> shift) & 0xffff]!++;
      dstHi[at] = srcHi[i]!;
      dstLo[at] = srcLo[i]!;
      dstSlot[at] = srcSlot[i]!;
    }
    [srcHi, dstHi] = [dstHi, srcHi];
    [srcLo, dstLo] = [dstLo, srcLo];
    [srcSlot, dstSlot] = [dstSlot, srcSlot];
  }
  // After an even number of passes the sorted data is back in the caller's arrays.
}
