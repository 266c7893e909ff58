/**
 * Every entry point is wired the same way in each place that names it: `package.json`
 * (`exports`, `typesVersions`), the build (tsup entries), and the two resolvers that map the
 * package's own name to its sources (tsconfig `paths`, the vitest alias). A subpath added to one
 * and forgotten in another would build, test and type-check here yet break for users.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import config from '../../tsup.config.js';
import vitestConfig from '../../vitest.config.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Conditions {
  readonly import: { readonly types: string; readonly default: string };
  readonly require: { readonly types: string; readonly default: string };
}

const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as {
  readonly exports: Record<string, Conditions | string>;
  readonly typesVersions: { readonly '*': Record<string, readonly string[]> };
  readonly dependencies: Record<string, string>;
  readonly peerDependencies: Record<string, string>;
  readonly peerDependenciesMeta: Record<string, { readonly optional?: boolean }>;
};
const tsconfig = JSON.parse(readFileSync(`${ROOT}tsconfig.json`, 'utf8')) as {
  readonly compilerOptions: { readonly paths: Record<string, readonly string[]> };
};
const library = (Array.isArray(config) ? config[0] : config) as { entry: Record<string, string> };

/** Export key (`.`, `./redis`) → build entry name (`index`, `redis`). */
const entryName = (key: string): string => (key === '.' ? 'index' : key.slice(2));
/** Export key → the specifier users import (`fleetroute`, `fleetroute/redis`). */
const specifier = (key: string): string => `fleetroute${key.slice(1)}`;

const EXPORTS = Object.keys(pkg.exports).filter((key) => key !== './package.json');

describe('entry points', () => {
  it('include fleetroute/redis', () => {
    expect(EXPORTS).toContain('./redis');
  });

  it('are the build entries, one for one', () => {
    expect(EXPORTS.map(entryName).sort()).toEqual(Object.keys(library.entry).sort());
  });

  it.each(EXPORTS)('%s points at its ESM and CommonJS bundles and declarations', (key) => {
    const name = entryName(key);
    expect(pkg.exports[key]).toEqual({
      import: { types: `./dist/${name}.d.ts`, default: `./dist/${name}.js` },
      require: { types: `./dist/${name}.d.cts`, default: `./dist/${name}.cjs` },
    });
    if (key !== '.') expect(pkg.typesVersions['*'][name]).toEqual([`./dist/${name}.d.ts`]);
  });

  it.each(EXPORTS)('%s resolves to its build entry in tsconfig and vitest', (key) => {
    const source = library.entry[entryName(key)];
    expect(source).toBeDefined();
    expect(tsconfig.compilerOptions.paths[specifier(key)]).toEqual([`./${source}`]);
    const aliases = (vitestConfig.resolve?.alias ?? []) as { find: RegExp; replacement: string }[];
    const alias = aliases.find(({ find }) => find.test(specifier(key)));
    expect(alias?.replacement).toBe(`${ROOT}${source}`);
  });

  it('leave the adapters’ packages optional peers, never dependencies', () => {
    for (const peer of [
      'ioredis',
      'prom-client',
      'zeromq',
      '@msgpack/msgpack',
      '@opentelemetry/api',
      'fastify',
      'express',
      'hono',
      '@hono/node-server',
    ]) {
      expect(pkg.peerDependenciesMeta[peer]?.optional, peer).toBe(true);
      expect(pkg.dependencies[peer], peer).toBeUndefined();
    }
    expect(Object.keys(pkg.peerDependencies).sort()).toEqual(
      Object.keys(pkg.peerDependenciesMeta).sort(),
    );
  });
});
