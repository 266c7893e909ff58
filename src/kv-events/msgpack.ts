/**
 * The optional peer `@msgpack/msgpack`, loaded when first asked for, so `fleetroute/kv-events`
 * imports without it.
 *
 * @module
 */
import { optionalPeer } from '../core/optional-peer.js';

/** Decodes one msgpack payload: what {@link decodeKvEventBatch} takes as `decode`. @public */
export type MsgpackDecode = (bytes: Uint8Array) => unknown;

type MsgpackModule = {
  decode: (bytes: Uint8Array, options: { useBigInt64: boolean }) => unknown;
};

const loadModule = optionalPeer<MsgpackModule>({
  name: '@msgpack/msgpack',
  range: '^3.1.3',
  by: 'fleetroute/kv-events',
  usable: (m) => typeof m.decode === 'function',
});

let decoder: MsgpackDecode | undefined;

/**
 * Loads `@msgpack/msgpack` (an optional peer dependency of `fleetroute/kv-events`) once per
 * process and returns its `decode`, set to read 64-bit integers as bigints (engine block hashes
 * exceed 2⁵³). Pass the result to {@link decodeKvEventBatch}.
 *
 * @returns the decode function (the same one on every call).
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) when the package is not
 *   installed, naming it and the command that installs it. A later call tries again.
 */
export async function loadMsgpackDecode(): Promise<MsgpackDecode> {
  const module = await loadModule();
  decoder ??= (bytes: Uint8Array) => module.decode(bytes, { useBigInt64: true });
  return decoder;
}
