/**
 * The routing text of chat bodies: its exact format, what each kind of content contributes, the
 * cap, and hostile bodies (10,000 messages, a 100 MB image, deep nesting, huge strings, lone
 * surrogates) that cost no more than the cap needs.
 */
import { describe, expect, it } from 'vitest';
import { contentDigest } from '../../src/core/content-digest.js';
import { type OpenAIRequestOptions, openAIRequest } from '../../src/openai/openai-request.js';

function textOf(body: Record<string, unknown>, options?: OpenAIRequestOptions): string | undefined {
  return openAIRequest(body, undefined, options).text;
}

const chat = (...messages: unknown[]): Record<string, unknown> => ({ model: 'm', messages });

const image = (url: string): Record<string, unknown> => ({
  type: 'image_url',
  image_url: { url },
});

describe('routing text: format', () => {
  it('renders tools, then each message with its role, name, content, refusal and calls', () => {
    const tools = [{ type: 'function', function: { name: 'get_weather', parameters: {} } }];
    const text = textOf({
      model: 'm',
      tools,
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', name: 'ann', content: [{ type: 'text', text: 'Weather?' }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'c1', type: 'function', function: { name: 'get_weather', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'sunny' },
        { role: 'assistant', content: 'Sunny.', refusal: null },
      ],
    });
    expect(text).toBe(
      `[tools:${contentDigest(tools, 'tools')}]\n` +
        '<|system|>\nBe brief.\n' +
        '<|user name=ann|>\nWeather?\n' +
        '<|assistant|>\n[call get_weather]{}\n' +
        '<|tool tool_call_id=c1|>\nsunny\n' +
        '<|assistant|>\nSunny.\n',
    );
  });

  it('gives a string content and one text part of the same string the same text', () => {
    for (const s of ['', 'hello', 'a\nb', '\ud800 lone', '😀']) {
      expect(textOf(chat({ role: 'user', content: s }))).toBe(
        textOf(chat({ role: 'user', content: [{ type: 'text', text: s, extra: 1 }] })),
      );
    }
  });

  it('renders every part on its own line, text as it is and the others as a digest', () => {
    const parts = [
      { type: 'text', text: 'look' },
      image('https://x/cat.png'),
      { type: 'input_audio', input_audio: { data: 'UklGR', format: 'wav' } },
      { type: 'file', file: { file_id: 'file-1' } },
      { type: 'refusal', refusal: 'no' },
      { type: 'video_url', video_url: { url: 'https://x/v.mp4' } },
      { no_type: true },
    ];
    const d = (i: number): string => contentDigest(parts[i], 'part');
    expect(textOf(chat({ role: 'user', content: parts }))).toBe(
      '<|user|>\nlook\n' +
        `[image:${d(1)}]\n[audio:${d(2)}]\n[file:${d(3)}]\n[refusal]no\n` +
        `[part:${d(5)}]\n[part:${d(6)}]\n`,
    );
  });

  it('tells apart two images, two audio clips and two files, and keeps the same one alike', () => {
    const one = (part: unknown): string | undefined =>
      textOf(chat({ role: 'user', content: [part] }));
    expect(one(image('https://x/a.png'))).not.toBe(one(image('https://x/b.png')));
    expect(one(image('data:image/png;base64,AAAA'))).not.toBe(
      one(image('data:image/png;base64,AAAB')),
    );
    expect(one({ type: 'image_url', image_url: { url: 'u', detail: 'low' } })).toBe(
      one({ image_url: { detail: 'low', url: 'u' }, type: 'image_url' }),
    );
    const audio = (data: string) => ({ type: 'input_audio', input_audio: { data, format: 'mp3' } });
    expect(one(audio('AAAA'))).not.toBe(one(audio('AAAB')));
    const file = (id: string) => ({ type: 'file', file: { file_id: id } });
    expect(one(file('file-1'))).not.toBe(one(file('file-2')));
  });

  it('renders every tool call, other call types and the legacy function_call', () => {
    const custom = { id: 'c2', type: 'custom', custom: { name: 'sql', input: 'select 1' } };
    const text = textOf(
      chat({
        role: 'assistant',
        content: 'Calling.',
        tool_calls: [
          { type: 'function', function: { name: 'a', arguments: '{"x":1}' } },
          { type: 'function', function: {} },
          custom,
        ],
        function_call: { name: 'legacy', arguments: '{}' },
        audio: { id: 'audio_1' },
      }),
    );
    expect(text).toBe(
      '<|assistant|>\nCalling.\n[call a]{"x":1}\n[call ]\n' +
        `[call:${contentDigest(custom, 'call')}]\n[call legacy]{}\n` +
        `[audio:${contentDigest({ id: 'audio_1' }, 'audio')}]\n`,
    );
  });

  it('puts the tools first, the same tools giving the same prefix, other tools another', () => {
    const tools = (name: string) => [{ type: 'function', function: { name } }];
    const a = textOf({ tools: tools('a'), messages: [{ role: 'user', content: 'hi' }] })!;
    const a2 = textOf({ tools: tools('a'), messages: [{ role: 'user', content: 'bye' }] })!;
    const b = textOf({ tools: tools('b'), messages: [{ role: 'user', content: 'hi' }] })!;
    expect(a.startsWith('[tools:')).toBe(true);
    expect(a.slice(0, 25)).toBe(a2.slice(0, 25));
    expect(a).not.toBe(b);
    expect(textOf({ tools: [], messages: [{ role: 'user', content: 'hi' }] })).toBe(
      '<|user|>\nhi\n',
    );
    const functions = [{ name: 'f' }];
    expect(textOf({ functions, messages: [] })).toBe(
      `[functions:${contentDigest(functions, 'functions')}]\n`,
    );
  });

  it('adds nothing that depends on the end of the list: each turn extends the last', () => {
    const turns = [
      { role: 'system', content: 'S' },
      { role: 'user', content: 'Q1' },
      { role: 'assistant', content: 'A1' },
      { role: 'user', content: [{ type: 'text', text: 'Q2' }, image('https://x/i.png')] },
    ];
    let previous = '';
    for (let k = 1; k <= turns.length; k++) {
      const text = textOf(chat(...turns.slice(0, k)))!;
      expect(text.startsWith(previous)).toBe(true);
      expect(text.length).toBeGreaterThan(previous.length);
      previous = text;
    }
  });

  it('leaves text out for an empty conversation', () => {
    expect(openAIRequest({ model: 'm', messages: [] })).toEqual({ model: 'm' });
  });
});

describe('routing text: the cap', () => {
  it('cuts the text at maxTextChars, and a cut text is a prefix of the uncut one', () => {
    const body = chat({ role: 'user', content: 'x'.repeat(100) });
    const full = textOf(body)!;
    const cut = textOf(body, { maxTextChars: 20 })!;
    expect(cut).toBe(full.slice(0, 20));
    expect(textOf(body, { maxTextChars: 0 })).toBeUndefined();
  });

  it('never ends on the first half of a surrogate pair once the cap is reached', () => {
    // '<|user|>\n' is 9 units: the pair occupies units 10 and 11.
    const body = chat({ role: 'user', content: 'a😀b' });
    expect(textOf(body, { maxTextChars: 11 })).toBe('<|user|>\na');
    expect(textOf(body, { maxTextChars: 12 })).toBe('<|user|>\na😀');
    // Reached the cap exactly with a lone high surrogate: dropped too, as any text extending it.
    expect(textOf(chat({ role: 'user', content: 'a\ud800' }), { maxTextChars: 11 })).toBe(
      '<|user|>\na',
    );
    expect(textOf(chat({ role: 'user', content: 'a\ud800' }), { maxTextChars: 12 })).toBe(
      '<|user|>\na\ud800\n',
    );
  });

  it('reads no part past the cap beyond its type', () => {
    const reads: string[] = [];
    const spy = new Proxy(image('https://x/late.png'), {
      get(target, key, receiver) {
        reads.push(String(key));
        return Reflect.get(target, key, receiver);
      },
      ownKeys(target) {
        reads.push('ownKeys');
        return Reflect.ownKeys(target);
      },
    });
    const body = chat({ role: 'user', content: 'x'.repeat(50) }, { role: 'user', content: [spy] });
    textOf(body, { maxTextChars: 40 });
    expect(reads).toEqual(['type']);
    reads.length = 0;
    textOf(body);
    expect(reads).toContain('ownKeys');
  });

  it('checks the shapes past the cap all the same', () => {
    const body = chat({ role: 'user', content: 'x'.repeat(50) }, { role: 'user', content: 7 });
    expect(() => textOf(body, { maxTextChars: 10 })).toThrow(/messages\[1\]\.content/);
  });
});

describe('routing text: hostile bodies', () => {
  it('10,000 messages with a part of every kind: capped, the tail not digested', () => {
    const reads = { count: 0 };
    const counted = {
      type: 'image_url',
      get image_url() {
        reads.count++;
        return { url: 'https://x/a.png' };
      },
    };
    const messages = Array.from({ length: 10_000 }, (_, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: [
        { type: 'text', text: `message ${i}` },
        counted,
        { type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } },
        { type: 'file', file: { file_data: 'JVBERi0' } },
        { type: 'refusal', refusal: 'no' },
        { type: 'mystery', payload: [1, 2, 3] },
      ],
    }));
    const text = textOf({ messages }, { maxTextChars: 4_096 })!;
    expect(text.length).toBe(4_096);
    expect(reads.count).toBeGreaterThan(0);
    expect(reads.count).toBeLessThan(100);
    const whole = textOf({ messages }, { maxTextChars: 2 ** 24 })!;
    expect(whole.startsWith(text)).toBe(true);
    expect(whole.endsWith(`message 9999\n[image:${contentDigest(counted, 'part')}]`)).toBe(false);
    expect(whole.includes('message 9999\n[image:')).toBe(true);
  });

  it('a 100 MB image is digested whole: a change in its last byte shows', () => {
    const data = 'A'.repeat(100 * 2 ** 20);
    const a = textOf(chat({ role: 'user', content: [image(`data:image/png;base64,${data}`)] }))!;
    const b = textOf(chat({ role: 'user', content: [image(`data:image/png;base64,${data}B`)] }))!;
    expect(a).toMatch(/^<\|user\|>\n\[image:[0-9a-f]{16}\]\n$/);
    expect(a).not.toBe(b);
  });

  it('deep nesting in a part is digested; in an unknown field it is never read', () => {
    let deep: unknown = 0;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    const part = { type: 'mystery', deep };
    expect(textOf(chat({ role: 'user', content: [part] }))).toMatch(/^<\|user\|>\n\[part:/);
    const body = { ...chat({ role: 'user', content: 'hi' }), extra: deep };
    expect(textOf(body)).toBe('<|user|>\nhi\n');
  });

  it('a huge string is cut at the default cap of 1,048,576 units', () => {
    const text = textOf(chat({ role: 'user', content: 'y'.repeat(50_000_000) }))!;
    expect(text.length).toBe(1_048_576);
    expect(text.startsWith('<|user|>\nyyy')).toBe(true);
  });

  it('keeps lone surrogates as they are, in text and in attributes', () => {
    const text = textOf(chat({ role: '\udc00', name: '\ud800', content: 'x\udbff' }));
    expect(text).toBe('<|\udc00 name=\ud800|>\nx\udbff\n');
  });
});
