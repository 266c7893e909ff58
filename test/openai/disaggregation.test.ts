/**
 * Prefill/decode disaggregation through the OpenAI front, over real HTTP: stand-in vLLM (NIXL)
 * and SGLang prefill and decode engines check the fields of each leg; the client is `fetch` or
 * the `openai` SDK.
 */
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { startPdEngine } from './support/pd-engines.js';
import {
  all,
  cleanUp,
  type Fleet,
  gate,
  MODEL,
  onCleanup,
  post,
  settle,
  startFleet,
} from './support/pd-fleet.js';

afterEach(cleanUp);

describe('vLLM (NIXL): the prefill leg, its kv_transfer_params relayed to the decode leg', () => {
  it('a completion: prefill with max_tokens 1 and no stream, decode with the original body and the issued params', async () => {
    const fleet = await startFleet({ engine: 'vllm' });
    const response = await post(fleet, '/v1/completions', {
      model: MODEL,
      prompt: 'The capital of France is',
      max_tokens: 7,
      stream_options: { include_usage: true },
    });
    expect(response.status).toBe(200);
    expect(((await response.json()) as { choices: Array<{ text: string }> }).choices[0]!.text).toBe(
      'decode0 decode1 decode2 ',
    );
    expect(fleet.ledger.failures).toEqual([]);
    const [p] = all(fleet.prefill);
    const [d] = all(fleet.decode);
    expect(p!.body.kv_transfer_params).toMatchObject({ do_remote_decode: true });
    expect(d!.body).toMatchObject({ max_tokens: 7, prompt: 'The capital of France is' });
    expect(d!.body.stream_options).toEqual({ include_usage: true });
    expect(d!.body.kv_transfer_params).toEqual(
      fleet.ledger.issued.get(String(p!.headers['x-request-id'])),
    );
    expect(d!.headers['x-request-id']).toBe(p!.headers['x-request-id']);
  });

  it('a streamed chat through the openai SDK: the answer streams from the decode leg', async () => {
    const fleet = await startFleet({ engine: 'vllm', prefills: 2, decodes: 2 });
    const client = new OpenAI({ baseURL: `${fleet.url}/v1`, apiKey: 'k', maxRetries: 0 });
    for (let i = 0; i < 2; i++) {
      const stream = await client.chat.completions.create({
        model: MODEL,
        messages: [{ role: 'user', content: `Say hello, ${i}.` }],
        stream: true,
        max_completion_tokens: 9,
      });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
      expect(text).toBe('decode0 decode1 decode2 ');
    }
    expect(fleet.ledger.failures).toEqual([]);
    const prefills = all(fleet.prefill);
    const decodes = all(fleet.decode);
    expect(prefills).toHaveLength(2);
    expect(decodes).toHaveLength(2);
    for (const p of prefills)
      expect(p.body).toMatchObject({ max_completion_tokens: 1, stream: false });
    for (const d of decodes) {
      expect(d.body).toMatchObject({ stream: true, max_completion_tokens: 9 });
      expect(d.body.kv_transfer_params).toMatchObject({ remote_host: '127.0.0.1' });
    }
  });

  it('a prefill leg that fails with a 5xx is retried on another prefill worker', async () => {
    const fleet = await startFleet({
      engine: 'vllm',
      prefills: 2,
      prefill: (i) => (i === 0 ? { failWith: 503 } : {}),
      router: { prefillPolicy: 'round_robin' },
    });
    for (let i = 0; i < 2; i++) {
      const response = await post(fleet, '/v1/completions', { model: MODEL, prompt: `p${i}` });
      expect(response.status).toBe(200);
      await response.text();
    }
    // Round robin sends one of the two calls to the failing worker first.
    expect(fleet.prefill[0]!.requests.length).toBeGreaterThanOrEqual(1);
    expect(fleet.prefill[1]!.requests).toHaveLength(2);
    expect(all(fleet.decode)).toHaveLength(2);
    expect(all(fleet.decode).every((d) => d.body.kv_transfer_params !== undefined)).toBe(true);
  });

  it('every prefill worker failing: the client gets the last failure, the decode worker nothing', async () => {
    const fleet = await startFleet({ engine: 'vllm', prefill: () => ({ failWith: 500 }) });
    const response = await post(fleet, '/v1/completions', { model: MODEL, prompt: 'p' });
    expect(response.status).toBe(500);
    expect(all(fleet.decode)).toHaveLength(0);
  });

  it("data-parallel ranks sharing a base URL: each leg carries its own worker's rank header, no SGLang fields", async () => {
    const fleet = await startFleet({
      engine: 'vllm',
      prefillSpec: (_i, url) => ({ url: `${url}@0`, dpSize: 2 }),
      decodeSpec: (_i, url) => ({ url: `${url}@0`, dpSize: 2 }),
    });
    for (const [type, engine] of [
      ['prefill', fleet.prefill[0]!],
      ['decode', fleet.decode[0]!],
    ] as const)
      await fleet.registry.register({
        url: `${engine.url}@1`,
        models: [MODEL],
        type,
        runtime: 'vllm',
        dpSize: 2,
      });
    /** Leaves only rank `rank` of the `type` workers ready. */
    const only = async (type: 'prefill' | 'decode', rank: number): Promise<void> => {
      const workers = fleet.registry.getByModel(MODEL, type);
      expect(workers.map((w) => w.dpRank).sort()).toEqual([0, 1]);
      for (const w of workers)
        await fleet.registry.transitionStatus(w.id, w.dpRank === rank ? 'ready' : 'not_ready');
    };
    // Each pair of ranks once, the prefill rank never the decode rank: a leg that carried the
    // other leg's rank, or none, is told apart.
    for (const [prefillRank, decodeRank] of [
      [1, 0],
      [0, 1],
    ] as const) {
      await only('prefill', prefillRank);
      await only('decode', decodeRank);
      const response = await post(fleet, '/v1/completions', { model: MODEL, prompt: 'ranks' });
      expect(response.status).toBe(200);
      await response.text();
      const p = all(fleet.prefill).at(-1)!;
      const d = all(fleet.decode).at(-1)!;
      expect(p.headers['x-data-parallel-rank']).toBe(String(prefillRank));
      expect(d.headers['x-data-parallel-rank']).toBe(String(decodeRank));
      expect(d.headers['x-request-id']).toBe(p.headers['x-request-id']);
      expect(d.body.kv_transfer_params).toBeDefined();
      for (const leg of [p, d])
        for (const field of [
          'routed_dp_rank',
          'disagg_prefill_dp_rank',
          'bootstrap_host',
          'bootstrap_port',
          'bootstrap_room',
        ])
          expect(leg.body).not.toHaveProperty(field);
    }
    expect(all(fleet.prefill)).toHaveLength(2);
    expect(all(fleet.decode)).toHaveLength(2);
    expect(fleet.ledger.failures).toEqual([]);
  });
});

describe('SGLang: both legs at once with the same bootstrap host, port and room', () => {
  it('a streamed completion: the same exact room on both legs, the decode waits for its prefill', async () => {
    const fleet = await startFleet({
      engine: 'sglang',
      prefills: 2,
      prefillSpec: (i) => (i === 0 ? { bootstrapPort: 9100 } : {}),
      router: { prefillPolicy: 'round_robin' },
    });
    for (let i = 0; i < 4; i++) {
      const response = await post(fleet, '/v1/completions', {
        model: MODEL,
        prompt: `tell me ${i}`,
        stream: true,
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toContain('text/event-stream');
      expect(await response.text()).toContain('decode2');
    }
    expect(fleet.ledger.failures).toEqual([]);
    const decodes = all(fleet.decode);
    expect(decodes).toHaveLength(4);
    const rooms = new Set<string>();
    for (const d of decodes) {
      const p = all(fleet.prefill).find((r) => r.room === d.room);
      expect(p, `the prefill of room ${d.room}`).toBeDefined();
      // The exact integer, past 2^53 most of the time: as written in both bodies' text.
      expect(BigInt(d.room!)).toBe(BigInt(p!.room!));
      expect(d.body.bootstrap_host).toBe('127.0.0.1');
      expect(p!.body.bootstrap_port).toBe(d.body.bootstrap_port);
      rooms.add(d.room!);
    }
    expect(rooms.size).toBe(4);
    // Rooms written through a JavaScript number would all read as a number prints; exact random
    // integers of 63 bits almost never do (about one in a thousand does).
    expect([...rooms].some((room) => String(Number(room)) !== room)).toBe(true);
    const ports = new Set(decodes.map((d) => d.body.bootstrap_port));
    expect(ports).toEqual(new Set([9100, 8998]));
  });

  it('a failed prefill is retried on another prefill worker with a new room, its decode leg re-sent', async () => {
    const fleet = await startFleet({
      engine: 'sglang',
      prefills: 2,
      prefill: (i) => (i === 0 ? { failWith: 503 } : {}),
      router: { prefillPolicy: 'round_robin' },
    });
    for (let i = 0; i < 2; i++) {
      const response = await post(fleet, '/v1/completions', { model: MODEL, prompt: `p${i}` });
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(fleet.ledger.failures).toEqual([]);
    const failed = fleet.prefill[0]!.requests;
    expect(failed.length).toBeGreaterThanOrEqual(1);
    const decodes = all(fleet.decode);
    expect(decodes).toHaveLength(2 + failed.length);
    // The decode legs paired with the failed prefills were cut; each answered one has a new room.
    for (const f of failed) {
      const paired = decodes.find((d) => d.room === f.room)!;
      expect(paired.aborted).toBe(true);
    }
    const answered = decodes.filter((d) => !d.aborted);
    expect(answered).toHaveLength(2);
    for (const d of answered)
      expect(fleet.prefill[1]!.requests.map((r) => r.room)).toContain(d.room);
  });

  it('data-parallel ranks: each leg carries its own rank; the decode leg names the prefill rank', async () => {
    const fleet = await startFleet({
      engine: 'sglang',
      prefillSpec: (_i, url) => ({ url: `${url}@1`, dpSize: 2 }),
      decodeSpec: (_i, url) => ({ url: `${url}@0`, dpSize: 2 }),
    });
    const response = await post(fleet, '/v1/completions', { model: MODEL, prompt: 'ranks' });
    expect(response.status).toBe(200);
    await response.text();
    const [p] = all(fleet.prefill);
    const [d] = all(fleet.decode);
    expect(p!.headers['x-data-parallel-rank']).toBe('1');
    expect(p!.body).toMatchObject({ routed_dp_rank: 1 });
    expect(p!.body).not.toHaveProperty('disagg_prefill_dp_rank');
    expect(d!.headers['x-data-parallel-rank']).toBe('0');
    expect(d!.body).toMatchObject({ routed_dp_rank: 0, disagg_prefill_dp_rank: 1 });
  });
});

describe('no prefill worker available: disaggregation.fallback', () => {
  async function unavailable(fallback?: 'fail' | 'decode_only') {
    const fleet = await startFleet({
      engine: 'vllm',
      ...(fallback === undefined ? {} : { handler: { disaggregation: { fallback } } }),
    });
    const prefill = fleet.registry.getByModel(MODEL, 'prefill')[0]!;
    await fleet.registry.transitionStatus(prefill.id, 'not_ready');
    const response = await post(fleet, '/v1/completions', { model: MODEL, prompt: 'p' });
    return { fleet, response };
  }

  it("'fail' (the default): a 503 in OpenAI's shape, and a warning", async () => {
    const { fleet, response } = await unavailable();
    expect(response.status).toBe(503);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('no_prefill_worker');
    expect(body.error.message).toContain('No prefill worker is available');
    expect(all(fleet.decode)).toHaveLength(0);
    expect(fleet.warnings.map((w) => w.fields.code)).toEqual(['FLEETROUTE_DISAGG_FALLBACK']);
    expect(fleet.warnings[0]!.fields.fallback).toBe('fail');
  });

  it("'decode_only': the decode worker alone serves it, and a warning says so", async () => {
    const { fleet, response } = await unavailable('decode_only');
    expect(response.status).toBe(200);
    await response.text();
    const [d] = all(fleet.decode);
    expect(d!.body).not.toHaveProperty('kv_transfer_params');
    expect(all(fleet.prefill)).toHaveLength(0);
    expect(fleet.warnings.map((w) => w.fields.fallback)).toEqual(['decode_only']);
  });
});

describe('a client that goes away', () => {
  it('mid-prefill: the prefill leg is aborted, no decode leg is sent', async () => {
    const held = gate();
    const fleet = await startFleet({ engine: 'vllm', prefill: () => ({ hold: held.wait }) });
    const client = new AbortController();
    const sent = post(fleet, '/v1/completions', { model: MODEL, prompt: 'p' }, client.signal);
    await fleet.prefill[0]!.next();
    client.abort();
    await expect(sent).rejects.toThrow();
    await fleet.clientGone();
    await settle();
    expect(fleet.prefill[0]!.requests[0]!.aborted).toBe(true);
    held.open();
    await settle();
    expect(all(fleet.decode)).toHaveLength(0);
  });

  it('vLLM: a client leaving once the prefill answered still gets its decode leg sent, kept until its first byte', async () => {
    const client = new AbortController();
    let fleet: Fleet | undefined;
    const fleetReady = startFleet({
      engine: 'vllm',
      decode: () => ({ stallAfterFirst: true }),
      handler: {
        // The client leaves just as the decode leg is about to be sent.
        fetch: async (url, init) => {
          if (url.startsWith(fleet!.decode[0]!.url)) {
            client.abort();
            await fleet!.clientGone();
          }
          return fetch(url, init);
        },
      },
    });
    fleet = await fleetReady;
    const body = { model: MODEL, prompt: 'p', stream: true };
    const sent = post(fleet, '/v1/completions', body, client.signal);
    await expect(sent).rejects.toThrow();
    for (let i = 0; i < 100 && fleet.decode[0]!.requests.length === 0; i++) await settle();
    const decodeLeg = fleet.decode[0]!.requests[0]!;
    expect(decodeLeg.body.kv_transfer_params).toBeDefined();
    for (let i = 0; i < 100 && !decodeLeg.aborted; i++) await settle();
    expect(decodeLeg.aborted).toBe(true);
    expect(decodeLeg.abortedBeforeFirstByte).toBe(false);
    expect(fleet.ledger.failures).toEqual([]);
  });

  it.each(['vllm', 'sglang'] as const)(
    '%s: after the hand-off began, the decode leg is kept until its first byte, then aborted',
    async (engine) => {
      const held = gate();
      const fleet = await startFleet({
        engine,
        decode: () => ({ hold: held.wait, stallAfterFirst: true }),
      });
      const client = new AbortController();
      const sent = post(
        fleet,
        '/v1/completions',
        { model: MODEL, prompt: 'p', stream: true },
        client.signal,
      );
      const decodeLeg = await fleet.decode[0]!.next();
      client.abort();
      await expect(sent).rejects.toThrow();
      await fleet.clientGone();
      await settle();
      // The client is gone, the decode leg still waits for its KV cache: not cut.
      expect(decodeLeg.aborted).toBe(false);
      expect(all(fleet.prefill).every((p) => !p.aborted)).toBe(true);
      held.open();
      for (let i = 0; i < 100 && !decodeLeg.aborted; i++) await settle();
      expect(decodeLeg.aborted).toBe(true);
      expect(decodeLeg.abortedBeforeFirstByte).toBe(false);
      expect(fleet.ledger.failures).toEqual([]);
    },
  );
});

describe('conditional disaggregation', () => {
  const prompt = 'A long shared system prompt, the same every turn. '.repeat(40);

  it('a prompt its decode worker holds skips the prefill leg; a new one does not', async () => {
    const fleet = await startFleet({
      engine: 'vllm',
      decodes: 2,
      router: { decodePolicy: 'cache_aware' },
    });
    for (const text of [
      prompt,
      prompt,
      `${prompt} And a different question.`.split('').reverse().join(''),
    ]) {
      const response = await post(fleet, '/v1/completions', { model: MODEL, prompt: text });
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(fleet.ledger.failures).toEqual([]);
    const decodes = all(fleet.decode);
    expect(decodes).toHaveLength(3);
    // First: nothing cached, both legs. Second: cached on its decode worker, no prefill leg.
    // Third: a prompt nobody holds, both legs.
    expect(decodes.map((d) => d.body.kv_transfer_params !== undefined)).toEqual([
      true,
      false,
      true,
    ]);
    expect(all(fleet.prefill)).toHaveLength(2);
  });

  it('rule: false disaggregates every request', async () => {
    const fleet = await startFleet({
      engine: 'vllm',
      decodes: 2,
      router: { decodePolicy: 'cache_aware' },
      handler: { disaggregation: { rule: false } },
    });
    for (let i = 0; i < 2; i++) {
      const response = await post(fleet, '/v1/completions', { model: MODEL, prompt });
      await response.text();
    }
    expect(all(fleet.prefill)).toHaveLength(2);
    expect(all(fleet.decode).every((d) => d.body.kv_transfer_params !== undefined)).toBe(true);
  });

  it('a decode policy without cache knowledge runs both legs for every request', async () => {
    const fleet = await startFleet({ engine: 'vllm', decodes: 2 });
    for (let i = 0; i < 2; i++) {
      const response = await post(fleet, '/v1/completions', { model: MODEL, prompt });
      await response.text();
    }
    expect(all(fleet.prefill)).toHaveLength(2);
  });
});

describe('which requests are disaggregated', () => {
  it('a model with regular workers only keeps the single path; a P/D model never reaches its regular workers', async () => {
    const fleet = await startFleet({ engine: 'vllm' });
    const regular = await startPdEngine({ kind: 'vllm-decode', ledger: fleet.ledger });
    onCleanup(() => regular.stop());
    await fleet.registry.register({ url: regular.url, models: [MODEL, 'plain'], runtime: 'vllm' });
    for (const model of [MODEL, MODEL, 'plain']) {
      const response = await post(fleet, '/v1/completions', { model, prompt: 'p' });
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(regular.requests.map((r) => r.body.model)).toEqual(['plain']);
    expect(all(fleet.prefill)).toHaveLength(2);
    expect(all(fleet.decode)).toHaveLength(2);
  });
});
