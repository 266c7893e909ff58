/**
 * Block keys of a LoRA adapter's request: an engine's prefix cache keys blocks by the adapter
 * too (vLLM's block hashes include the LoRA name), so a prompt never matches blocks another
 * adapter, or the base model, computed.
 *
 * @module
 * @internal
 */
import { fmix32 } from '../core/fmix32.js';

/**
 * @internal Rekeys `keys` (from `blockKeys`, integers below 2^53) in place for `adapter`: equal
 * keys of one adapter stay equal, and keys of two adapters (or of an adapter and the base model)
 * differ up to a 2^-53 collision chance. O(keys + adapter length).
 */
export function keyByAdapter(keys: Float64Array, adapter: string): void {
  let a = 0x811c9dc5;
  let b = 0x9747b28c;
  for (let i = 0; i < adapter.length; i++) {
    const c = adapter.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
  }
  const salt = fmix32(a ^ 0x2545f491);
  const salt2 = fmix32(b);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const hi = Math.floor(key / 2_097_152);
    const lo = key - hi * 2_097_152;
    keys[i] = fmix32(hi ^ salt) * 2_097_152 + (fmix32(lo ^ salt2 ^ hi) >>> 11);
  }
}
