/**
 * Every engine fixture (a full `/metrics` body built from that engine's own metric definitions;
 * each file's header says which version and where) read through the real `httpTransport` from a
 * server on 127.0.0.1, down to the exact `LoadReport`.
 */
import { describe, expect, it } from 'vitest';
import type { LoadReport, RuntimeType } from '../../../src/index.js';
import { type HttpTransportWarning, httpTransport } from '../../../src/transport/http/index.js';
import { fixtureBody, reply } from './support/fake-worker.js';
import { useHarness } from './support/harness.js';

const h = useHarness();
const AT = 1_764_580_447_000;

interface Case {
  readonly file: string;
  readonly runtime: RuntimeType;
  readonly dpRank?: number;
  readonly expected: LoadReport;
}

const CASES: Case[] = [
  {
    file: 'vllm-v1-lora.txt',
    runtime: 'vllm',
    expected: {
      runningRequests: 3,
      waitingRequests: 1,
      tokenUsage: 0.25,
      at: AT,
      adapters: { running: ['sql-lora', 'chat-lora'], waiting: ['tool-lora'], maxAdapters: 4 },
    },
  },
  {
    file: 'vllm-lora-residency.txt',
    runtime: 'unspecified',
    expected: {
      runningRequests: 1,
      waitingRequests: 0,
      at: AT,
      adapters: {
        running: ['sql-lora'],
        waiting: [],
        resident: ['sql-lora', 'chat-lora'],
        maxAdapters: 3,
      },
    },
  },
  {
    file: 'vllm-v1-engine-dp2.txt',
    runtime: 'vllm',
    expected: { runningRequests: 15, waitingRequests: 4, tokenUsage: 0.5123, at: AT },
  },
  {
    file: 'vllm-v1-engine-dp2.txt',
    runtime: 'unspecified',
    dpRank: 1,
    expected: { runningRequests: 6, waitingRequests: 1, tokenUsage: 0.4387, at: AT },
  },
  {
    file: 'sglang-tp4.txt',
    runtime: 'sglang',
    expected: {
      runningRequests: 10,
      waitingRequests: 3,
      tokenUsage: 0.52,
      throughput: 688.31,
      at: AT,
    },
  },
  {
    file: 'sglang-tp4-all-schedulers.txt',
    runtime: 'sglang',
    expected: {
      runningRequests: 10,
      waitingRequests: 3,
      tokenUsage: 0.52,
      throughput: 688.31,
      at: AT,
    },
  },
  {
    file: 'sglang-tp4-dp2-all-schedulers.txt',
    runtime: 'sglang',
    expected: {
      runningRequests: 11,
      waitingRequests: 5,
      tokenUsage: 0.44,
      throughput: 779.75,
      at: AT,
    },
  },
  {
    file: 'sglang-tp4-dp2-all-schedulers.txt',
    runtime: 'unspecified',
    dpRank: 0,
    expected: {
      runningRequests: 6,
      waitingRequests: 2,
      tokenUsage: 0.38,
      throughput: 402.5,
      at: AT,
    },
  },
  {
    file: 'trtllm-iteration-stats.jsonc',
    runtime: 'trtllm',
    expected: { runningRequests: 7, waitingRequests: 2, tokenUsage: 3283 / 9380, at: AT },
  },
  {
    file: 'trtllm-iteration-stats.jsonc',
    runtime: 'unspecified',
    expected: { runningRequests: 7, waitingRequests: 2, tokenUsage: 3283 / 9380, at: AT },
  },
];

describe('httpTransport.loads on each engine fixture', () => {
  it.each(CASES)('reads $file as a $runtime worker (dpRank $dpRank)', async (c) => {
    // Arrange
    const json = c.file.endsWith('.jsonc');
    const server = await h.serve({
      '/metrics': reply(
        200,
        fixtureBody(c.file),
        json ? 'application/json' : 'text/plain; version=0.0.4; charset=utf-8',
      ),
    });
    const worker = await h.workerFor(server, {
      runtime: c.runtime,
      ...(c.dpRank === undefined ? {} : { dpRank: c.dpRank }),
    });
    const warnings: HttpTransportWarning[] = [];
    const transport = httpTransport({ clock: () => AT, onWarning: (w) => warnings.push(w) });

    // Act
    const report = await transport.loads(worker);

    // Assert
    expect(report).toEqual(c.expected);
    expect(warnings).toEqual([]);
  });
});
