/**
 * The routing text's invariants over generated conversations with every kind of message, part
 * and call, multi-turn, with and without a cap:
 *
 * 1. prefix stability: a turn's text is a prefix of the next turn's (and any prefix of the
 *    message list gives a prefix of the text);
 * 2. a string content and one text part of the same string give the same text;
 * 3. two different non-text parts give different texts;
 * 4. adding any part (or tool call) anywhere changes the text;
 * 5. no JSON value makes `openAIRequest` throw anything but `INVALID_ARGUMENT`.
 *
 * Failures print the seed, the path and the shrunk counterexample (`verbose`).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/core/errors.js';
import { openAIRequest } from '../../src/openai/openai-request.js';
import { runs } from '../helpers/fc-settings.js';

type Json = Record<string, unknown>;

/** Short strings of any UTF-16 code units (lone surrogates included), often plain ASCII. */
const str = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.string({
    unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
    maxLength: 8,
  }),
);

const textPart = str.map((text) => ({ type: 'text', text }));
const refusalPart = str.map((refusal) => ({ type: 'refusal', refusal }));
const imagePart = fc
  .record({ url: str, detail: fc.constantFrom('auto', 'low', 'high') }, { requiredKeys: ['url'] })
  .map((image_url) => ({ type: 'image_url', image_url }));
const audioPart = fc
  .record({ data: str, format: fc.constantFrom('wav', 'mp3') })
  .map((input_audio) => ({ type: 'input_audio', input_audio }));
const filePart = fc
  .oneof(
    str.map((file_id) => ({ file_id })),
    fc.record({ file_data: str, filename: str }),
  )
  .map((file) => ({ type: 'file', file }));
const unknownPart = fc.record(
  { type: fc.oneof(str, fc.integer()), payload: fc.jsonValue({ maxDepth: 2 }) },
  { requiredKeys: [] },
);
const part = fc.oneof(textPart, refusalPart, imagePart, audioPart, filePart, unknownPart);
const parts = fc.array(part, { maxLength: 4 });
const content = fc.oneof(str, fc.constant(null), parts);

const functionCall = fc.record({ name: str, arguments: str }, { requiredKeys: [] });
const toolCall = fc.oneof(
  fc.record({ id: str, type: fc.constant('function'), function: functionCall }),
  fc.record({ id: str, type: fc.constant('custom'), custom: fc.record({ name: str, input: str }) }),
);

const system = fc.record(
  { role: fc.constantFrom('system', 'developer'), content: fc.oneof(str, parts), name: str },
  { requiredKeys: ['role', 'content'] },
);
const user = fc.record(
  { role: fc.constant('user'), content, name: str },
  { requiredKeys: ['role', 'content'] },
);
const assistant = fc.record(
  {
    role: fc.constant('assistant'),
    content,
    name: str,
    refusal: fc.oneof(str, fc.constant(null)),
    tool_calls: fc.array(toolCall, { maxLength: 3 }),
    function_call: functionCall,
    audio: fc.record({ id: str }),
  },
  { requiredKeys: ['role'] },
);
const tool = fc.record({
  role: fc.constant('tool'),
  tool_call_id: str,
  content: fc.oneof(str, fc.array(textPart, { maxLength: 2 })),
});
const message = fc.oneof(system, user, assistant, tool);

const tools = fc.option(
  fc.array(fc.record({ type: fc.constant('function'), function: fc.record({ name: str }) }), {
    maxLength: 2,
  }),
  { nil: undefined },
);

/** A turn: the assistant's answer (maybe calling tools, with their results), then a user message. */
const turn = fc.tuple(fc.array(fc.oneof(assistant, tool), { maxLength: 3 }), user);
/** A conversation: an opening, then turns. */
const conversation = fc.record({
  tools,
  opening: fc.array(fc.oneof(system, user), { minLength: 1, maxLength: 2 }),
  turns: fc.array(turn, { maxLength: 5 }),
});
/** No cap, or one small enough to cut most conversations. */
const cap = fc.option(fc.integer({ min: 0, max: 300 }), { nil: undefined });

function body(toolList: unknown, messages: readonly unknown[]): Json {
  return toolList === undefined
    ? { model: 'm', messages }
    : { model: 'm', tools: toolList, messages };
}

function textOf(b: Json, maxTextChars?: number): string {
  const options = maxTextChars === undefined ? undefined : { maxTextChars };
  return openAIRequest(b, undefined, options).text ?? '';
}

/** Every message list of the conversation, turn by turn. */
function turnsOf(c: { opening: unknown[]; turns: [unknown[], unknown][] }): unknown[][] {
  const lists = [c.opening];
  for (const [answer, next] of c.turns) lists.push([...lists.at(-1)!, ...answer, next]);
  return lists;
}

/** The conversation with every string content replaced by one text part of that string. */
function asParts(messages: readonly unknown[]): unknown[] {
  return messages.map((m) => {
    const record = m as Json;
    return typeof record.content === 'string'
      ? { ...record, content: [{ type: 'text', text: record.content }] }
      : record;
  });
}

describe('routing text properties', () => {
  it('(1) each turn’s text is a prefix of the next turn’s, with and without a cap', () => {
    fc.assert(
      fc.property(conversation, cap, (c, maxTextChars) => {
        let previous = '';
        for (const messages of turnsOf(c)) {
          const text = textOf(body(c.tools, messages), maxTextChars);
          expect(text.startsWith(previous)).toBe(true);
          previous = text;
        }
      }),
      runs(300, 3_000),
    );
  });

  it('(1) any prefix of any message list gives a prefix of its text', () => {
    fc.assert(
      fc.property(tools, fc.array(message, { maxLength: 10 }), cap, (t, messages, maxTextChars) => {
        const full = textOf(body(t, messages), maxTextChars);
        for (let k = 0; k < messages.length; k++) {
          expect(full.startsWith(textOf(body(t, messages.slice(0, k)), maxTextChars))).toBe(true);
        }
      }),
      runs(300, 3_000),
    );
  });

  it('(2) a string content and one text part of the same string give the same text', () => {
    fc.assert(
      fc.property(tools, fc.array(message, { maxLength: 8 }), cap, (t, messages, maxTextChars) => {
        expect(textOf(body(t, asParts(messages)), maxTextChars)).toBe(
          textOf(body(t, messages), maxTextChars),
        );
      }),
      runs(300, 3_000),
    );
  });

  it('(3) two different non-text parts give different texts', () => {
    const kinds: ((s: string) => Json)[] = [
      (url) => ({ type: 'image_url', image_url: { url } }),
      (data) => ({ type: 'image_url', image_url: { url: `data:image/png;base64,${data}` } }),
      (data) => ({ type: 'input_audio', input_audio: { data, format: 'wav' } }),
      (file_data) => ({ type: 'file', file: { file_data } }),
      (file_id) => ({ type: 'file', file: { file_id } }),
      (payload) => ({ type: 'video_url', video_url: { url: payload } }),
    ];
    fc.assert(
      fc.property(
        fc.array(message, { maxLength: 4 }),
        fc.integer({ min: 0, max: kinds.length - 1 }),
        fc.tuple(str, str).filter(([a, b]) => a !== b),
        (history, kind, [a, b]) => {
          const ask = (s: string) => [...history, { role: 'user', content: [kinds[kind]!(s)] }];
          expect(textOf(body(undefined, ask(a)))).not.toBe(textOf(body(undefined, ask(b))));
        },
      ),
      runs(300, 3_000),
    );
  });

  it('(4) adding any part, or any tool call, anywhere changes the text', () => {
    fc.assert(
      fc.property(
        fc.array(message, { minLength: 1, maxLength: 6 }),
        fc.nat(),
        fc.nat(),
        fc.oneof(
          part.map((p) => ({ part: p })),
          toolCall.map((call) => ({ call })),
        ),
        (messages, at, position, added) => {
          const i = at % messages.length;
          const target = messages[i] as Json;
          let changed: Json;
          if ('part' in added) {
            const list =
              typeof target.content === 'string'
                ? [{ type: 'text', text: target.content }]
                : Array.isArray(target.content)
                  ? [...target.content]
                  : [];
            list.splice(position % (list.length + 1), 0, added.part);
            changed = { ...target, content: list };
          } else {
            const calls = Array.isArray(target.tool_calls) ? [...target.tool_calls] : [];
            calls.splice(position % (calls.length + 1), 0, added.call);
            changed = { ...target, tool_calls: calls };
          }
          const after = messages.map((m, k) => (k === i ? changed : m));
          expect(textOf(body(undefined, after))).not.toBe(textOf(body(undefined, messages)));
        },
      ),
      runs(300, 3_000),
    );
  });

  it('(5) never throws for any JSON value, but INVALID_ARGUMENT', () => {
    const json = fc.jsonValue({ maxDepth: 3 });
    // Near-valid shapes, any field of which may be any JSON value instead (one time in five, so
    // that most bodies get past their first fields).
    const anyOf = <T>(arb: fc.Arbitrary<T>) =>
      fc.oneof({ arbitrary: arb, weight: 4 }, { arbitrary: json, weight: 1 });
    const fuzzyPart = fc.record(
      {
        type: anyOf(fc.constantFrom('text', 'refusal', 'image_url', 'input_audio', 'file', 'x')),
        text: anyOf(str),
        refusal: anyOf(str),
        image_url: json,
      },
      { requiredKeys: [] },
    );
    const fuzzyFunction = anyOf(
      fc.record({ name: anyOf(str), arguments: anyOf(str) }, { requiredKeys: [] }),
    );
    const fuzzyCall = fc.record(
      { type: anyOf(fc.constant('function')), function: fuzzyFunction, id: json },
      { requiredKeys: [] },
    );
    const fuzzyMessage = fc.record(
      {
        role: anyOf(fc.constantFrom('user', 'assistant', 'tool')),
        content: anyOf(fc.array(anyOf(fuzzyPart), { maxLength: 3 })),
        name: anyOf(str),
        tool_call_id: anyOf(str),
        refusal: anyOf(str),
        tool_calls: anyOf(fc.array(anyOf(fuzzyCall), { maxLength: 2 })),
        function_call: fuzzyFunction,
        audio: json,
      },
      { requiredKeys: [] },
    );
    const token = fc.oneof({ arbitrary: fc.nat(), weight: 8 }, fc.integer(), fc.double(), json);
    const shaped = fc.record(
      {
        model: anyOf(str),
        messages: anyOf(fc.array(anyOf(fc.oneof(message, fuzzyMessage)), { maxLength: 4 })),
        prompt: anyOf(
          fc.oneof(
            fc.array(anyOf(str), { maxLength: 4 }),
            fc.array(token, { maxLength: 4 }),
            fc.array(anyOf(fc.array(token, { maxLength: 4 })), { maxLength: 4 }),
          ),
        ),
        tools: json,
        functions: json,
        user: json,
      },
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(fc.oneof(json, shaped), cap, (value, maxTextChars) => {
        try {
          const options = { routingKeyField: 'user', maxTextChars: maxTextChars ?? 1_048_576 };
          openAIRequest(value, { 'x-fleetroute-routing-key': 'k' }, options);
        } catch (error) {
          expect(FleetRouteError.is(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
        }
      }),
      runs(1_000, 10_000),
    );
  });
});
