import { describe, expect, it } from 'vitest';
import type { RuntimeType } from '../../../src/index.js';
import {
  LoadReader,
  MAX_LOAD_SERIES,
  MAX_START_TIME_SERIES,
  type ScrapedWorker,
} from '../../../src/transport/http/load-reader.js';
import { fixture } from './support/fake-worker.js';

function worker(runtime: RuntimeType, extra: Partial<ScrapedWorker> = {}): ScrapedWorker {
  return { url: 'http://10.0.0.7:8000', runtime, ...extra };
}

describe('LoadReader: vLLM', () => {
  it('sums requests over engines and takes the fullest engine for KV usage (V1 scrape)', () => {
    const reader = new LoadReader(16);

    const report = reader.read(fixture('vllm-v1.txt'), worker('vllm'), 1_000);

    expect(report).toEqual({
      runningRequests: 12,
      waitingRequests: 2,
      tokenUsage: 0.6101522842639594,
      at: 1_000,
      startedAt: 1_754_118_236_470, // process_start_time_seconds 1.75411823647e+09
      // LoRA on (--max-loras 1), no adapter in flight.
      adapters: { running: [], waiting: [], maxAdapters: 1 },
    });
  });

  it('reads only its own engine for a worker registered as one data-parallel rank', () => {
    const reader = new LoadReader(16);

    const report = reader.read(fixture('vllm-v1.txt'), worker('vllm', { dpRank: 0 }), 1_000);

    expect(report).toEqual({
      runningRequests: 7,
      waitingRequests: 2,
      tokenUsage: 0.42131979695431476,
      at: 1_000,
      startedAt: 1_754_118_236_470, // the process serves every rank
      adapters: { running: [], waiting: [], maxAdapters: 1 },
    });
  });

  it('reads gpu_cache_usage_perc and the throughput gauge of a V0 scrape', () => {
    const report = new LoadReader(16).read(fixture('vllm-v0.txt'), worker('vllm'), 5);

    expect(report).toEqual({
      runningRequests: 3,
      waitingRequests: 1,
      tokenUsage: 0.07310439859302316,
      throughput: 198.4,
      at: 5,
    });
  });

  it('prefers kv_cache_usage_perc to gpu_cache_usage_perc, whichever comes first', () => {
    const text = ['vllm:gpu_cache_usage_perc 0.9', 'vllm:kv_cache_usage_perc 0.2'].join('\n');

    expect(new LoadReader(0).read(text, worker('vllm'), 0)?.tokenUsage).toBe(0.2);
  });

  it('falls back to gpu_cache_usage_perc when every kv_cache_usage_perc series is unusable', () => {
    const text = ['vllm:kv_cache_usage_perc NaN', 'vllm:gpu_cache_usage_perc 0.3'].join('\n');

    expect(new LoadReader(0).read(text, worker('vllm'), 0)?.tokenUsage).toBe(0.3);
  });

  it('sums request counts over model series (base model and LoRA adapters)', () => {
    const text = [
      'vllm:num_requests_running{model_name="base"} 4',
      'vllm:num_requests_running{model_name="sql-lora"} 3',
      'vllm:kv_cache_usage_perc{model_name="base"} 0.5',
      'vllm:kv_cache_usage_perc{model_name="sql-lora"} 0.25',
    ].join('\n');

    expect(new LoadReader(0).read(text, worker('vllm'), 0)).toEqual({
      runningRequests: 7,
      tokenUsage: 0.5,
      at: 0,
    });
  });
});

describe('LoadReader: SGLang', () => {
  it('maps token_usage, num_running_reqs, num_queue_reqs and gen_throughput', () => {
    const report = new LoadReader(16).read(fixture('sglang.txt'), worker('sglang'), 7);

    expect(report).toEqual({
      runningRequests: 14,
      waitingRequests: 3,
      tokenUsage: 0.37,
      throughput: 812.5398611326021,
      at: 7,
    });
  });

  it('reads sglang_ names, sums over dp ranks and drops a +Inf throughput series', () => {
    const report = new LoadReader(16).read(fixture('sglang-exporter.txt'), worker('sglang'), 7);

    expect(report).toEqual({
      runningRequests: 59,
      waitingRequests: 13,
      tokenUsage: 0.93,
      throughput: 1520.25,
      at: 7,
    });
  });

  it('reads only its own dp_rank for a worker registered as one rank', () => {
    const report = new LoadReader(16).read(
      fixture('sglang-exporter.txt'),
      worker('sglang', { dpRank: 1 }),
      7,
    );

    // Rank 1's only throughput series is +Inf: dropped, so no throughput at all.
    expect(report).toEqual({ runningRequests: 28, waitingRequests: 9, tokenUsage: 0.93, at: 7 });
  });
});

describe('LoadReader: runtime choice and bad values', () => {
  it.each<[RuntimeType, string, 'vllm' | 'sglang' | undefined]>([
    ['vllm', 'vllm-v1.txt', 'vllm'],
    ['vllm', 'sglang.txt', undefined],
    ['sglang', 'sglang.txt', 'sglang'],
    ['sglang', 'vllm-v1.txt', undefined],
    ['unspecified', 'vllm-v1.txt', 'vllm'],
    ['unspecified', 'sglang.txt', 'sglang'],
    ['trtllm', 'sglang.txt', 'sglang'],
  ])('a %s worker serving %s reads %s metrics', (runtime, file, family) => {
    const report = new LoadReader(0).read(fixture(file), worker(runtime), 0);

    const expected =
      family === undefined ? undefined : family === 'vllm' ? 12 : 14; /* runningRequests */
    expect(report?.runningRequests).toBe(expected);
  });

  it('reads vLLM metrics when a worker of unknown runtime serves both families', () => {
    const text = `${fixture('sglang.txt')}\n${fixture('vllm-v0.txt')}`;

    expect(new LoadReader(0).read(text, worker('unspecified'), 0)?.runningRequests).toBe(3);
  });

  it('drops NaN, infinite and negative values, and reports nothing when none is left', () => {
    const text = [
      'vllm:num_requests_running NaN',
      'vllm:num_requests_waiting +Inf',
      'vllm:kv_cache_usage_perc -0.5',
      'vllm:avg_generation_throughput_toks_per_s -Inf',
    ].join('\n');

    expect(new LoadReader(0).read(text, worker('vllm'), 0)).toBeUndefined();
  });

  it('keeps the usable series of a metric when others are NaN', () => {
    const text = [
      'vllm:num_requests_running{engine="0"} NaN',
      'vllm:num_requests_running{engine="1"} 2',
    ].join('\n');

    expect(new LoadReader(0).read(text, worker('vllm'), 0)).toEqual({ runningRequests: 2, at: 0 });
  });

  it('reads usage above 1 as 1', () => {
    expect(new LoadReader(0).read('sglang:token_usage 1.7', worker('sglang'), 0)).toEqual({
      tokenUsage: 1,
      at: 0,
    });
  });

  it.each([
    ['an nginx error page', fixture('nginx-502.txt')],
    ['JSON', '{"status":"ok"}'],
    ['an empty body', ''],
    ['unrelated metrics', 'process_open_fds 87\npython_info{version="3.12"} 1\n'],
  ])('reports nothing for %s', (_label, text) => {
    expect(new LoadReader(16).read(text, worker('unspecified'), 0)).toBeUndefined();
  });
});

describe('LoadReader: throughput from the generated-token counter', () => {
  const counter = (tokens: number) =>
    `vllm:num_requests_running 1\nvllm:generation_tokens_total{engine="0"} ${tokens}\n`;

  it('derives tokens per second from two scrapes of the same worker', () => {
    const reader = new LoadReader(16);

    const first = reader.read(counter(1_000), worker('vllm'), 10_000);
    const second = reader.read(counter(1_500), worker('vllm'), 12_000);

    expect(first).toEqual({ runningRequests: 1, at: 10_000 });
    expect(second).toEqual({ runningRequests: 1, throughput: 250, at: 12_000 });
  });

  it('keeps one baseline per worker URL', () => {
    const reader = new LoadReader(16);
    const a = worker('vllm', { url: 'http://a:8000' });
    const b = worker('vllm', { url: 'http://b:8000' });

    reader.read(counter(0), a, 0);
    reader.read(counter(9_000), b, 500);
    const report = reader.read(counter(2_000), a, 2_000);

    expect(report?.throughput).toBe(1_000);
  });

  it('prefers the engine throughput gauge to the counter', () => {
    const reader = new LoadReader(16);
    const text = (tokens: number) =>
      `sglang:gen_throughput 42\nsglang:generation_tokens_total ${tokens}\n`;

    reader.read(text(0), worker('sglang'), 0);

    expect(reader.read(text(10_000), worker('sglang'), 1_000)?.throughput).toBe(42);
  });

  it('derives nothing when tracking is off', () => {
    const reader = new LoadReader(0);

    reader.read(counter(1_000), worker('vllm'), 0);

    expect(reader.read(counter(2_000), worker('vllm'), 5_000)?.throughput).toBeUndefined();
  });

  it('reports nothing for a scrape holding only the counter, the first time', () => {
    const reader = new LoadReader(16);
    const only = (tokens: number) => `vllm:generation_tokens_total ${tokens}\n`;

    expect(reader.read(only(100), worker('vllm'), 0)).toBeUndefined();
    expect(reader.read(only(300), worker('vllm'), 2_000)).toEqual({ throughput: 100, at: 2_000 });
  });
});

describe('LoadReader: a report field is finite or absent', () => {
  it('drops a request count whose series add up past the largest double', () => {
    const text = [
      'vllm:num_requests_running{engine="0"} 1.7e308',
      'vllm:num_requests_running{engine="1"} 1.7e308',
      'vllm:num_requests_waiting{engine="0"} 2',
    ].join('\n');

    const report = new LoadReader(0).read(text, worker('vllm'), 0);

    expect(report).toEqual({ waitingRequests: 2, at: 0 });
  });

  it('drops a throughput gauge that adds up to Infinity, and reports nothing when nothing is left', () => {
    const text = [
      'sglang:gen_throughput{dp_rank="0"} 1e308',
      'sglang:gen_throughput{dp_rank="1"} 1e308',
    ];

    expect(new LoadReader(0).read(text.join('\n'), worker('sglang'), 0)).toBeUndefined();
  });

  it('derives no throughput from a token counter that adds up to Infinity', () => {
    const reader = new LoadReader(16);
    const text = (tokens: string) =>
      `vllm:num_requests_running 1\nvllm:generation_tokens_total{engine="0"} ${tokens}\nvllm:generation_tokens_total{engine="1"} ${tokens}\n`;

    reader.read(text('1e308'), worker('vllm'), 0);
    const report = reader.read(text('1.7e308'), worker('vllm'), 10_000);

    expect(report).toEqual({ runningRequests: 1, at: 10_000 });
  });

  it('keeps the largest finite values exactly', () => {
    const text = `vllm:num_requests_running ${Number.MAX_VALUE}\nvllm:kv_cache_usage_perc 5e-324\n`;

    expect(new LoadReader(0).read(text, worker('vllm'), 0)).toEqual({
      runningRequests: Number.MAX_VALUE,
      tokenUsage: 5e-324,
      at: 0,
    });
  });
});

describe('LoadReader: SGLang tensor-parallel schedulers', () => {
  it('counts the requests of a TP-4 engine once when all four schedulers publish them', () => {
    const all = new LoadReader(0).read(
      fixture('sglang-tp4-all-schedulers.txt'),
      worker('sglang'),
      3,
    );
    const one = new LoadReader(0).read(fixture('sglang-tp4.txt'), worker('sglang'), 3);

    expect(all).toEqual({
      runningRequests: 10,
      waitingRequests: 3,
      tokenUsage: 0.52,
      throughput: 688.31,
      at: 3,
    });
    expect(one).toEqual(all);
  });

  it('adds up attention-DP ranks while counting each rank once over its TP schedulers', () => {
    const report = new LoadReader(0).read(
      fixture('sglang-tp4-dp2-all-schedulers.txt'),
      worker('sglang'),
      3,
    );

    expect(report).toEqual({
      runningRequests: 11,
      waitingRequests: 5,
      tokenUsage: 0.44,
      throughput: 779.75,
      at: 3,
    });
  });

  it('reads one attention-DP rank of a worker registered as that rank', () => {
    const report = new LoadReader(0).read(
      fixture('sglang-tp4-dp2-all-schedulers.txt'),
      worker('sglang', { dpRank: 1 }),
      3,
    );

    expect(report).toEqual({
      runningRequests: 5,
      waitingRequests: 3,
      tokenUsage: 0.44,
      throughput: 377.25,
      at: 3,
    });
  });

  it('still adds up series that differ in a label other than tp_rank', () => {
    const text = [
      'sglang:num_running_reqs{model_name="a",tp_rank="0"} 4',
      'sglang:num_running_reqs{model_name="a",tp_rank="1"} 4',
      'sglang:num_running_reqs{model_name="b",tp_rank="0"} 3',
      'sglang:num_running_reqs{model_name="b",tp_rank="1"} 2',
    ].join('\n');

    expect(new LoadReader(0).read(text, worker('sglang'), 0)).toEqual({
      runningRequests: 7,
      at: 0,
    });
  });
});

describe('LoadReader: TensorRT-LLM iteration statistics', () => {
  const stats = (entries: unknown[]) => JSON.stringify(entries);

  it.each<[RuntimeType, boolean]>([
    ['trtllm', true],
    ['unspecified', true],
    ['vllm', false],
    ['sglang', false],
  ])('a %s worker serving the JSON array reads it: %s', (runtime, reads) => {
    const body = stats([{ iter: 1, numActiveRequests: 3, numQueuedRequests: 1 }]);

    const reading = new LoadReader(0).scrape(body, worker(runtime), 9);

    expect(reading.report).toEqual(
      reads ? { runningRequests: 3, waitingRequests: 1, at: 9 } : undefined,
    );
    expect(reading.recognised).toBe(reads);
  });

  it('says whether a Prometheus body came from the worker engine', () => {
    const reader = new LoadReader(0);

    expect(reader.scrape('sglang:engine_startup_time 90\n', worker('sglang'), 0)).toEqual({
      report: undefined,
      recognised: true,
    });
    expect(reader.scrape(fixture('vllm-v1.txt'), worker('sglang'), 0).recognised).toBe(false);
    expect(reader.scrape(fixture('nginx-502.txt'), worker('unspecified'), 0).recognised).toBe(
      false,
    );
  });
});

describe('LoadReader: bounded work per scrape', () => {
  it('reads at most MAX_LOAD_SERIES series of the mapped metrics, skipping later ones', () => {
    const lines: string[] = [];
    for (let i = 0; i < MAX_LOAD_SERIES + 500; i++) {
      lines.push(`vllm:num_requests_running{engine="${i}"} 1`);
    }
    lines.push('vllm:kv_cache_usage_perc 0.5');

    const report = new LoadReader(0).read(lines.join('\n'), worker('vllm'), 0);

    expect(report).toEqual({ runningRequests: MAX_LOAD_SERIES, at: 0 });
  });
});

describe('LoadReader: the engine process start time', () => {
  const load = 'vllm:num_requests_running 3';

  it('reads process_start_time_seconds as startedAt, in ms since the epoch', () => {
    const text = `${load}\nprocess_start_time_seconds 1764580447.123\n`;

    const report = new LoadReader(0).read(text, worker('vllm'), 5);

    expect(report).toEqual({ runningRequests: 3, at: 5, startedAt: 1_764_580_447_123 });
  });

  it('reads it for SGLang and unspecified workers too, whose engines may serve it', () => {
    const sglang = 'sglang:num_running_reqs 2\nprocess_start_time_seconds 1.7e9\n';

    expect(new LoadReader(0).read(sglang, worker('sglang'), 0)?.startedAt).toBe(1.7e12);
    expect(new LoadReader(0).read(sglang, worker('unspecified'), 0)?.startedAt).toBe(1.7e12);
  });

  it.each([
    ['NaN', 'NaN'],
    ['+Inf', '+Inf'],
    ['a negative value', '-1754118236'],
    ['zero', '0'],
    ['a time before 2000', '946684799'],
    ['a time after 2100', '4102444801'],
    ['milliseconds written as seconds', '1764580447123'],
  ])('ignores %s', (_what, value) => {
    const report = new LoadReader(0).read(
      `${load}\nprocess_start_time_seconds ${value}\n`,
      worker('vllm'),
      0,
    );

    expect(report).toEqual({ runningRequests: 3, at: 0 });
  });

  it('takes the newest start when several processes report one', () => {
    const text = [
      load,
      'process_start_time_seconds{instance="a"} 1764580000',
      'process_start_time_seconds{instance="b"} 1764580447.5',
      'process_start_time_seconds{instance="c"} 1e300',
    ].join('\n');

    expect(new LoadReader(0).read(text, worker('vllm'), 0)?.startedAt).toBe(1_764_580_447_500);
  });

  it('reads at most MAX_START_TIME_SERIES series of it', () => {
    const lines = [load];
    for (let i = 0; i < MAX_START_TIME_SERIES; i++)
      lines.push(`process_start_time_seconds{instance="${i}"} 1764580000`);
    lines.push('process_start_time_seconds{instance="late"} 1764589999');

    expect(new LoadReader(0).read(lines.join('\n'), worker('vllm'), 0)?.startedAt).toBe(
      1_764_580_000_000,
    );
  });

  it('makes no report on its own: a body with only a start time has no load', () => {
    const reading = new LoadReader(0).scrape(
      'process_start_time_seconds 1764580447\n',
      worker('vllm'),
      0,
    );

    expect(reading).toEqual({ report: undefined, recognised: false });
  });
});
