/**
 * Prometheus text parse throughput (MB/s) on realistic vLLM and SGLang `/metrics` bodies (the
 * engine fixtures of the HTTP transport's tests) and on bodies built to be slow: long digit
 * runs that turn invalid at their last character, lines past the line cap, long label values,
 * and many short series.
 *
 * Why: the parse is synchronous and runs on every load poll of every worker, on text the worker
 * controls; the transport's timeout cannot interrupt it. The target is that no hostile body
 * parses more than 3× slower per byte than a real vLLM scrape (the value regex the scanner
 * replaced took seconds on one 60 KB line). Figures are ratios against the vLLM body measured in
 * the same run.
 *
 * Two paths are timed: `parsePrometheusText` without a filter (every line fully read) and the
 * transport's own read (`LoadReader.scrape`: a name filter, then the load mapping).
 */
import { readFileSync } from 'node:fs';
import { LoadReader } from '../src/transport/http/load-reader.js';
import {
  type PrometheusParseOptions,
  parsePrometheusText,
} from '../src/transport/http/prometheus-text.js';
import { emit, fmt, type Table, timeOps } from './harness.js';

const FIXTURES = new URL('../test/transport/http/fixtures/', import.meta.url);

function fixture(name: string): string {
  return readFileSync(new URL(name, FIXTURES), 'utf8');
}

/** Repeats `line` (with a line end) until the body holds about `bytes` characters. */
function fill(line: string, bytes: number): string {
  return `${line}\n`.repeat(Math.max(1, Math.round(bytes / (line.length + 1))));
}

const MB = 1_000_000;

interface Body {
  readonly label: string;
  readonly text: string;
  readonly runtime: 'vllm' | 'sglang';
  /** Options of the `parsePrometheusText` row (the transport's read always uses the defaults). */
  readonly options?: PrometheusParseOptions;
}

function manySeries(count: number): string {
  const lines: string[] = [];
  for (let i = 0; i < count; i++) {
    lines.push(`sglang:num_running_reqs{model_name="m",tp_rank="${i % 8}",series="${i}"} ${i}.5`);
  }
  return `${lines.join('\n')}\n`;
}

const BODIES: readonly Body[] = [
  {
    label: 'vLLM V1 scrape, 2 engines (reference)',
    text: fixture('vllm-v1-engine-dp2.txt'),
    runtime: 'vllm',
  },
  {
    label: 'SGLang scrape, TP 4 × DP 2, all schedulers',
    text: fixture('sglang-tp4-dp2-all-schedulers.txt'),
    runtime: 'sglang',
  },
  {
    label: 'hostile: 50 KB digit runs ending in x (1 MB)',
    text: fill(`vllm:num_requests_running ${'1'.repeat(50_000)}x`, MB),
    runtime: 'vllm',
  },
  {
    label: 'hostile: the same, value cap raised to 64 Ki *',
    text: fill(`vllm:num_requests_running ${'1'.repeat(50_000)}x`, MB),
    runtime: 'vllm',
    options: { maxValueLength: 65_536 },
  },
  {
    label: 'hostile: 250 KB lines, over the line cap (1 MB)',
    text: fill(`vllm:num_requests_running ${'9'.repeat(250_000)}`, MB),
    runtime: 'vllm',
  },
  {
    label: 'hostile: 60 KB label values (1 MB)',
    text: fill(`vllm:num_requests_running{model_name="${'m'.repeat(60_000)}"} 1`, MB),
    runtime: 'vllm',
  },
  {
    label: 'hostile: 60 KB of label escapes (1 MB)',
    text: fill(`vllm:num_requests_running{model_name="${'\\"'.repeat(30_000)}"} 1`, MB),
    runtime: 'vllm',
  },
  { label: 'hostile: 15,000 short series (1 MB)', text: manySeries(15_000), runtime: 'sglang' },
];

function throughput(text: string, parse: (text: string) => number): number {
  const timing = timeOps((ops) => {
    let sum = 0;
    for (let i = 0; i < ops; i++) sum += parse(text);
    return sum;
  });
  return text.length / 1e6 / (timing.nsPerOp / 1e9);
}

function table(title: string, measure: (body: Body) => number): Table {
  const rates = BODIES.map(measure);
  const reference = rates[0]!;
  return {
    title,
    columns: ['body', 'KB', 'MB/s (median)', '× slower than vLLM'],
    rows: BODIES.map((body, i) => [
      body.label,
      fmt(body.text.length / 1_000, 0),
      fmt(rates[i]!, 1),
      `${fmt(reference / rates[i]!, 2)}×`,
    ]),
  };
}

function main(): void {
  const parse = table('parsePrometheusText, no filter (every line read)', (body) =>
    throughput(body.text, (text) => parsePrometheusText(text, body.options).samples.length),
  );
  const reader = new LoadReader(0);
  const scrape = table(
    'LoadReader.scrape (the transport’s read: name filter + load mapping)',
    (body) =>
      throughput(body.text, (text) => {
        const { report } = reader.scrape(text, { url: 'http://w:8000', runtime: body.runtime }, 0);
        return report?.runningRequests ?? 0;
      }),
  );
  emit({
    name: 'prometheus-parse',
    tables: [parse, scrape],
    notes: [
      'MB/s = body length in characters (all ASCII, so bytes) ÷ median time of one parse; 1 MB = 10^6 bytes.',
      '× slower than vLLM = the vLLM body’s MB/s ÷ that body’s MB/s, in the same table (≤ 3× is the target).',
      'Default caps (maxLineLength 65,536, maxValueLength 128) everywhere except the row marked *, where maxValueLength is raised so the decimal scanner reads every digit of each run (in the transport row it is the default again).',
    ],
  });
}

main();
