/**
 * The `fleetroute` command: `fleetroute simulate [options]`. Exit codes: 0 done, 1 failed,
 * 2 bad command line or options.
 *
 * @module
 * @internal
 */
import { writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { FleetRouteError } from '../core/errors.js';
import { comparePolicies } from '../sim/compare.js';
import { renderHtmlReport } from '../sim/report/index.js';
import { formatComparison } from '../sim/text-table.js';
import type { Workload } from '../sim/workload.js';
import {
  agentConversations,
  generatedSharedPrefix,
  loraAdapters,
  multiTurnChat,
  readMooncakeTrace,
  singleHotPrefix,
  zeroReuse,
} from '../sim/workloads/index.js';
import { UsageError } from './flags.js';
import { packageVersion } from './package-version.js';
import { parseSimulateArgs, SIMULATE_HELP, type WorkloadChoice } from './simulate-options.js';

/** @internal Where the command writes. */
export interface CommandIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Whether stderr is a terminal (live progress line) or not (one line per policy). */
  readonly interactive: boolean;
  /** Base directory for relative output paths. */
  readonly cwd: string;
}

const HELP = `Usage: fleetroute <command> [options]

Commands
  simulate    compare routing policies on a simulated fleet (fleetroute simulate --help)
`;

/** @internal Runs the command line `args` (without `node` and the script). @returns the exit code. */
export async function run(args: readonly string[], io: CommandIo): Promise<number> {
  const [command, ...rest] = args;
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    io.stdout(HELP);
    return command === undefined ? 2 : 0;
  }
  if (command !== 'simulate') {
    io.stderr(`fleetroute: unknown command '${command}' (try: fleetroute simulate --help)\n`);
    return 2;
  }
  try {
    return await simulateCommand(rest, io);
  } catch (error) {
    if (error instanceof UsageError || FleetRouteError.is(error, 'INVALID_ARGUMENT')) {
      io.stderr(`fleetroute: ${oneLine(error)}\n`);
      return 2;
    }
    io.stderr(`fleetroute: ${oneLine(error)}\n`);
    return 1;
  }
}

async function simulateCommand(args: readonly string[], io: CommandIo): Promise<number> {
  const command = parseSimulateArgs(args);
  if (command.help) {
    io.stdout(SIMULATE_HELP);
    return 0;
  }
  const workload = await buildWorkload(command.workload);
  const progress = command.quiet ? undefined : new Progress(io);
  const measured = await comparePolicies({
    workload,
    policies: command.policies,
    fleet: command.fleet,
    ...(command.arrivals === undefined ? {} : { arrivals: command.arrivals }),
    load: command.load,
    routers: command.routers,
    seed: command.seed,
    loadPollIntervalMs: command.loadPollIntervalMs,
    firstTokens: command.firstTokens,
    threads: command.threads,
    kvEvents: command.kvEvents,
    ...(command.adapterAware ? { adapterAware: true } : {}),
    ...(command.adapterResidency ? {} : { adapterResidency: false }),
    kvEventDelayMs: command.kvEventDelayMs,
    kvEventLoss: command.kvEventLoss,
    engineRestarts: command.engineRestarts,
    lowPriorityShare: command.lowPriorityShare,
    skipLowPriority: command.skipLowPriority,
    tenants: command.tenants,
    heavyTenantFactor: command.heavyTenantFactor,
    ...(command.admission === undefined ? {} : { admission: command.admission }),
    ...(command.disaggregation === undefined ? {} : { disaggregation: command.disaggregation }),
    ...(command.sharedState === undefined
      ? {}
      : { sharedState: command.sharedState, sharedRefreshMs: command.sharedRefreshMs }),
    ...(progress === undefined
      ? {}
      : { onProgress: (policy, done, total) => progress.update(policy, done, total) }),
  });
  progress?.end();
  // The command line and version go into the report's "Run" section and the JSON output.
  const comparison = {
    ...measured,
    run: { argv: ['fleetroute', 'simulate', ...args], version: packageVersion() },
  };
  io.stdout(formatComparison(comparison));
  if (command.out !== undefined) {
    const path = resolve(io.cwd, command.out);
    await writeFile(path, renderHtmlReport(comparison));
    io.stdout(`\nreport: ${path}\n`);
  }
  if (command.json !== undefined) {
    const path = resolve(io.cwd, command.json);
    await writeFile(path, `${JSON.stringify(comparison, jsonNumbers, 2)}\n`);
    io.stdout(`json:   ${path}\n`);
  }
  return 0;
}

async function buildWorkload(choice: WorkloadChoice): Promise<Workload> {
  switch (choice.kind) {
    case 'shared-prefix':
      return generatedSharedPrefix(choice.options);
    case 'chat':
      return multiTurnChat(choice.options);
    case 'agent':
      return agentConversations(choice.options);
    case 'hot-prefix':
      return singleHotPrefix(choice.options);
    case 'lora':
      return loraAdapters(choice.options);
    case 'zero-reuse':
      return zeroReuse(choice.options);
    case 'mooncake':
      return readMooncakeTrace(choice.path, {
        routingKey: choice.routingKey,
        ...(choice.limit === undefined ? {} : { limit: choice.limit }),
      });
  }
}

/**
 * Progress on stderr: a live line on a terminal (the run that last moved), and one line per
 * finished run. Runs may progress at the same time (worker threads).
 */
class Progress {
  readonly #io: CommandIo;
  /** Runs started and not finished → when they started. */
  readonly #started = new Map<string, number>();

  constructor(io: CommandIo) {
    this.#io = io;
  }

  update(policy: string, done: number, total: number): void {
    if (!this.#started.has(policy)) this.#started.set(policy, performance.now());
    if (done >= total) {
      this.#finish(policy);
      return;
    }
    if (this.#io.interactive) {
      const width = 30;
      const filled = Math.round((done / total) * width);
      this.#io.stderr(
        `\r  ${policy.padEnd(20)} [${'#'.repeat(filled)}${' '.repeat(width - filled)}] ${done}/${total}`,
      );
    }
  }

  end(): void {
    for (const policy of [...this.#started.keys()]) this.#finish(policy);
  }

  #finish(policy: string): void {
    const started = this.#started.get(policy);
    if (started === undefined) return;
    this.#started.delete(policy);
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    const line = `  ${policy.padEnd(20)} done in ${seconds} s`;
    this.#io.stderr(this.#io.interactive ? `\r${line.padEnd(70)}\n` : `${line}\n`);
  }
}

/** JSON has no Infinity: write it as a string. */
function jsonNumbers(_key: string, value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? String(value) : value;
}

function oneLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0]!;
}
