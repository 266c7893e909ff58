/**
 * The version of the running fleetroute, read from its package.json.
 *
 * @module
 * @internal
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/**
 * @internal The `version` of the nearest package.json named `fleetroute` above this module:
 * `../../package.json` from the sources (`src/cli/`), `../package.json` from the bundled
 * `dist/cli.js`. `'unknown'` when none is found. Reads the disk once per process, then returns
 * the cached value.
 */
export function packageVersion(): string {
  if (cached !== undefined) return cached;
  cached = 'unknown';
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let depth = 0; depth < 6; depth++) {
    try {
      const json = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
        name?: unknown;
        version?: unknown;
      };
      if (json.name === 'fleetroute' && typeof json.version === 'string') {
        cached = json.version;
        break;
      }
    } catch {
      // no readable package.json here: look further up
    }
    const parent = dirname(dir);
    if (parent === dir) break;
    dir = parent;
  }
  return cached;
}
