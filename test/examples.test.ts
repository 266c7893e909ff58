/**
 * Every example runs to completion on its own and prints what it promises: examples are docs, and
 * docs that do not run are wrong.
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { hasRedisServer } from './support/redis-server.js';

const run = promisify(execFile);
// The Redis example starts its own server unless REDIS_URL names one; in CI a missing server fails.
const redisAvailable =
  hasRedisServer() || (process.env.REDIS_URL ?? '') !== '' || process.env.CI === 'true';

async function example(name: string): Promise<string> {
  const { stdout } = await run(process.execPath, ['--import', 'tsx', `examples/${name}`], {
    cwd: new URL('..', import.meta.url),
    env: { ...process.env, WORKERS: '' },
    timeout: 60_000,
  });
  return stdout;
}

describe('examples', () => {
  it('quickstart.ts: a Router over two local stand-in workers keeps a shared system prompt on one, and exits 0', async () => {
    const out = await example('quickstart.ts'); // rejects on a non-zero exit
    const answered = [...out.matchAll(/^.+ → (gpu-[ab]) answered$/gm)].map((m) => m[1]);
    expect(answered).toHaveLength(3);
    expect(new Set(answered).size).toBe(1);
  });

  it('admission.ts: a burst is served by priority, tenants in turn, and what does not fit is turned away with a retry time', async () => {
    const out = await example('admission.ts');
    expect(out).toContain(
      'started in this order: bulk-0, bulk-1, bulk-2, bulk-3, urgent, bulk-4, chat-0, bulk-5, chat-1, bulk-6, bulk-7, bulk-8',
    );
    expect(out).toContain('chat-2: turned away (queue_full), retry after 2000 ms');
    expect(out).toContain('admitted at once 4, after a wait 8, turned away 1');
  });

  it('data-parallel.ts: each request reaches the engine on the rank the router chose', async () => {
    const out = await example('data-parallel.ts');
    const lines = [...out.matchAll(/routed to rank (\d), engine served rank (\d)$/gm)];
    expect(lines).toHaveLength(3);
    for (const [, routed, served] of lines) expect(served).toBe(routed);
    // The repeated prompt goes back to the rank that holds it.
    expect(lines[2]![1]).toBe(lines[0]![1]);
  });

  it('lora.ts: adapter requests go where their adapter is loaded, a new adapter to one placement', async () => {
    const out = await example('lora.ts');
    const routes = [...out.matchAll(/^(\S+)\s+→ (\S+)$/gm)].map((m) => [m[1], m[2]]);
    expect(routes.slice(0, 3)).toEqual([
      ['sql-lora', 'http://gpu-1:8000'],
      ['sql-lora', 'http://gpu-1:8000'],
      ['chat-lora', 'http://gpu-3:8000'],
    ]);
    // The new adapter's second request follows its first: remembered as sent there.
    expect(routes[4]).toEqual(['new-lora', routes[3]![1]]);
    expect(routes[5]![0]).toBe('llama');
  });

  it('dns-discovery.ts: the registry follows a DNS name up and down, drains before removal, and keeps the last good answer on a failure', async () => {
    const out = await example('dns-discovery.ts');
    expect(out).toContain(
      'scaled up: http://127.0.0.1:8000 ready, http://127.0.0.2:8000 ready, http://127.0.0.3:8000 ready',
    );
    expect(out).toContain('draining http://127.0.0.3:8000 (a request still in flight)');
    expect(out).toContain('removed http://127.0.0.3:8000');
    expect(out).toContain('lookup failed (ESERVFAIL): keeping 2 workers');
    expect(out).toContain(
      'after the failure: http://127.0.0.1:8000 ready, http://127.0.0.2:8000 ready',
    );
  });

  it('disaggregated.ts: both legs of vLLM and SGLang requests, and a cached prompt that skips its prefill', async () => {
    const out = await example('disaggregated.ts');
    expect(out).toContain('vllm answer: Paris is the capital.');
    expect(out).toMatch(
      /^vllm prefill leg: max_tokens 1, stream false; decode leg got kv_transfer_params from prefill-1, max_tokens 32$/m,
    );
    expect(out).toContain('sglang answer (streamed): Paris is the capital.');
    expect(out).toMatch(/^sglang rooms: prefill \d+, decode \d+, same: true$/m);
    expect(out).toContain('vllm, the same prompt again: prefill leg skipped');
  });

  it('simulator.ts: a custom workload compared across three policies', async () => {
    const out = await example('simulator.ts');
    expect(out).toMatch(/^cache_aware /m);
    expect(out).toMatch(/report: .+fleetroute-example-report\.html/);
  });

  it('sim-disaggregation.ts: always against conditional disaggregation, one row each', async () => {
    const out = await example('sim-disaggregation.ts');
    expect(out).toMatch(/^cache_aware\+always /m);
    expect(out).toMatch(/^cache_aware\+conditional /m);
    expect(out).toMatch(/^cache_aware\+always: TTFT mean \d+ ms, prefill legs skipped 0 of 96/m);
    expect(out).toMatch(
      /^cache_aware\+conditional: TTFT mean \d+ ms, prefill legs skipped [1-9]\d* of 96/m,
    );
  });

  it('kv-events.ts: two replicas route a prompt to the engine that reported caching it', async () => {
    const out = await example('kv-events.ts');
    expect(out).toContain('replica 1 routes the cached prompt to http://127.0.0.1:8001');
    expect(out).toContain('replica 2 routes the cached prompt to http://127.0.0.1:8001');
  });

  it.skipIf(!redisAvailable)(
    'redis.ts: two replicas share loads and a session through Redis, and leave no load keys',
    async () => {
      const out = await example('redis.ts');
      const busy = /^replica A holds 3 requests on (\S+)$/m.exec(out)?.[1];
      expect(busy).toMatch(/^http:\/\/127\.0\.0\.1:900[123]$/);
      expect(out).toContain(`replica B sees ${busy} with 3 requests in flight (3 from replica A)`);
      const elsewhere = /^replica B's least_load sends a new request to (\S+)$/m.exec(out)?.[1];
      expect(elsewhere).toMatch(/^http:\/\/127\.0\.0\.1:900[123]$/);
      expect(elsewhere).not.toBe(busy);
      expect(out).toContain(`after A releases them, replica B sees 0 on ${busy}`);
      const placed = /^replica A places user-42 on (\S+)$/m.exec(out)?.[1];
      expect(placed).toMatch(/^http:\/\/127\.0\.0\.1:900[123]$/);
      expect(out).toContain(`replica B keeps user-42 on ${placed} (read from Redis)`);
      expect(out).toMatch(/^closed: no keys left for the replicas' loads$/m);
    },
  );

  it('router.ts', async () => {
    expect(await example('router.ts')).not.toBe('');
  });

  it('policies.ts', async () => {
    expect(await example('policies.ts')).not.toBe('');
  });

  it('http-transport.ts', async () => {
    expect(await example('http-transport.ts')).not.toBe('');
  });

  it('http-proxy.ts: same prefix to the same worker, a stream relayed, a dying worker survived', async () => {
    const out = await example('http-proxy.ts');
    const served = [...out.matchAll(/^200 from (gpu-\d)/gm)].map((m) => m[1]);
    expect(served).toHaveLength(4);
    expect(served[2]).toBe(served[0]); // same SQL prefix
    expect(served[3]).toBe(served[1]); // same poet prefix
    expect(out).toMatch(/streamed 3 events: "Hello from gpu-\d"/);
    expect(out).toContain('models: meta-llama/Llama-3.1-8B-Instruct'); // discovered from /v1/models
    expect(out).toContain('traceparent reached the worker');
    expect(out).toContain('12/12 requests succeeded');
    expect(out).toContain('loads after the run: 0, 0, 0');
    expect(out).toMatch(/^\/metrics: fleetroute_worker_circuit_state\{worker="[^"]+"\} [01]$/m);
    expect(out).toMatch(/^\/metrics: fleetroute_retries_total\{cause="error"\} [1-9]/m);
  });

  it.each(['openai-fastify.ts', 'openai-express.ts', 'openai-hono.ts'])(
    '%s: a streamed chat answer through the framework',
    async (name) => {
      const out = await example(name);
      expect(out).toMatch(/^listening on http:\/\/127\.0\.0\.1:\d+$/m);
      expect(out).toContain('streamed: "Hello from gpu-0"');
      expect(out).toContain('models: meta-llama/Llama-3.1-8B-Instruct');
    },
  );

  it('retry-policy.ts: only idempotent requests retried, never a 429, waits capped, a Retry-After cools its worker down, each retry logged', async () => {
    const out = await example('retry-policy.ts');
    expect(out).toMatch(
      /failed \(status 503, Retry-After 1000 ms\): retrying in 0 ms; (http:\/\/gpu-\d:8000) cools down for 1 s/,
    );
    expect(out).toContain('→ status 200 after 3 attempt(s)');
    expect(out).toContain('→ threw "socket hang up" after 1 attempt(s)'); // not idempotent
    expect(out).toContain('→ status 429 after 1 attempt(s)');
    expect(out).toContain('→ threw "socket hang up" after 3 attempt(s)'); // maxAttempts
    expect(out).toContain('8 attempts and 4 retries in all');
  });

  it('every example imports only fleetroute, its optional peers and Node built-ins, so it can be copied out', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    const peers = new Set(Object.keys(pkg.peerDependencies));
    for (const name of readdirSync(new URL('../examples', import.meta.url))) {
      if (!name.endsWith('.ts')) continue; // grafana-dashboard.json: data, not code
      const source = readFileSync(new URL(`../examples/${name}`, import.meta.url), 'utf8');
      const specifiers = [...source.matchAll(/^\s*(?:import|export)[^'"]*?from '([^']+)'/gm)].map(
        (m) => m[1]!,
      );
      expect(specifiers.length).toBeGreaterThan(0);
      for (const specifier of specifiers) {
        if (peers.has(specifier)) continue;
        expect(`${name}: ${specifier}`).toMatch(/: (node:|fleetroute(\/|$))/);
      }
    }
  });
});
