/**
 * `openAIRequest`: the model, a completions prompt (text, batches, token ids), every refused
 * shape with the field it names, the routing key, the header allow-list, the options; and a
 * conversation followed turn after turn by `cache_aware`.
 */
import { describe, expect, it } from 'vitest';
import { MAX_KEY_UNITS } from '../../src/cache/tree-keys.js';
import { contentDigest } from '../../src/core/content-digest.js';
import {
  OPENAI_REQUEST_OPTIONS,
  openAIRequest,
  resolveOpenAIRequestOptions,
} from '../../src/openai/openai-request.js';
import { createPolicy } from '../../src/policies/create-policy.js';
import { recordedRegistry, throwsCode } from '../support/fixtures.js';

/** Expects `INVALID_ARGUMENT` whose message starts with `field`. */
function refuses(body: unknown, field: string, options?: object): void {
  const error = throwsCode(() => openAIRequest(body, undefined, options), 'INVALID_ARGUMENT');
  expect(error.message.startsWith(`${field} must be`), error.message).toBe(true);
}

describe('openAIRequest: model and prompt', () => {
  it('reads the model, leaving it out when absent or null', () => {
    expect(openAIRequest({ model: 'llama-3.1-8b' })).toEqual({ model: 'llama-3.1-8b' });
    expect(openAIRequest({})).toEqual({});
    expect(openAIRequest({ model: null, prompt: null, messages: null })).toEqual({});
  });

  it('reads a prompt string, or strings joined with a line break', () => {
    expect(openAIRequest({ prompt: 'Once upon' })).toEqual({ text: 'Once upon' });
    expect(openAIRequest({ prompt: ['a', 'b', ''] })).toEqual({ text: 'a\nb\n' });
    expect(openAIRequest({ prompt: ['only'] }).text).toBe(openAIRequest({ prompt: 'only' }).text);
    expect(openAIRequest({ prompt: '' })).toEqual({});
    expect(openAIRequest({ prompt: [] })).toEqual({});
  });

  it('reads token ids, and concatenates a batch of them, as a Uint32Array', () => {
    const tokens = openAIRequest({ prompt: [0, 1, 4_294_967_295] }).tokens;
    expect(tokens).toBeInstanceOf(Uint32Array);
    expect(Array.from(tokens!)).toEqual([0, 1, 4_294_967_295]);
    expect(Array.from(openAIRequest({ prompt: [[1, 2], [], [3]] }).tokens!)).toEqual([1, 2, 3]);
    expect(openAIRequest({ prompt: [[], []] })).toEqual({});
  });

  it('keeps the first maxTokens ids and the first maxTextChars characters', () => {
    const ids = Array.from({ length: 100 }, (_, i) => i);
    expect(Array.from(openAIRequest({ prompt: ids }, undefined, { maxTokens: 3 }).tokens!)).toEqual(
      [0, 1, 2],
    );
    const batch = { prompt: [ids.slice(0, 2), ids.slice(2)] };
    expect(Array.from(openAIRequest(batch, undefined, { maxTokens: 5 }).tokens!)).toEqual([
      0, 1, 2, 3, 4,
    ]);
    expect(openAIRequest({ prompt: ids }, undefined, { maxTokens: 0 })).toEqual({});
    expect(openAIRequest({ prompt: ['abc', 'def'] }, undefined, { maxTextChars: 5 }).text).toBe(
      'abc\nd',
    );
  });

  it('routes a chat body on its messages, not on a prompt beside them', () => {
    const request = openAIRequest({ messages: [{ role: 'user', content: 'hi' }], prompt: [-1] });
    expect(request).toEqual({ text: '<|user|>\nhi\n' });
  });

  it('caps text and tokens by default at the longest key cache_aware reads', () => {
    const defaults = resolveOpenAIRequestOptions();
    expect(defaults.maxTextChars).toBe(MAX_KEY_UNITS);
    expect(defaults.maxTokens).toBe(MAX_KEY_UNITS);
  });
});

describe('openAIRequest: refused bodies name the field', () => {
  it('refuses a body that is not a JSON object', () => {
    for (const body of [null, undefined, [], 'text', 42, true]) refuses(body, 'body');
  });

  it('refuses a model that is not a short well-formed string', () => {
    for (const model of [7, '', 'x'.repeat(257), 'bad\ud800', ['m']]) refuses({ model }, 'model');
    expect(openAIRequest({ model: 'x'.repeat(256) }).model).toHaveLength(256);
  });

  it('refuses a prompt of a wrong shape, naming the element', () => {
    refuses({ prompt: { text: 'x' } }, 'prompt');
    refuses({ prompt: 12 }, 'prompt');
    refuses({ prompt: [null] }, 'prompt[0]');
    refuses({ prompt: ['a', 1] }, 'prompt[1]');
    refuses({ prompt: [1, 'a'] }, 'prompt[1]');
    refuses({ prompt: [[1], 2] }, 'prompt[1]');
    refuses({ prompt: [[1], [2, 'x']] }, 'prompt[1][1]');
    for (const id of [-1, 1.5, 2 ** 32, Number.NaN, Number.POSITIVE_INFINITY, '3']) {
      refuses({ prompt: [0, id] }, 'prompt[1]');
      refuses({ prompt: [[0, id]] }, 'prompt[0][1]');
    }
  });

  it('checks every token id, past maxTokens too', () => {
    refuses({ prompt: [1, 2, 3, -4] }, 'prompt[3]', { maxTokens: 1 });
  });

  it('refuses messages, messages and their fields of the wrong type', () => {
    const user = (fields: object) => ({ messages: [{ role: 'user', ...fields }] });
    refuses({ messages: 'hi' }, 'messages');
    refuses({ messages: { 0: {} } }, 'messages');
    refuses({ messages: [null] }, 'messages[0]');
    refuses({ messages: [{ role: 'user' }, ['user', 'hi']] }, 'messages[1]');
    refuses({ messages: [{ role: 1 }] }, 'messages[0].role');
    refuses(user({ name: 5 }), 'messages[0].name');
    refuses(user({ tool_call_id: {} }), 'messages[0].tool_call_id');
    refuses(user({ refusal: false }), 'messages[0].refusal');
    refuses(user({ content: 3 }), 'messages[0].content');
    refuses(user({ content: { type: 'text', text: 'x' } }), 'messages[0].content');
    refuses(user({ content: ['x'] }), 'messages[0].content[0]');
    refuses(user({ content: [{ type: 'text' }] }), 'messages[0].content[0].text');
    refuses(user({ content: [{ type: 'text', text: ['x'] }] }), 'messages[0].content[0].text');
    refuses(user({ content: [{ type: 'refusal', refusal: 1 }] }), 'messages[0].content[0].refusal');
    refuses(user({ tool_calls: {} }), 'messages[0].tool_calls');
    refuses(user({ tool_calls: [1] }), 'messages[0].tool_calls[0]');
    refuses(user({ tool_calls: [{ type: 'function' }] }), 'messages[0].tool_calls[0].function');
    refuses(
      user({ tool_calls: [{ function: { name: 1 } }] }),
      'messages[0].tool_calls[0].function.name',
    );
    refuses(
      user({ tool_calls: [{ function: { name: 'f', arguments: { a: 1 } } }] }),
      'messages[0].tool_calls[0].function.arguments',
    );
    refuses(user({ function_call: 'f' }), 'messages[0].function_call');
    refuses(user({ function_call: { arguments: 2 } }), 'messages[0].function_call.arguments');
    refuses({ tools: {}, messages: [] }, 'tools');
    refuses({ functions: 'f', messages: [] }, 'functions');
  });

  it('digests content parts of unknown types rather than refusing them', () => {
    const part = { type: 42, whatever: [{ deep: true }] };
    const request = openAIRequest({ messages: [{ role: 'user', content: [part] }] });
    expect(request.text).toBe(`<|user|>\n[part:${contentDigest(part, 'part')}]\n`);
  });
});

describe('openAIRequest: routing key', () => {
  const body = { user: 'user-7', messages: [] };

  it('is absent unless configured', () => {
    expect(openAIRequest(body, { 'x-session-id': 's-1' }).routingKey).toBeUndefined();
  });

  it('comes from the configured header, case-insensitively, from records and Headers', () => {
    const options = { routingKeyHeader: 'X-Session-Id' };
    expect(openAIRequest(body, { 'x-session-id': 's-1' }, options).routingKey).toBe('s-1');
    expect(openAIRequest(body, { 'X-SESSION-ID': ['', 's-2'] }, options).routingKey).toBe('s-2');
    const headers = new Headers({ 'x-session-id': 's-3' });
    expect(openAIRequest(body, headers, options).routingKey).toBe('s-3');
  });

  it('comes from the configured body field when the header gives none; the header wins', () => {
    const options = { routingKeyHeader: 'x-session-id', routingKeyField: 'user' };
    expect(openAIRequest(body, {}, options).routingKey).toBe('user-7');
    expect(openAIRequest(body, { 'x-session-id': 's-1' }, options).routingKey).toBe('s-1');
    expect(openAIRequest(body, { 'x-session-id': '' }, options).routingKey).toBe('user-7');
  });

  it('ignores a field that is not a non-empty string, or not the body’s own', () => {
    for (const user of [42, '', null, { id: 1 }]) {
      expect(openAIRequest({ user }, {}, { routingKeyField: 'user' }).routingKey).toBeUndefined();
    }
    expect(openAIRequest({}, {}, { routingKeyField: 'constructor' }).routingKey).toBeUndefined();
  });

  it('replaces a key longer than maxRoutingKeyLength by its digest, one per key', () => {
    const options = { routingKeyField: 'user', maxRoutingKeyLength: 32 };
    const exact = 'k'.repeat(32);
    expect(openAIRequest({ user: exact }, {}, options).routingKey).toBe(exact);
    const a = openAIRequest({ user: `${exact}a` }, {}, options).routingKey!;
    const b = openAIRequest({ user: `${exact}b` }, {}, options).routingKey!;
    expect(a).toMatch(/^#[0-9a-f]{16}$/);
    expect(b).toMatch(/^#[0-9a-f]{16}$/);
    expect(a).not.toBe(b);
    const long = openAIRequest({ user: 'x'.repeat(10_000_000) }, {}, { routingKeyField: 'user' });
    expect(long.routingKey).toHaveLength(17);
  });
});

describe('openAIRequest: headers reaching the policies', () => {
  const body = { messages: [] };
  const sent = {
    'X-Fleetroute-Routing-Key': 'session-1',
    'x-fleetroute-target-worker': 'http://10.0.0.9:8000',
    authorization: 'Bearer secret',
    cookie: 'sid=1',
  };

  it('passes only x-fleetroute-routing-key by default, never the others', () => {
    expect(openAIRequest(body, sent).headers).toEqual({ 'x-fleetroute-routing-key': 'session-1' });
    const fromHeaders = openAIRequest(body, new Headers(sent)).headers;
    expect(fromHeaders).toEqual({ 'x-fleetroute-routing-key': 'session-1' });
  });

  it('passes the configured names, case-insensitively, under lower-case names', () => {
    const options = { policyHeaders: ['Authorization', 'X-FLEETROUTE-TARGET-WORKER', 'absent'] };
    expect(openAIRequest(body, sent, options).headers).toEqual({
      authorization: 'Bearer secret',
      'x-fleetroute-target-worker': 'http://10.0.0.9:8000',
    });
    expect(openAIRequest(body, sent, { policyHeaders: [] }).headers).toBeUndefined();
  });

  it('leaves headers out when none is present, and values over 8,192 characters', () => {
    expect(openAIRequest(body, { other: 'x' }).headers).toBeUndefined();
    expect(openAIRequest(body).headers).toBeUndefined();
    const long = { 'x-fleetroute-routing-key': 'k'.repeat(8_193) };
    expect(openAIRequest(body, long).headers).toBeUndefined();
  });

  it('builds a record no header name can give a prototype', () => {
    const options = { policyHeaders: ['__proto__'] };
    const headers = openAIRequest(body, { ['__proto__']: 'x' }, options).headers as object;
    expect(Object.getPrototypeOf(headers)).toBeNull();
    expect(Object.keys(headers)).toEqual(['__proto__']);
  });
});

describe('openAIRequest: options', () => {
  it('refuses unknown keys and bad values, naming them', () => {
    const bad: Record<string, unknown>[] = [
      { maxTextChar: 5 },
      { maxTextChars: -1 },
      { maxTextChars: 1.5 },
      { maxTokens: 2 ** 29 },
      { routingKeyHeader: 'bad header' },
      { routingKeyHeader: '' },
      { routingKeyField: '' },
      { routingKeyField: 3 },
      { maxRoutingKeyLength: 16 },
      { policyHeaders: 'x-a' },
      { policyHeaders: ['ok', 'not ok'] },
      { policyHeaders: Array.from({ length: 65 }, (_, i) => `h${i}`) },
    ];
    for (const options of bad) {
      const error = throwsCode(() => openAIRequest({}, undefined, options), 'INVALID_ARGUMENT');
      expect(error.message).toContain(`options.${Object.keys(options)[0]}`);
    }
    throwsCode(() => resolveOpenAIRequestOptions('x' as never), 'INVALID_ARGUMENT');
  });

  it('resolves once: a resolved object is used as it is, frozen, header names in lower case', () => {
    const resolved = resolveOpenAIRequestOptions({
      routingKeyHeader: 'X-Session-Id',
      policyHeaders: ['X-A', 'x-a', 'X-B'],
    });
    expect(Object.isFrozen(resolved)).toBe(true);
    expect(resolved.routingKeyHeader).toBe('x-session-id');
    expect(resolved.policyHeaders).toEqual(['x-a', 'x-b']);
    expect(resolveOpenAIRequestOptions(resolved)).toBe(resolved);
    // A copy is read as options again, with the same result.
    expect(resolveOpenAIRequestOptions({ ...resolved })).toEqual(resolved);
    const request = openAIRequest({}, { 'x-session-id': 's', 'x-b': 'b' }, resolved);
    expect(request).toEqual({ routingKey: 's', headers: { 'x-b': 'b' } });
  });

  it('declares every option in one table', () => {
    expect(OPENAI_REQUEST_OPTIONS.keys).toEqual([
      'maxTextChars',
      'maxTokens',
      'routingKeyHeader',
      'routingKeyField',
      'maxRoutingKeyLength',
      'policyHeaders',
      'priorityHeader',
      'priorityField',
      'tenantHeader',
      'tenantField',
    ]);
  });
});

describe('openAIRequest with cache_aware', () => {
  it('sends every turn of a conversation to the worker that holds its earlier turns', async () => {
    const { registry } = await recordedRegistry();
    for (let i = 1; i <= 4; i++) {
      await registry.register({ url: `http://10.0.0.${i}:8000`, models: ['m'] });
    }
    const policy = createPolicy('cache_aware');
    const options = resolveOpenAIRequestOptions();
    const tools = [{ type: 'function', function: { name: 'search' } }];
    for (let session = 0; session < 8; session++) {
      const messages: unknown[] = [
        { role: 'system', content: `You are assistant number ${session}, be kind and brief.` },
      ];
      let holder: string | undefined;
      for (let turn = 0; turn < 6; turn++) {
        messages.push({
          role: 'user',
          content: [
            { type: 'text', text: `question ${turn}` },
            { type: 'image_url', image_url: { url: `https://x/${session}/${turn}.png` } },
          ],
        });
        const request = openAIRequest({ model: 'm', tools, messages }, {}, options);
        const worker = policy.select(registry.getByModel('m'), request)!;
        if (holder === undefined) holder = worker.url;
        else {
          expect(worker.url, `session ${session} turn ${turn}`).toBe(holder);
          expect(policy.explain?.()?.branch).toBe('cache_hit');
        }
        messages.push({
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: `c${turn}`, type: 'function', function: { name: 'search', arguments: '{}' } },
          ],
        });
        messages.push({ role: 'tool', tool_call_id: `c${turn}`, content: `result ${turn}` });
      }
    }
    policy.close?.();
    await registry.close();
  });
});

describe('openAIRequest: priority and tenant', () => {
  it('reads the priority and the tenant from their headers by default', () => {
    const headers = { 'x-fleetroute-priority': '-3', 'x-fleetroute-tenant': 'team-a' };
    expect(openAIRequest({ model: 'm' }, headers)).toEqual({
      model: 'm',
      priority: -3,
      tenant: 'team-a',
    });
    expect(openAIRequest({ model: 'm', priority: 7, user: 'u' })).toEqual({ model: 'm' });
  });

  it('reads body fields when configured, the header winning', () => {
    const options = { priorityField: 'importance', tenantField: 'user' };
    expect(openAIRequest({ importance: 2, user: 'u1' }, undefined, options)).toEqual({
      priority: 2,
      tenant: 'u1',
    });
    expect(
      openAIRequest({ importance: 2 }, { 'x-fleetroute-priority': '+5' }, options).priority,
    ).toBe(5);
    expect(openAIRequest({ importance: null }, undefined, options)).toEqual({});
  });

  it('refuses a priority that is not an integer in ±1,000,000, naming where it came from', () => {
    for (const bad of ['1.5', '2000000', 'high', '1e3', ' ', '--1']) {
      const error = throwsCode(
        () => openAIRequest({}, { 'x-fleetroute-priority': bad }),
        'INVALID_ARGUMENT',
      );
      expect(error.message).toMatch(/^header x-fleetroute-priority must be an integer/);
    }
    refuses({ p: 0.5 }, 'p', { priorityField: 'p' });
    refuses({ p: '1' }, 'p', { priorityField: 'p' });
    refuses({ p: -1_000_001 }, 'p', { priorityField: 'p' });
  });

  it('keeps a tenant of at most 256 characters, a longer one as its digest', () => {
    const long = 'x'.repeat(1_000);
    const tenant = openAIRequest({}, { 'x-fleetroute-tenant': long }).tenant!;
    expect(tenant.length).toBeLessThanOrEqual(256);
    expect(tenant).toBe(openAIRequest({}, { 'x-fleetroute-tenant': long }).tenant);
    expect(tenant).not.toBe(openAIRequest({}, { 'x-fleetroute-tenant': `${long}y` }).tenant);
  });

  it('reads no header when its option is false', () => {
    const options = { priorityHeader: false, tenantHeader: false } as const;
    expect(
      openAIRequest({}, { 'x-fleetroute-priority': '1', 'x-fleetroute-tenant': 't' }, options),
    ).toEqual({});
  });
});
