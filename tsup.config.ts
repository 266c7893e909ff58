import { defineConfig } from 'tsup';

export default defineConfig([
  {
    entry: {
      index: 'src/index.ts',
      http: 'src/transport/http/index.ts',
      sim: 'src/sim/index.ts',
    },
    format: ['esm', 'cjs'],
    dts: true,
    sourcemap: true,
    clean: true,
    target: 'node20',
    platform: 'node',
    splitting: false,
    treeshake: true,
  },
  {
    // The `fleetroute` executable: ESM only (top-level await), no declarations.
    entry: { cli: 'src/cli/fleetroute.ts' },
    format: ['esm'],
    sourcemap: true,
    target: 'node20',
    platform: 'node',
    splitting: false,
    treeshake: true,
  },
]);
