/**
 * Shared timing and reporting helpers for the benchmarks.
 *
 * Timing: a calibration phase (which doubles as JIT warm-up) finds how many operations fill
 * about `sampleMs`, then `samples` timed runs of that many operations are taken with
 * `process.hrtime.bigint()`, and the median ns/op is reported. Under `--expose-gc` (as
 * `bench/run.ts` runs every file) garbage left by earlier work is collected before each
 * measurement, so one benchmark's leftovers do not land in the next one's samples. Nothing
 * here asserts a timing:
 * benchmarks print figures, they never pass or fail on them.
 *
 * Reporting: a benchmark file builds a {@link BenchReport} and calls {@link emit}. Run on its own
 * (`npx tsx bench/ring-lookup.ts`) it prints text tables; run by `bench/run.ts` (which sets
 * `FLEETROUTE_BENCH_JSON=1`) it prints one JSON line that the runner parses.
 */

/** Runs `ops` operations and returns a checksum, so the work cannot be optimised away. */
export type OpsRunner = (ops: number) => number;

export interface TimingOptions {
  /** Timed samples; the median is reported. @defaultValue 7 */
  readonly samples?: number;
  /** Target duration of one sample. @defaultValue 60 */
  readonly sampleMs?: number;
  /** Minimum time spent running the code before the first timed sample. @defaultValue 150 */
  readonly warmupMs?: number;
}

export interface Timing {
  /** Median ns per operation over the samples. */
  readonly nsPerOp: number;
  /** ns/op of every sample, in the order taken. */
  readonly samplesNs: readonly number[];
  readonly opsPerSample: number;
}

export interface Table {
  readonly title: string;
  readonly columns: readonly string[];
  readonly rows: readonly (readonly string[])[];
}

export interface BenchReport {
  readonly name: string;
  readonly tables: readonly Table[];
  readonly notes: readonly string[];
}

/** Calibration stops doubling here, so code too cheap to time cannot loop forever. */
const MAX_OPS = 2 ** 30;

let sink = 0;

/** Keeps a checksum alive so the JIT cannot drop the work that produced it. */
export function consume(value: number): void {
  sink = (sink + value) | 0;
}

export function nowNs(): bigint {
  return process.hrtime.bigint();
}

export function elapsedMs(startNs: bigint): number {
  return Number(process.hrtime.bigint() - startNs) / 1e6;
}

function timeRun(run: OpsRunner, ops: number): number {
  const start = process.hrtime.bigint();
  consume(run(ops));
  return Number(process.hrtime.bigint() - start);
}

/** Collects garbage left by earlier work when the process runs with `--expose-gc`. */
export function collectGarbage(): void {
  globalThis.gc?.();
}

/** Median ns/op of `run` (see the module comment for the method). */
export function timeOps(run: OpsRunner, options: TimingOptions = {}): Timing {
  collectGarbage();
  const samples = options.samples ?? 7;
  const sampleNs = (options.sampleMs ?? 60) * 1e6;
  const warmupNs = (options.warmupMs ?? 150) * 1e6;
  let ops = 256;
  let spent = 0;
  let last = timeRun(run, ops);
  spent += last;
  while ((last < 10e6 && ops < MAX_OPS) || spent < warmupNs) {
    if (last < 10e6 && ops < MAX_OPS) ops *= 2;
    last = timeRun(run, ops);
    spent += last;
  }
  const opsPerSample = Math.max(1, Math.round((ops * sampleNs) / last));
  const samplesNs: number[] = [];
  for (let s = 0; s < samples; s++) samplesNs.push(timeRun(run, opsPerSample) / opsPerSample);
  return { nsPerOp: median(samplesNs), samplesNs, opsPerSample };
}

/** Runs an async task `runs` times (after one untimed warm-up run) and returns each run's ms. */
export async function timeTask(task: () => Promise<unknown>, runs: number): Promise<number[]> {
  await task();
  const ms: number[] = [];
  for (let r = 0; r < runs; r++) {
    const start = nowNs();
    await task();
    ms.push(elapsedMs(start));
  }
  return ms;
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  if (sorted.length === 0) return Number.NaN;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Formats a number with `digits` decimals and thousands separators. */
export function fmt(value: number, digits = 1): string {
  if (!Number.isFinite(value)) return 'n/a';
  return value.toLocaleString('en-US', {
    minimumFractionDigits: digits,
    maximumFractionDigits: digits,
  });
}

/** Renders a table as aligned plain text (numbers right-aligned). */
export function formatTable(table: Table): string {
  const widths = table.columns.map((c, i) =>
    Math.max(c.length, ...table.rows.map((r) => (r[i] ?? '').length)),
  );
  const numeric = (s: string): boolean => /^[-+×~≈]?[\d,.]+[×%]?$|^n\/a$/.test(s);
  const line = (cells: readonly string[]): string =>
    cells
      .map((cell, i) => (numeric(cell) ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [table.title, line(table.columns), rule, ...table.rows.map(line)].join('\n');
}

export function formatReport(report: BenchReport): string {
  const parts = report.tables.map(formatTable);
  if (report.notes.length > 0) parts.push(report.notes.map((n) => `  * ${n}`).join('\n'));
  return parts.join('\n\n');
}

/** Prints the report: one JSON line under `bench/run.ts`, text tables otherwise. */
export function emit(report: BenchReport): void {
  if (process.env.FLEETROUTE_BENCH_JSON === '1') {
    process.stdout.write(`${JSON.stringify(report)}\n`);
  } else {
    process.stdout.write(`${formatReport(report)}\n`);
  }
}
