/**
 * How an adapter loads its optional peer dependency: on first use, once per process, so the
 * package imports without it and names it when it is missing.
 *
 * @module
 * @internal
 */
import { FleetRouteError } from './errors.js';

/** @internal What {@link optionalPeer} needs to know about a package. */
export interface OptionalPeer<T> {
  /** The package name, as `import()` takes it. */
  readonly name: string;
  /** The version range to install (`^6.8.0`). */
  readonly range: string;
  /** The entry point that needs it (`fleetroute/kv-events`), and for what (`to subscribe to engines`). */
  readonly by: string;
  /** Whether a module namespace (or its CommonJS `default`) is the package as expected. */
  readonly usable: (module: T) => boolean;
}

/**
 * @internal A loader of `peer`: the first call imports it (ESM, or CommonJS through its
 * `default`), later calls share that promise. Rejects with {@link FleetRouteError}
 * `MISSING_DEPENDENCY` naming the package and `npm install <name>@<range>` when it is not
 * installed (a later call tries again) or not what was expected.
 */
export function optionalPeer<T>(peer: OptionalPeer<T>): () => Promise<T> {
  const install = `npm install ${peer.name}@${peer.range}`;
  let loading: Promise<T> | undefined;
  return () => {
    loading ??= import(peer.name).then(
      (module: T & { default?: T }) => {
        const found = peer.usable(module) ? module : module.default;
        if (found === undefined || !peer.usable(found)) {
          throw new FleetRouteError(
            'MISSING_DEPENDENCY',
            `${peer.by} could not read the ${peer.name} package it needs: ${install}`,
          );
        }
        return found;
      },
      (cause: unknown) => {
        loading = undefined;
        throw new FleetRouteError(
          'MISSING_DEPENDENCY',
          `${peer.by} needs the optional peer dependency ${peer.name}: ${install}`,
          { cause },
        );
      },
    );
    return loading;
  };
}
