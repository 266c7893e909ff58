/**
 * Without `prom-client` installed, the core, `fleetroute/http` and `fleetroute/prometheus` still
 * import, and `createPrometheusMetrics` rejects with `MISSING_DEPENDENCY` naming the package and
 * its install command. Run in a child process whose module resolution cannot find the package.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const fixture = (name: string) => fileURLToPath(new URL(`./fixtures/${name}`, import.meta.url));

describe('fleetroute/prometheus without prom-client', () => {
  it('imports, and createPrometheusMetrics rejects with MISSING_DEPENDENCY naming the package', async () => {
    const { stdout } = await run(
      process.execPath,
      [
        '--import',
        'tsx',
        '--import',
        fixture('hide-prom-client.mjs'),
        fixture('without-prom-client.ts'),
      ],
      { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 60_000 },
    );
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
    expect(result).toMatchObject({
      hidden: true, // the child really cannot load it
      core: 'function',
      http: 'function',
      prometheus: 'function',
      code: 'MISSING_DEPENDENCY',
    });
    expect(result.message).toContain('prom-client');
    expect(result.message).toContain('npm install prom-client@^15');
  });
});
