/**
 * What a call leaves behind: no listener on the router's signal, no pending timer, and a fetch
 * that ignores its signal cannot hold a call past its deadline.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { CallDeadline } from '../../../src/transport/http/call-deadline.js';
import { httpTransport } from '../../../src/transport/http/index.js';
import { TRANSPORT_FAILED } from '../../../src/transport/http/transport-failure.js';
import { rejectsCode } from '../../support/fixtures.js';
import { vllmRoutes } from './support/fake-worker.js';
import { useHarness } from './support/harness.js';

const h = useHarness();

describe('CallDeadline', () => {
  it('fires on timeout with a TimeoutError and says so', async () => {
    const deadline = new CallDeadline(undefined, 5);

    const reason = await new Promise<unknown>((resolve) =>
      deadline.signal.addEventListener('abort', () => resolve(deadline.signal.reason)),
    );

    expect((reason as DOMException).name).toBe('TimeoutError');
    expect(deadline.reason).toBe('timed out after 5 ms');
    deadline.dispose();
  });

  it('fires with the outer reason when the outer signal fires', () => {
    const outer = new AbortController();
    const deadline = new CallDeadline(outer.signal, 600_000);

    outer.abort('closing');

    expect(deadline.signal.reason).toBe('closing');
    expect(deadline.reason).toBe('aborted');
    deadline.dispose();
  });

  it('starts aborted under an aborted outer signal', () => {
    const deadline = new CallDeadline(AbortSignal.abort('gone'), 600_000);

    expect(deadline.signal.aborted).toBe(true);
    deadline.dispose();
  });

  it('detaches from the outer signal on dispose, so a long-lived signal collects nothing', () => {
    const outer = new AbortController();

    for (let i = 0; i < 1_000; i++) new CallDeadline(outer.signal, 600_000).dispose();

    expect(getEventListeners(outer.signal, 'abort')).toHaveLength(0);
  });

  it('does not fire after dispose', async () => {
    const deadline = new CallDeadline(undefined, 1);
    deadline.dispose();

    await new Promise((resolve) => setTimeout(resolve, 20));

    expect(deadline.signal.aborted).toBe(false);
  });

  it('race rejects with the abort reason even if the raced promise never settles', async () => {
    const outer = new AbortController();
    const deadline = new CallDeadline(outer.signal, 600_000);

    const racing = deadline.race(new Promise<never>(() => {}));
    outer.abort(new Error('stop'));

    await expect(racing).rejects.toThrow('stop');
    deadline.dispose();
  });
});

describe('transport calls leave nothing behind', () => {
  it('leaves no listener on a router signal shared by many calls', async () => {
    const server = await h.serve(vllmRoutes());
    const worker = await h.workerFor(server, { runtime: 'vllm' });
    const transport = httpTransport();
    const router = new AbortController();

    for (let i = 0; i < 20; i++) {
      await transport.probe(worker, router.signal);
      await transport.loads(worker, router.signal);
      await transport.models(worker, router.signal);
    }

    expect(getEventListeners(router.signal, 'abort')).toHaveLength(0);
  });

  it('ends a call at its deadline even when the fetch ignores the signal', async () => {
    const worker = await h.workerFor({ url: 'http://127.0.0.1:9' });
    const stuck = () => new Promise<Response>(() => {});
    const transport = httpTransport({ fetch: stuck, timeoutMs: 50 });

    expect(await transport.probe(worker)).toBe(false);
    expect(await transport.loads(worker)).toBeUndefined();
    const error = await rejectsCode(transport.models(worker), TRANSPORT_FAILED);
    expect(error.message).toContain('timed out after 50 ms');
  });

  it('cancels the body of a response that arrives after its call gave up', async () => {
    const worker = await h.workerFor({ url: 'http://127.0.0.1:9' });
    let cancelled = false;
    let deliver: (response: Response) => void = () => {};
    const late = () =>
      new Promise<Response>((resolve) => {
        deliver = resolve;
      });
    const body = new ReadableStream({
      cancel() {
        cancelled = true;
      },
    });

    expect(await httpTransport({ fetch: late, timeoutMs: 20 }).probe(worker)).toBe(false);
    deliver(new Response(body, { status: 200 }));
    await new Promise((resolve) => setTimeout(resolve, 0));

    expect(cancelled).toBe(true);
  });

  it('hands a custom fetch the URL, a GET without redirects, the headers and a signal', async () => {
    const worker = await h.workerFor({ url: 'http://10.1.2.3:8000' }, { apiKey: 'k1' });
    const calls: [string, RequestInit][] = [];
    const fetch = async (url: string, init: RequestInit) => {
      calls.push([url, init]);
      return new Response('ok', { status: 200 });
    };

    expect(await httpTransport({ fetch }).probe(worker)).toBe(true);

    expect(calls).toHaveLength(1);
    const [url, init] = calls[0]!;
    expect(url).toBe('http://10.1.2.3:8000/health');
    expect(init.method).toBe('GET');
    expect(init.redirect).toBe('manual');
    expect(init.headers).toEqual({ accept: '*/*', authorization: 'Bearer k1' });
    expect(init.signal).toBeInstanceOf(AbortSignal);
  });

  it('treats a fetch that throws synchronously or resolves to junk as a failed call', async () => {
    const worker = await h.workerFor({ url: 'http://10.1.2.3:8000' });
    const throwing = () => {
      throw new TypeError('boom');
    };
    const junk = async () => ({ ok: true }) as unknown as Response;

    expect(await httpTransport({ fetch: throwing }).probe(worker)).toBe(false);
    expect(await httpTransport({ fetch: junk }).probe(worker)).toBe(false);
    await rejectsCode(httpTransport({ fetch: junk }).models(worker), TRANSPORT_FAILED);
  });
});
