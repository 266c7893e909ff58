/**
 * The simulator from code: a workload of your own (one long shared document, questions from four
 * teams), three policies, a 4-worker fleet with small caches, and the comparison as a table and
 * as an HTML report.
 *
 * Run: `npx tsx examples/simulator.ts`.
 */
import { writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  comparePolicies,
  formatComparison,
  renderHtmlReport,
  SeededRandom,
  type SimRequest,
  type Workload,
} from 'fleetroute/sim';

// A workload is a list of requests with prompt tokens, output lengths and routing keys.
const random = new SeededRandom(7);
const documents = Array.from({ length: 4 }, () => random.tokens(3_000)); // one per team
const requests: SimRequest[] = [];
for (let i = 0; i < 400; i++) {
  const team = random.int(4);
  const prompt = new Uint32Array(3_000 + 100);
  prompt.set(documents[team]!);
  prompt.set(random.tokens(100), 3_000);
  requests.push({
    id: i,
    promptLength: prompt.length,
    tokens: () => prompt,
    outputLength: 200,
    routingKey: `team-${team}`,
  });
}
const workload: Workload = {
  name: 'team-docs',
  description: '4 teams, each asking about its own 3,000-token document',
  requests,
  parameters: { teams: 4, documentTokens: 3_000, questionTokens: 100 },
};

const comparison = await comparePolicies({
  workload,
  policies: ['round_robin', 'consistent_hashing', 'cache_aware'],
  fleet: { workers: 4, cacheTokens: 65_536 },
  load: 0.7, // Poisson arrivals at 70 % of the fleet's capacity
});
console.log(formatComparison(comparison));

const path = join(tmpdir(), 'fleetroute-example-report.html');
await writeFile(path, renderHtmlReport(comparison));
console.log(`report: ${path}`);
