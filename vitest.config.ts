import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const src = (path: string): string => fileURLToPath(new URL(`./src/${path}`, import.meta.url));

export default defineConfig({
  // The package's own name resolves to the sources, as in the examples (tsconfig `paths`).
  resolve: {
    alias: [
      { find: /^fleetroute\/http$/, replacement: src('transport/http/index.ts') },
      { find: /^fleetroute\/sim$/, replacement: src('sim/index.ts') },
      { find: /^fleetroute\/kv-events$/, replacement: src('kv-events/index.ts') },
      { find: /^fleetroute\/prometheus$/, replacement: src('prometheus/index.ts') },
      { find: /^fleetroute\/opentelemetry$/, replacement: src('opentelemetry/index.ts') },
      { find: /^fleetroute\/redis$/, replacement: src('redis/index.ts') },
      { find: /^fleetroute\/dns$/, replacement: src('dns/index.ts') },
      { find: /^fleetroute\/openai$/, replacement: src('openai/index.ts') },
      { find: /^fleetroute$/, replacement: src('index.ts') },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    environment: 'node',
    testTimeout: 120_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // Twice the cores: many tests wait on sockets, child processes and timers, and no test
    // asserts a timing, so the waits overlap the others' work.
    maxWorkers: 4,
  },
});
