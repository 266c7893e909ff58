/**
 * Runs the `fleetroute` command in-process, as a non-interactive terminal in `cwd`, and returns
 * its exit code and everything it printed.
 */
import { type CommandIo, run } from '../../src/cli/main.js';

export async function runCli(cwd: string, ...args: string[]) {
  let stdout = '';
  let stderr = '';
  const io: CommandIo = {
    stdout: (t) => {
      stdout += t;
    },
    stderr: (t) => {
      stderr += t;
    },
    interactive: false,
    cwd,
  };
  const code = await run(args, io);
  return { code, stdout, stderr };
}
