/**
 * Stable LSD radix sort of 64-bit keys held as (hi, lo) 32-bit halves, carrying a parallel
 * slot array along, with no comparator calls. Large inputs take four passes of 16-bit digits
 * (O(n + 65,536) each); small ones eight passes of 8-bit digits (O(n + 256) each), so a
 * 16-worker ring does not pay for 65,536 counters.
 *
 * @module
 * @internal
 */

const counts = new Uint32Array(65_537);
const SMALL = 65_536;

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
  const bits = n < SMALL ? 8 : 16;
  const mask = (1 << bits) - 1;
  const passes = 64 / bits;
  for (let pass = 0; pass < passes; pass++) {
    const word = pass < passes / 2 ? srcLo : srcHi;
    const shift = (pass % (passes / 2)) * bits;
    counts.fill(0, 0, mask + 2);
    for (let i = 0; i < n; i++) counts[((word[i]! >>> shift) & mask) + 1]!++;
    for (let d = 1; d <= mask + 1; d++) counts[d]! += counts[d - 1]!;
    for (let i = 0; i < n; i++) {
      const at = counts[(word[i]! >>> shift) & mask]!++;
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
