/**
 * Over real HTTP: an engine that dies while traffic flows and restarts on its port is routed
 * requests again as soon as the health loop sees it back, though its breaker's `openMs` is ten
 * minutes — the breaker turns half-open when the worker returns to `ready`, and its trials close
 * it. Stand-in vLLM engines on 127.0.0.1, `httpTransport()`, `round_robin`.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { Router, type Worker, WorkerRegistry } from '../../src/index.js';
import { httpTransport } from '../../src/transport/http/index.js';
import { type StandInEngine, startStandInEngine } from '../support/vllm-engine.js';

const engines: StandInEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.stop()));
});

/** Waits (bounded) until `condition` holds; throws naming `what` otherwise. */
async function until(what: string, condition: () => boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`not reached in ${ms} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** One completion; the body is read, so the lease covers the whole answer. */
async function complete(worker: Worker, signal: AbortSignal, model: string) {
  const response = await fetch(`${worker.baseUrl}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, prompt: 'Hello', max_tokens: 2 }),
    signal,
  });
  await response.arrayBuffer();
  return { status: response.status };
}

describe('an engine restarted under traffic', () => {
  it('is routed requests again once the health loop sees it back, with openMs at 10 minutes', async () => {
    // Arrange: three engines, all ready; steady traffic.
    for (let i = 0; i < 3; i++) engines.push(await startStandInEngine());
    const model = engines[0]!.model;
    const registry = await WorkerRegistry.create();
    for (const engine of engines) await registry.register({ url: engine.url, models: [model] });
    const router = new Router({
      registry,
      transport: httpTransport({ timeoutMs: 1_000 }),
      policy: 'round_robin',
      health: { intervalMs: 300, startupIntervalMs: 50, timeoutMs: 250, failureThreshold: 2 },
      loadPolling: false,
      circuitBreaker: { failureThreshold: 3, openMs: 600_000 },
      retry: { maxAttempts: 3, initialBackoffMs: 1 },
    });
    const changes: string[] = [];
    router.on('circuitChanged', (e) => changes.push(`${e.from}→${e.to}`));
    await router.ready({ minWorkers: 3, signal: AbortSignal.timeout(15_000) });
    const statuses: number[] = [];
    let flowing = true;
    const traffic = (async () => {
      while (flowing) {
        const { status } = await router.execute({ model }, (worker, { signal }) =>
          complete(worker, signal, model),
        );
        statuses.push(status);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const victim = engines[1]!;
    const worker = registry.getByUrl(victim.url)!;
    try {
      await until('the victim serves traffic', () => victim.requests.length >= 3);

      // Act 1: it dies. Requests to it fail (retried elsewhere), its breaker opens, the probes mark
      // it not_ready.
      await victim.stop();
      await until('its breaker opens', () => worker.circuitBreaker.state === 'open');
      await until('the health loop marks it not_ready', () => worker.status === 'not_ready');
      const servedBefore = victim.requests.length;

      // Act 2: it restarts on its port.
      await victim.restart();

      // Assert: routed requests reach it again, and its trials close the breaker.
      await until(
        'requests reach the restarted engine',
        () => victim.requests.length > servedBefore,
      );
      await until('its breaker closes', () => worker.circuitBreaker.state === 'closed');
    } finally {
      flowing = false;
      await traffic;
      await router.close();
    }
    expect(worker.status).toBe('ready');
    expect(changes).toEqual(['closed→open', 'open→half_open', 'half_open→closed']);
    expect(statuses.every((s) => s === 200)).toBe(true);
  }, 60_000);
});
