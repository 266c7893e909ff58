/**
 * The simulator's own speed: requests simulated per second for each default policy on a
 * multi-turn chat with long prompts, and the ceiling computation's requests per second, each
 * next to the prompt pass measured in the same run (building every prompt and its block keys,
 * the least any per-request work over the workload costs).
 *
 * Why: `comparePolicies` replays the workload once per policy (nine times by default) and once
 * more for the ceiling, so a trace of tens of thousands of long prompts is only practical when a
 * run costs a small multiple of reading its prompts. A ratio that grows shows per-request
 * overhead beyond the prompt itself (cache bookkeeping, routing, events); it matters more than
 * the absolute figures, which move with the machine.
 *
 * Workload: 96 conversations of 8 rounds (768 requests) sharing one 8,192-token system prompt,
 * 128-token questions and 256-token answers that the next round repeats, so prompts grow from
 * about 8.3 K to 11 K tokens; Poisson arrivals at 80 % of the fleet's estimated capacity on the
 * default fleet (8 workers), load polls and precision on, as `fleetroute simulate` runs it.
 */
import { blockKeys } from '../src/sim/block-keys.js';
import {
  ceilingHitRate,
  DEFAULT_FLEET_MODEL,
  DEFAULT_POLICIES,
  fleetCapacity,
  multiTurnChat,
  simulate,
  type Workload,
} from '../src/sim/index.js';
import { collectGarbage, consume, elapsedMs, emit, fmt, median, nowNs } from './harness.js';

/** Timed runs per figure; the median is reported. */
const RUNS = 3;

/** Median ms of `task` over {@link RUNS} runs, after one untimed run. */
async function medianMs(task: () => Promise<number> | number): Promise<number> {
  consume(await task());
  const times: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    collectGarbage();
    const start = nowNs();
    consume(await task());
    times.push(elapsedMs(start));
  }
  return median(times);
}

/** Builds every prompt and its block keys once: the floor of any per-request pass. */
function promptPass(workload: Workload): number {
  let sum = 0;
  for (const request of workload.requests) {
    const keys = blockKeys(request.tokens(), DEFAULT_FLEET_MODEL.blockSize, request.outputTokens);
    sum += keys.length;
  }
  return sum;
}

async function main(): Promise<void> {
  const workload = multiTurnChat({
    users: 96,
    rounds: 8,
    systemPromptLength: 8_192,
    questionLength: 128,
    answerLength: 256,
  });
  const requests = workload.requests.length;
  const ceiling = ceilingHitRate(workload, DEFAULT_FLEET_MODEL.blockSize);
  const ratePerSecond = 0.8 * fleetCapacity(workload, DEFAULT_FLEET_MODEL, ceiling);
  const reference = await medianMs(() => promptPass(workload));
  const perSecond = (ms: number): string => fmt((requests * 1000) / ms, 0);
  const rows: string[][] = [];
  rows.push(['prompt pass (reference)', perSecond(reference), fmt(reference, 1), '1.00×']);
  const ceilingMs = await medianMs(() => ceilingHitRate(workload, DEFAULT_FLEET_MODEL.blockSize));
  rows.push([
    'ceiling',
    perSecond(ceilingMs),
    fmt(ceilingMs, 1),
    `${fmt(ceilingMs / reference, 2)}×`,
  ]);
  for (const policy of DEFAULT_POLICIES) {
    const ms = await medianMs(async () => {
      const run = await simulate({
        workload,
        policy,
        arrivals: { kind: 'poisson', ratePerSecond },
      });
      return run.eventsProcessed;
    });
    rows.push([policy, perSecond(ms), fmt(ms, 1), `${fmt(ms / reference, 2)}×`]);
  }
  emit({
    name: 'simulator',
    tables: [
      {
        title: `Simulator speed (median of ${RUNS} runs), ${requests} requests of 8.3 K to 11 K tokens`,
        columns: ['pass', 'requests/s', 'ms per pass', '× prompt pass'],
        rows,
      },
    ],
    notes: [
      'prompt pass: every request’s tokens() and block keys (prompt and answer) once, nothing else.',
      'policy rows: one whole simulate() run each (workload check, routing, engines, precision).',
      `ceiling hit rate of the workload: ${fmt(100 * ceiling, 1)} %; arrivals: Poisson at ${fmt(ratePerSecond, 1)} requests/s.`,
    ],
  });
}

await main();
