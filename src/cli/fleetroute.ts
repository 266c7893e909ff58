#!/usr/bin/env node
/**
 * The `fleetroute` executable. See `fleetroute simulate --help`.
 *
 * @module
 */
import { run } from './main.js';

process.exitCode = await run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  interactive: process.stderr.isTTY === true,
  cwd: process.cwd(),
});
