/**
 * The routing-quality grid of `cache_aware`'s cost model: every shipped workload (and the
 * near-capacity agent) × fleet sizes × seeds, each run behind 4 routers with engine events and
 * shared state (`fleetroute simulate --routers 4 --kv-events --shared-state memory`), which also
 * runs every policy at one router. Prints one table: per workload, fleet size, router count and
 * mode (approximate tree, engine events, shared state), `cache_aware`'s TTFT p99 against round
 * robin's and the best of any policy run in that setting, its hit rate, and with events or
 * shared state the hit rate 4 routers lose against one. Figures are means over the seeds.
 *
 *   npx tsx bench/ttft-grid.ts [--seeds 1,2,3] [--workers 8,32] [--workloads a,b] [--threads 2]
 *     [--policies …] [--json out.json] [--cache dir]
 *
 * Workloads: shared-prefix, chat, hot-prefix, zero-reuse, agent, agent-near (agent with one
 * fleet-wide system prompt, 12 conversations per second, 1,500 users).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const WORKLOADS: Record<string, readonly string[]> = {
  'shared-prefix': ['--workload', 'shared-prefix'],
  chat: ['--workload', 'chat'],
  'hot-prefix': ['--workload', 'hot-prefix'],
  'zero-reuse': ['--workload', 'zero-reuse'],
  agent: ['--workload', 'agent'],
  'agent-near': [
    '--workload',
    'agent',
    '--system-prompts',
    '1',
    '--conversation-rate',
    '12',
    '--users',
    '1500',
  ],
};
/** `cache_aware`, round robin, and the policies that are best on p99 somewhere. */
const POLICIES = 'cache_aware,round_robin,consistent_hashing,prefix_hash,manual,power_of_two';

function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(`--${name}`);
  return at >= 0 && at + 1 < process.argv.length ? process.argv[at + 1]! : fallback;
}

interface Row {
  readonly policy: string;
  readonly hitRate: number;
  readonly p99: number;
}

/**
 * One simulator run: its rows by name. With `--cache <dir>`, a run whose rows are there is not
 * run again, and each run's rows are written there as soon as it ends (an interrupted grid
 * resumes).
 */
function run(workload: string, workers: number, seed: number, extra: readonly string[]): Row[] {
  const cache = arg('cache', '');
  const cached = cache === '' ? '' : join(cache, `${workload}-${workers}-${seed}.json`);
  if (cached !== '' && existsSync(cached)) return JSON.parse(readFileSync(cached, 'utf8')) as Row[];
  const rows = simulateOnce(workload, workers, seed, extra);
  if (cached !== '') {
    mkdirSync(cache, { recursive: true });
    writeFileSync(cached, JSON.stringify(rows));
  }
  return rows;
}

function simulateOnce(
  workload: string,
  workers: number,
  seed: number,
  extra: readonly string[],
): Row[] {
  const dir = mkdtempSync(join(tmpdir(), 'ttft-grid-'));
  const json = join(dir, 'out.json');
  try {
    execFileSync(
      'npx',
      [
        'tsx',
        'src/cli/fleetroute.ts',
        'simulate',
        ...WORKLOADS[workload]!,
        '--workers',
        String(workers),
        '--seed',
        String(seed),
        '--routers',
        '4',
        '--kv-events',
        '--shared-state',
        'memory',
        '--policies',
        arg('policies', POLICIES),
        '--threads',
        arg('threads', '2'),
        ...extra,
        '--no-report',
        '--quiet',
        '--json',
        json,
      ],
      { stdio: ['ignore', 'ignore', 'inherit'] },
    );
    const out = JSON.parse(readFileSync(json, 'utf8')) as {
      runs: { policy: string; hitRate: number; ttftMs: { p99: number } }[];
    };
    return out.runs.map((r) => ({ policy: r.policy, hitRate: r.hitRate, p99: r.ttftMs.p99 }));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

type Mode = 'approximate' | 'events' | 'shared';

/** The rows of one setting: routers 1 or 4, and which rows belong to the mode. */
function settingRows(rows: readonly Row[], routers: 1 | 4, mode: Mode): Row[] {
  const one = (name: string) => name.endsWith(' (1 router)');
  return rows.filter((r) => {
    if (routers === 1 ? !one(r.policy) : one(r.policy)) return false;
    const name = r.policy.replace(' (1 router)', '');
    const events = name.includes('+events');
    const shared = name.includes('+shared');
    if (mode === 'shared') return routers === 1 ? !events : shared && !events;
    if (mode === 'events') return !shared; // every policy, cache_aware fed by events
    return !events && !shared;
  });
}

const caName = (mode: Mode, routers: 1 | 4) =>
  `cache_aware${mode === 'events' ? '+events' : mode === 'shared' && routers === 4 ? '+shared' : ''}`;
const rrName = (mode: Mode, routers: 1 | 4) =>
  `round_robin${mode === 'shared' && routers === 4 ? '+shared' : ''}`;

const seeds = arg('seeds', '1,2,3').split(',').map(Number);
const sizes = arg('workers', '8,32').split(',').map(Number);
const workloads = arg('workloads', Object.keys(WORKLOADS).join(',')).split(',');
const extra = arg('extra', '')
  .split(' ')
  .filter((s) => s.length > 0);
const results: Record<string, Row[][]> = {};
for (const workload of workloads) {
  for (const workers of sizes) {
    const key = `${workload}/${workers}`;
    results[key] = [];
    for (const seed of seeds) {
      const started = Date.now();
      results[key].push(run(workload, workers, seed, extra));
      process.stderr.write(
        `${key} seed ${seed}: ${((Date.now() - started) / 1000).toFixed(0)} s\n`,
      );
    }
  }
}

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const lines: string[] = [
  '| workload | workers | routers | mode | cache_aware p99 | round robin p99 | best p99 (policy) | ≤ RR | ≤ 1.25 × best | hit rate | hit loss 4 vs 1 |',
  '| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |',
];
const summary: unknown[] = [];
let missed = 0;
for (const [key, perSeed] of Object.entries(results)) {
  const [workload, workers] = key.split('/');
  for (const routers of [1, 4] as const) {
    for (const mode of ['approximate', 'events', 'shared'] as const) {
      if (routers === 1 && mode === 'shared') continue; // one router shares with nobody
      const byPolicy = new Map<string, { p99: number[]; hit: number[] }>();
      for (const rows of perSeed) {
        for (const r of settingRows(rows, routers, mode)) {
          const name = r.policy.replace(' (1 router)', '');
          const entry = byPolicy.get(name) ?? { p99: [], hit: [] };
          entry.p99.push(r.p99);
          entry.hit.push(r.hitRate);
          byPolicy.set(name, entry);
        }
      }
      const ca = byPolicy.get(caName(mode, routers));
      const rr = byPolicy.get(rrName(mode, routers));
      if (ca === undefined || rr === undefined) continue;
      let best = Number.POSITIVE_INFINITY;
      let bestName = '';
      for (const [name, e] of byPolicy) {
        if (mean(e.p99) < best) {
          best = mean(e.p99);
          bestName = name;
        }
      }
      const caP99 = mean(ca.p99);
      const rrP99 = mean(rr.p99);
      const okRr = caP99 <= rrP99;
      const okBest = caP99 <= 1.25 * best;
      let loss = '';
      if (routers === 4 && mode !== 'approximate') {
        const one = perSeed.map(
          (rows) =>
            rows.find(
              (r) =>
                r.policy ===
                `${caName(mode === 'events' ? 'events' : 'approximate', 1)} (1 router)`,
            )!.hitRate,
        );
        const points = (mean(one) - mean(ca.hit)) * 100;
        loss = `${points.toFixed(1)}${points <= 2 ? '' : ' ✗'}`;
        if (points > 2) missed++;
      }
      if (!okRr || !okBest) missed++;
      lines.push(
        `| ${workload} | ${workers} | ${routers} | ${mode} | ${caP99.toFixed(0)} | ${rrP99.toFixed(0)} | ${best.toFixed(0)} (${bestName}) | ${okRr ? 'yes' : 'no'} | ${okBest ? 'yes' : 'no'} | ${(mean(ca.hit) * 100).toFixed(1)} % | ${loss} |`,
      );
      summary.push({
        workload,
        workers,
        routers,
        mode,
        caP99,
        rrP99,
        best,
        bestName,
        hit: mean(ca.hit),
        loss,
      });
    }
  }
}
console.log(lines.join('\n'));
console.log(`\ncells missing a target: ${missed}`);
const out = arg('json', '');
if (out !== '') writeFileSync(out, JSON.stringify({ seeds, sizes, results, summary }, null, 1));
