/**
 * Without `@opentelemetry/api`: a child process whose module resolution cannot find the package
 * (a resolve hook answers "not found" for it, as for a package never installed) imports the core
 * and `fleetroute/opentelemetry` and routes; only `instrumentRouter` fails, with
 * `MISSING_DEPENDENCY` naming the package and how to install it.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'fleetroute-otel-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOOKS = `
export async function resolve(specifier, context, next) {
  if (specifier === '@opentelemetry/api' || specifier.startsWith('@opentelemetry/api/')) {
    const error = new Error("Cannot find package '" + specifier + "'");
    error.code = 'ERR_MODULE_NOT_FOUND';
    throw error;
  }
  return next(specifier, context);
}
`;

const src = (path: string) => JSON.stringify(pathToFileURL(join(ROOT, 'src', path)).href);

const PROGRAM = `
const core = await import(${src('index.ts')});
const otel = await import(${src('opentelemetry/index.ts')});
const registry = await core.WorkerRegistry.create({ defaultStatus: 'ready' });
await registry.register({ url: 'http://127.0.0.1:8001', models: ['m'] });
const router = new core.Router({ registry, transport: { probe: async () => true }, health: false });
const routed = await router.execute({ model: 'm' }, async () => ({ status: 200 }));
const error = await otel.instrumentRouter(router).then(() => undefined, (e) => e);
await router.close();
registry.close();
const hidden = await import('@opentelemetry/api').then(() => false, () => true);
console.log(JSON.stringify({
  hidden,
  routed: routed.status,
  isFleetRouteError: error instanceof core.FleetRouteError,
  code: error?.code,
  message: error?.message,
}));
`;

describe('fleetroute/opentelemetry without @opentelemetry/api', () => {
  it('the core imports and routes; instrumentRouter rejects with MISSING_DEPENDENCY naming the package', async () => {
    const hooks = join(dir, 'hide-otel.mjs');
    writeFileSync(hooks, HOOKS);
    const register = join(dir, 'register.mjs');
    writeFileSync(
      register,
      `import { register } from 'node:module';\nregister(${JSON.stringify(pathToFileURL(hooks).href)});\n`,
    );
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--import', register, '--input-type=module', '-e', PROGRAM],
      { cwd: ROOT, timeout: 60_000 },
    );
    const out = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(out).toEqual({
      hidden: true, // the child really cannot load it
      routed: 200,
      isFleetRouteError: true,
      code: 'MISSING_DEPENDENCY',
      message: expect.stringContaining('npm install @opentelemetry/api@^1.3.0'),
    });
  });
});
