/**
 * The optional peer `@msgpack/msgpack`, loaded when first asked for, so `fleetroute/kv-events`
 * imports without it.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';

/** Decodes one msgpack payload: what {@link decodeKvEventBatch} takes as `decode`. @public */
export type MsgpackDecode = (bytes: Uint8Array) => unknown;

const PACKAGE = '@msgpack/msgpack';

let loading: Promise<MsgpackDecode> | undefined;

/**
 * Loads `@msgpack/msgpack` (an optional peer dependency of `fleetroute/kv-events`) once per
 * process and returns its `decode`, set to read 64-bit integers as bigints (engine block hashes
 * exceed 2⁵³). Pass the result to {@link decodeKvEventBatch}.
 *
 * @returns the decode function (the same one on every call).
 * @throws {@link FleetRouteError} `MISSING_DEPENDENCY` (as a rejection) when the package is not
 *   installed, naming it and the command that installs it. A later call tries again.
 */
export function loadMsgpackDecode(): Promise<MsgpackDecode> {
  loading ??= import(PACKAGE).then(
    (module: { decode: (bytes: Uint8Array, options: { useBigInt64: boolean }) => unknown }) => {
      const decode = module.decode;
      return (bytes: Uint8Array) => decode(bytes, { useBigInt64: true });
    },
    (cause: unknown) => {
      loading = undefined;
      throw new FleetRouteError(
        'MISSING_DEPENDENCY',
        `fleetroute/kv-events needs the optional peer dependency ${PACKAGE}: npm install ${PACKAGE}@^3.1.3`,
        { cause },
      );
    },
  );
  return loading;
}
