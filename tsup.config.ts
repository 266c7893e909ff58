import { defineConfig } from 'tsup';

// No source maps in the package: the bundles are not minified and keep the source's names, and
// maps would be two thirds of the tarball (docs/decisions.md, "No source maps in the package").
export default defineConfig([
  {
    entry: {
      index: 'src/index.ts',
      http: 'src/transport/http/index.ts',
      sim: 'src/sim/index.ts',
      'kv-events': 'src/kv-events/index.ts',
      prometheus: 'src/prometheus/index.ts',
      opentelemetry: 'src/opentelemetry/index.ts',
      redis: 'src/redis/index.ts',
      dns: 'src/dns/index.ts',
      openai: 'src/openai/index.ts',
    },
    format: ['esm', 'cjs'],
    // Declarations leave out everything marked `@internal` (test/package/declarations.test.ts).
    dts: { compilerOptions: { stripInternal: true } },
    sourcemap: false,
    clean: true,
    target: 'node20',
    platform: 'node',
    splitting: false,
    treeshake: true,
  },
  {
    // The `fleetroute` executable, and the worker-thread entry that `comparePolicies` starts
    // from `dist/sim.js`, `dist/sim.cjs` and `dist/cli.js` alike (`./compare-worker.js` next to
    // them): ESM only (top-level await), no declarations.
    entry: { cli: 'src/cli/fleetroute.ts', 'compare-worker': 'src/sim/compare-worker.ts' },
    format: ['esm'],
    sourcemap: false,
    target: 'node20',
    platform: 'node',
    splitting: false,
    treeshake: true,
  },
]);
