/**
 * Runs the benchmark suite: `npm run bench`, or `npm run bench -- ring` to run only the files
 * whose name contains one of the given words.
 *
 * Each benchmark file runs in its own child process (`node --expose-gc --import tsx <file>`), so
 * JIT feedback and garbage from one benchmark cannot skew another, and the allocation benchmarks
 * can call `gc()`. The child prints its report as one JSON line; this runner prints the machine
 * and every report as text tables.
 */
import { spawnSync } from 'node:child_process';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BenchReport, elapsedMs, formatReport, nowNs } from './harness.js';

const BENCH_DIR = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = dirname(BENCH_DIR);

/** Every benchmark file, in the order they run. */
const BENCHMARKS = [
  'ring-lookup',
  'ring-balance',
  'ring-build',
  'registry-register',
  'registry-reads-alloc',
  'registry-scan',
  'policy-select',
  'prefix-hash-varied',
  'adapter-select',
  'cache-aware',
  'kv-events',
  'event-select',
  'kv-subscriber',
  'router-observe',
  'admission',
  'shared-state',
  'simulator',
  'prometheus-parse',
  'openai-request',
  'time-to-ready',
  'answer-watch',
  'openai-front',
];

/** The commit under test, and whether src/ differs from it (figures then describe local edits). */
function revision(): string {
  const git = (args: string[]): string =>
    spawnSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).stdout?.trim() ?? '';
  const commit = git(['rev-parse', '--short', 'HEAD']) || 'unknown';
  const dirty = git(['status', '--porcelain', '--', 'src']) !== '';
  return `${commit}${dirty ? ' (src/ has uncommitted changes)' : ''}`;
}

function loadAverage(): string {
  return (loadavg()[0] ?? 0).toFixed(2);
}

function machine(): string {
  const cores = cpus();
  return [
    `CPU:    ${cores[0]?.model.trim() ?? 'unknown'} (${cores.length} logical cores)`,
    `Memory: ${(totalmem() / 2 ** 30).toFixed(1)} GiB`,
    `Node:   ${process.version} (V8 ${process.versions.v8}), ${process.platform}/${process.arch}`,
    `Commit: ${revision()}`,
    `Load:   ${loadAverage()} (1-minute load average before the suite; other processes skew timings)`,
  ].join('\n');
}

function runFile(name: string): BenchReport {
  const file = join(BENCH_DIR, `${name}.ts`);
  const child = spawnSync(process.execPath, ['--expose-gc', '--import', 'tsx', file], {
    cwd: REPO_ROOT,
    env: { ...process.env, FLEETROUTE_BENCH_JSON: '1' },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 16 * 2 ** 20,
  });
  if (child.status !== 0) {
    throw new Error(`${name} exited with ${child.status ?? child.signal}`);
  }
  const last = child.stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as BenchReport;
}

function main(): void {
  const filters = process.argv.slice(2);
  const selected = BENCHMARKS.filter(
    (name) => filters.length === 0 || filters.some((f) => name.includes(f)),
  );
  if (selected.length === 0) {
    console.error(
      `No benchmark matches ${filters.join(', ')}. Available: ${BENCHMARKS.join(', ')}`,
    );
    process.exitCode = 2;
    return;
  }
  console.log(`fleetroute benchmarks\n\n${machine()}\n`);
  const suiteStart = nowNs();
  for (const name of selected) {
    const start = nowNs();
    const report = runFile(name);
    console.log(`=== ${name} (${(elapsedMs(start) / 1000).toFixed(1)} s) ===\n`);
    console.log(`${formatReport(report)}\n`);
  }
  const seconds = (elapsedMs(suiteStart) / 1000).toFixed(1);
  console.log(`Suite finished in ${seconds} s (1-minute load average now ${loadAverage()}).`);
}

main();
