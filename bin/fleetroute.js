#!/usr/bin/env node
/**
 * The `fleetroute` executable (`package.json` `bin`). In the published package it runs the
 * bundled command, `dist/cli.js`. In a checkout, where `src/` sits beside this folder, it runs
 * the TypeScript sources through tsx instead, so `npx fleetroute` works right after `npm ci`,
 * with no build, and never runs a build older than the sources. A checkout without tsx (installed
 * with `--omit=dev`) falls back to `dist/cli.js` when it has been built.
 */
import { existsSync } from 'node:fs';

const sources = new URL('../src/cli/fleetroute.ts', import.meta.url);
const bundle = new URL('../dist/cli.js', import.meta.url);

if (existsSync(sources) && (await registerTsx())) {
  await import(sources.href);
} else if (existsSync(bundle)) {
  await import(bundle.href);
} else {
  process.stderr.write(
    'fleetroute: no dist/cli.js and no tsx to run the sources: run `npm ci`, or `npm run build`\n',
  );
  process.exitCode = 1;
}

/** Registers tsx's loader for TypeScript imports. @returns false when tsx is not installed. */
async function registerTsx() {
  let api;
  try {
    api = await import('tsx/esm/api');
  } catch {
    return false;
  }
  api.register();
  return true;
}
