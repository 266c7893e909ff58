/**
 * API keys: which key is sent, how, and that it never shows in an error, a message or the
 * transport's printed form.
 */
import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { httpTransport } from '../../../src/transport/http/index.js';
import { TRANSPORT_FAILED } from '../../../src/transport/http/transport-failure.js';
import { rejectsCode, throwsCode } from '../../support/fixtures.js';
import { hang, reply, reset, vllmRoutes } from './support/fake-worker.js';
import { useHarness } from './support/harness.js';

const WORKER_KEY = 'sk-worker-3f9a0c1d7e2b4a6f';
const TRANSPORT_KEY = 'sk-fleet-81b7c2e94d0a5f36';

const h = useHarness();

/** Everything an error could show: message, stack, and its full printed form with causes. */
function everythingShown(error: unknown): string {
  const e = error as Error;
  return [String(e), e.message, e.stack, inspect(e, { depth: 10, showHidden: true })].join('\n');
}

describe('API key', () => {
  it('sends the transport key as a bearer token to a worker without its own key', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server);
    const transport = httpTransport({ apiKey: TRANSPORT_KEY });

    await transport.probe(worker);
    await transport.loads(worker);
    await transport.models(worker);

    expect(server.seen.map((r) => r.authorization)).toEqual([
      `Bearer ${TRANSPORT_KEY}`,
      `Bearer ${TRANSPORT_KEY}`,
      `Bearer ${TRANSPORT_KEY}`,
    ]);
  });

  it('sends the worker’s own key rather than the transport’s', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server, { apiKey: WORKER_KEY });

    await httpTransport({ apiKey: TRANSPORT_KEY }).probe(worker);

    expect(server.seen[0]!.authorization).toBe(`Bearer ${WORKER_KEY}`);
  });

  it('sends no Authorization header when neither has a key', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server);

    await httpTransport().probe(worker);

    expect(server.seen[0]!.authorization).toBeUndefined();
  });

  it.each([
    ['a 401', reply(401, `{"error":"bad key ${WORKER_KEY}"}`)],
    ['a reset', reset],
    ['a timeout', hang],
    ['a body that is not JSON', reply(200, `invalid key: ${WORKER_KEY}`)],
  ])('never shows either key in the error of %s', async (_label, route) => {
    const server = await h.serve({ '/v1/models': route });
    const worker = await h.workerFor(server, { apiKey: WORKER_KEY });
    const transport = httpTransport({ apiKey: TRANSPORT_KEY, timeoutMs: 100 });

    const error = await rejectsCode(transport.models(worker), TRANSPORT_FAILED);

    const shown = everythingShown(error);
    expect(shown).not.toContain(WORKER_KEY);
    expect(shown).not.toContain(TRANSPORT_KEY);
  });

  it('never sends, nor shows, a worker key that is not a valid header value', async () => {
    const server = await h.serve(vllmRoutes());
    const badKey = 'sk-line-one\nsk-line-two';
    const worker = await h.workerFor(server, { apiKey: badKey });
    const transport = httpTransport();

    expect(await transport.probe(worker)).toBe(false);
    expect(await transport.loads(worker)).toBeUndefined();
    const error = await rejectsCode(transport.models(worker), TRANSPORT_FAILED);

    expect(error.message).toContain("the worker's apiKey is not a valid HTTP header value");
    expect(everythingShown(error)).not.toContain('sk-line');
    expect(server.seen).toEqual([]);
  });

  it.each([
    ['an empty key', ''],
    ['a key with a newline', 'sk-abc\r\nx-injected: 1'],
    ['a key with a leading space', ` ${TRANSPORT_KEY}`],
    ['a non-ASCII key', `${TRANSPORT_KEY}é`],
  ])('rejects %s as an option without quoting it', (_label, apiKey) => {
    const error = throwsCode(() => httpTransport({ apiKey }), 'INVALID_ARGUMENT');

    expect(error.message).toMatch(/^httpTransport\.apiKey must be /);
    if (apiKey.length > 0) expect(error.message).not.toContain(apiKey.trim().slice(0, 12));
  });

  it('keeps the key out of the transport’s printed and serialised forms', () => {
    const transport = httpTransport({ apiKey: TRANSPORT_KEY });

    expect(inspect(transport, { depth: 10, showHidden: true })).not.toContain(TRANSPORT_KEY);
    expect(JSON.stringify(transport)).not.toContain(TRANSPORT_KEY);
  });
});
