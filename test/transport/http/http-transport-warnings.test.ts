/**
 * `onWarning`: a worker whose load can never be read is reported once, instead of every poll
 * failing silently. Servers run on 127.0.0.1.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type HttpTransportWarning, httpTransport } from '../../../src/transport/http/index.js';
import { WarningLog } from '../../../src/transport/http/transport-warning.js';
import { fixture, fixtureBody, huge, json, reply } from './support/fake-worker.js';
import { useHarness } from './support/harness.js';

const h = useHarness();

function collecting(): {
  warnings: HttpTransportWarning[];
  onWarning: (w: HttpTransportWarning) => void;
} {
  const warnings: HttpTransportWarning[] = [];
  return { warnings, onWarning: (w) => warnings.push(w) };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('METRICS_MISSING', () => {
  it('reports once an SGLang worker started without --enable-metrics (its /metrics is a 404)', async () => {
    // Arrange: SGLang mounts /metrics only with --enable-metrics; FastAPI answers 404 without.
    const server = await h.serve({
      '/health': reply(200, ''),
      '/metrics': json({ detail: 'Not Found' }, 404),
    });
    const worker = await h.workerFor(server, { runtime: 'sglang' });
    const { warnings, onWarning } = collecting();
    const transport = httpTransport({ onWarning });

    // Act
    const first = await transport.loads(worker);
    const second = await transport.loads(worker);

    // Assert
    expect(first).toBeUndefined();
    expect(second).toBeUndefined();
    expect(warnings).toEqual([
      {
        code: 'METRICS_MISSING',
        url: worker.url,
        runtime: 'sglang',
        status: 404,
        message: `GET ${worker.baseUrl}/metrics answered 404: SGLang serves /metrics only when started with --enable-metrics; without it no load is ever read.`,
      },
    ]);
  });

  it('reports each worker on its own', async () => {
    const routes = { '/metrics': reply(404, 'not found') };
    const a = await h.workerFor(await h.serve(routes), { runtime: 'sglang' });
    const b = await h.workerFor(await h.serve(routes), { runtime: 'vllm' });
    const { warnings, onWarning } = collecting();
    const transport = httpTransport({ onWarning });

    await transport.loads(a);
    await transport.loads(b);
    await transport.loads(a);

    expect(warnings.map((w) => [w.url, w.runtime])).toEqual([
      [a.url, 'sglang'],
      [b.url, 'vllm'],
    ]);
  });

  it.each<[string, string, 'sglang' | 'vllm' | 'trtllm' | 'unspecified']>([
    ['only process metrics', 'process_open_fds 87\npython_info{version="3.12"} 1\n', 'sglang'],
    ['another engine', fixture('vllm-v1.txt'), 'sglang'],
    ["TensorRT-LLM's JSON", fixtureBody('trtllm-iteration-stats.jsonc'), 'vllm'],
    ['an HTML page', fixture('nginx-502.txt'), 'unspecified'],
    ['Prometheus text', fixture('sglang.txt').replaceAll('sglang', 'other'), 'trtllm'],
  ])('reports a 2xx body holding %s', async (_label, body, runtime) => {
    const server = await h.serve({ '/metrics': reply(200, body) });
    const worker = await h.workerFor(server, { runtime });
    const { warnings, onWarning } = collecting();

    expect(await httpTransport({ onWarning }).loads(worker)).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ code: 'METRICS_MISSING', runtime, status: 200 });
  });

  it.each<[string, string, number]>([
    ['a worker still starting (503)', 'loading', 503],
    ['an engine metric without a load value yet', 'sglang:engine_startup_time 96.3\n', 200],
    ['an idle trtllm-serve ([])', '[]', 200],
  ])('stays quiet for %s', async (_label, body, status) => {
    const server = await h.serve({ '/metrics': reply(status, body) });
    const runtime = body.startsWith('[') ? 'trtllm' : 'sglang';
    const worker = await h.workerFor(server, { runtime });
    const { warnings, onWarning } = collecting();

    expect(await httpTransport({ onWarning }).loads(worker)).toBeUndefined();
    expect(warnings).toEqual([]);
  });

  it('defaults to one process warning per worker, with code FLEETROUTE_METRICS_MISSING', async () => {
    const emit = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const server = await h.serve({ '/metrics': reply(404, '') });
    const worker = await h.workerFor(server, { runtime: 'trtllm' });
    const transport = httpTransport();

    await transport.loads(worker);
    await transport.loads(worker);

    expect(emit).toHaveBeenCalledTimes(1);
    const [message, options] = emit.mock.calls[0]!;
    expect(message).toContain(`GET ${worker.baseUrl}/metrics answered 404`);
    expect(message).toContain('enable_iter_perf_stats');
    expect(options).toEqual({ code: 'FLEETROUTE_METRICS_MISSING' });
  });

  it('with a logger and no onWarning, the warning goes to logger.warn (fields, then message), not the process', async () => {
    const emit = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const server = await h.serve({ '/metrics': reply(404, '') });
    const worker = await h.workerFor(server, { runtime: 'sglang' });
    const lines: [Record<string, unknown>, string][] = [];
    const transport = httpTransport({ logger: { warn: (f, m) => void lines.push([f, m]) } });

    await transport.loads(worker);

    expect(emit).not.toHaveBeenCalled();
    expect(lines).toHaveLength(1);
    expect(lines[0]![0]).toMatchObject({
      code: 'FLEETROUTE_METRICS_MISSING',
      url: worker.url,
      runtime: 'sglang',
      status: 404,
    });
    expect(lines[0]![1]).toContain('answered 404');
  });

  it('ignores a handler that throws: loads still resolves', async () => {
    const server = await h.serve({ '/metrics': reply(200, 'process_open_fds 3\n') });
    const worker = await h.workerFor(server, { runtime: 'vllm' });
    const transport = httpTransport({
      onWarning: () => {
        throw new Error('handler bug');
      },
    });

    await expect(transport.loads(worker)).resolves.toBeUndefined();
  });
});

describe('METRICS_TOO_LARGE', () => {
  it('reports once a metrics body over maxBodyBytes', async () => {
    const server = await h.serve({ '/metrics': huge(256 * 1024) });
    const worker = await h.workerFor(server, { runtime: 'vllm' });
    const { warnings, onWarning } = collecting();
    const transport = httpTransport({ maxBodyBytes: 65_536, onWarning });

    expect(await transport.loads(worker)).toBeUndefined();
    expect(await transport.loads(worker)).toBeUndefined();

    expect(warnings).toEqual([
      {
        code: 'METRICS_TOO_LARGE',
        url: worker.url,
        runtime: 'vllm',
        maxBodyBytes: 65_536,
        message: expect.stringContaining('larger than maxBodyBytes (65536 bytes)'),
      },
    ]);
  });
});

describe('WarningLog', () => {
  const warning = (url: string): HttpTransportWarning => ({
    code: 'METRICS_MISSING',
    url,
    runtime: 'sglang',
    status: 404,
    message: 'm',
  });

  it('remembers at most its capacity, forgetting the least recently warned first', () => {
    const seen: string[] = [];
    const log = new WarningLog((w) => seen.push(w.url), 2);

    for (const url of ['a', 'b', 'a', 'c', 'b', 'a']) log.warn(warning(url));

    // a, b warned; a again is a repeat; c evicts a; b is still known; a is new again.
    expect(seen).toEqual(['a', 'b', 'c', 'a']);
    expect(log.size).toBe(2);
  });

  it('tells codes apart for one worker', () => {
    const seen: string[] = [];
    const log = new WarningLog((w) => seen.push(w.code), 8);

    log.warn(warning('a'));
    log.warn({
      code: 'METRICS_TOO_LARGE',
      url: 'a',
      runtime: 'sglang',
      maxBodyBytes: 1,
      message: 'm',
    });
    log.warn(warning('a'));

    expect(seen).toEqual(['METRICS_MISSING', 'METRICS_TOO_LARGE']);
  });
});
