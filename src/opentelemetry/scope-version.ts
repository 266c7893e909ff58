/**
 * The version of the running fleetroute, for the instrumentation scope of its tracer and meter.
 *
 * @module
 * @internal
 */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | null | undefined;

/**
 * @internal The `version` of the nearest package.json named `fleetroute` above this module
 * (`../package.json` from `dist/`, `../../package.json` from `src/opentelemetry/`);
 * `undefined` when none is readable. Reads the disk once per process.
 */
export function scopeVersion(): string | undefined {
  if (cached !== undefined) return cached ?? undefined;
  cached = null;
  try {
    const here =
      (import.meta as { url?: string }).url ??
      (typeof __filename === 'string' ? __filename : undefined);
    if (here === undefined) return undefined;
    let dir = dirname(here.startsWith('file:') ? fileURLToPath(here) : here);
    for (let depth = 0; depth < 4; depth++) {
      const json = readJson(join(dir, 'package.json'));
      if (json?.name === 'fleetroute' && typeof json.version === 'string') {
        cached = json.version;
        break;
      }
      dir = dirname(dir);
    }
  } catch {
    // no location for this module: no version
  }
  return cached ?? undefined;
}

function readJson(path: string): { name?: unknown; version?: unknown } | undefined {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as { name?: unknown; version?: unknown };
  } catch {
    return undefined;
  }
}
