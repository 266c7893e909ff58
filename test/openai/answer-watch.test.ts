/**
 * The watch over a streamed answer: server-sent events with any of the three line endings, extra
 * blank lines between them, cut into chunks anywhere, are forwarded whole and byte for byte (the
 * usage chunk the front asked for cut out), the first output token is marked once, and the last
 * usage is read.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { watchAnswer } from '../../src/openai/answer-watch.js';
import { runs } from '../helpers/fc-settings.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

type Kind = 'role' | 'content' | 'usage' | 'comment' | 'done' | 'blank';
type Ending = '\n' | '\r\n' | '\r';

interface Event {
  readonly kind: Kind;
  /** How its lines end. */
  readonly ending: Ending;
  /** How its blank line ends (an `\n` after an `\r` is written `\r\n`: it would join it). */
  readonly blank: Ending;
  /** Its `data:` split over at most this many lines (JSON events only). */
  readonly lines: number;
  readonly token: string;
}

function payload(event: Event): string | undefined {
  const chunk = { id: 'c', object: 'chat.completion.chunk', model: 'm' };
  switch (event.kind) {
    case 'role':
      return JSON.stringify({ ...chunk, choices: [{ index: 0, delta: { role: 'assistant' } }] });
    case 'content':
      return JSON.stringify({ ...chunk, choices: [{ index: 0, delta: { content: event.token } }] });
    case 'usage':
      return JSON.stringify({
        ...chunk,
        choices: [],
        usage: { prompt_tokens: 7, completion_tokens: event.token.length },
      });
    case 'done':
      return '[DONE]';
    case 'comment':
    case 'blank':
      return undefined;
  }
}

/** The event's text: `data:` lines (a JSON text may be split over several), then a blank line. */
function text(event: Event): string {
  const data = payload(event);
  const eol = event.ending;
  const blank = eol === '\r' && event.blank === '\n' ? '\r\n' : event.blank;
  // An extra empty line: with the blank line before it, a run of three line endings or more.
  if (event.kind === 'blank') return eol;
  if (data === undefined) return `: keep-alive${eol}${blank}`;
  // Split between JSON members (where the newline that joins `data:` lines is whitespace).
  const lines: string[] = [];
  let from = 0;
  for (let at = data.indexOf(',"'); at >= 0 && lines.length < event.lines - 1; ) {
    lines.push(data.slice(from, at + 1));
    from = at + 1;
    at = data.indexOf(',"', from);
  }
  lines.push(data.slice(from));
  return `${lines.map((line) => `data: ${line}`).join(eol)}${eol}${blank}`;
}

/**
 * The texts of a stream. An empty line just before the usage chunk would be cut out with it (it
 * begins that event), so a comment stands there instead; an `\n` right after an `\r` would make
 * one `\r\n` of the two, so it is written `\r\n`.
 */
function texts(events: readonly Event[]): string[] {
  const out: string[] = [];
  events.forEach((event, i) => {
    const before = events[i + 1]?.kind === 'usage' && event.kind === 'blank';
    let t = text(before ? { ...event, kind: 'comment' } : event);
    if (t.startsWith('\n') && out.at(-1)?.endsWith('\r')) t = `\r${t}`;
    out.push(t);
  });
  return out;
}

const eventArb: fc.Arbitrary<Event> = fc.record({
  kind: fc.constantFrom<Kind>('role', 'content', 'content', 'usage', 'comment', 'done', 'blank'),
  ending: fc.constantFrom<Ending>('\n', '\r\n', '\r'),
  blank: fc.constantFrom<Ending>('\n', '\r\n', '\r'),
  lines: fc.integer({ min: 1, max: 3 }),
  // Tokens of any characters: a text whose characters take one byte each, or several.
  token: fc.oneof(
    fc.string({ minLength: 1, maxLength: 6 }),
    fc.string({ unit: 'grapheme', minLength: 1, maxLength: 3 }),
  ),
});

/** Splits `bytes` at the given cut points (sorted, deduplicated). */
function cut(bytes: Uint8Array, points: readonly number[]): Uint8Array[] {
  const at = [...new Set(points.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const point of [...at, bytes.length]) {
    chunks.push(bytes.slice(from, point));
    from = point;
  }
  return chunks;
}

describe('watching a streamed answer', () => {
  it('forwards whole events byte for byte, whatever the line endings and the chunk cuts', () => {
    fc.assert(
      fc.property(
        fc.array(eventArb, { minLength: 1, maxLength: 12 }),
        fc.array(fc.nat(), { maxLength: 40 }),
        fc.boolean(),
        (events, points, strip) => {
          const parts = texts(events);
          const input = encoder.encode(parts.join(''));
          let firstTokens = 0;
          const watch = watchAnswer(
            'text/event-stream',
            { firstToken: () => firstTokens++ },
            strip,
          );

          const outputs: string[] = [];
          for (const chunk of cut(input, points)) outputs.push(decoder.decode(watch.take(chunk)));
          const rest = watch.end();
          if (rest !== undefined) outputs.push(decoder.decode(rest));

          // Everything but the usage chunk (when cut out) passes, in order, unchanged.
          const expected = events
            .map((event, i) => (strip && event.kind === 'usage' ? '' : parts[i]))
            .join('');
          expect(outputs.join('')).toBe(expected);
          // Every take forwards whole events: what passed so far always ends on an event's end.
          const ends = new Set<number>([0]);
          let at = 0;
          events.forEach((event, i) => {
            if (!(strip && event.kind === 'usage')) at += parts[i]!.length;
            ends.add(at);
          });
          let forwarded = 0;
          for (const output of outputs) {
            forwarded += output.length;
            expect(ends.has(forwarded)).toBe(true);
          }
          expect(firstTokens).toBe(events.some((e) => e.kind === 'content') ? 1 : 0);
          const last = events.findLast((e) => e.kind === 'usage');
          expect(watch.usage).toEqual(
            last === undefined
              ? undefined
              : { promptTokens: 7, completionTokens: last.token.length },
          );
        },
      ),
      runs(300, 3_000),
    );
  });

  it('holds back an event whose chunk ends in an \\r that may begin an \\r\\n', () => {
    // After the first token: an event closed by `\r` + `\r\n`, cut between the `\r` and the `\n`,
    // then the usage chunk to cut out. The `\n` belongs to the event before it, and stays.
    const head = 'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n';
    const stream = `${head}data: {"choices":[{"index":0,"delta":{"content":"b"}}]}\r\r\n`;
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n';
    const done = 'data: [DONE]\n\n';
    const bytes = encoder.encode(stream + usage + done);
    for (let at = head.length + 1; at < bytes.length; at++) {
      const watch = watchAnswer('text/event-stream', { firstToken: () => {} }, true);
      let out = decoder.decode(watch.take(bytes.slice(0, head.length)));
      out += decoder.decode(watch.take(bytes.slice(head.length, at)));
      out += decoder.decode(watch.take(bytes.slice(at)));
      out += decoder.decode(watch.end() ?? new Uint8Array(0));
      expect(out).toBe(stream + done);
    }
  });

  it('finds the usage chunk after text whose characters take two bytes each', () => {
    // After the first token, one read: an event of two-byte characters, the usage chunk, [DONE].
    // The usage chunk is looked for in the decoded text, whose offsets fall short of the bytes'
    // by one per such character; here so many that the text's offset lands on the last byte of
    // the `\r\n\r\n` before it.
    const head = 'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n';
    const usage = 'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\r\n\r\n';
    const wide = 'é'.repeat(usage.indexOf('usage"') + 1);
    const event = `data: {"choices":[{"index":0,"delta":{"content":"${wide}"}}]}\r\n\r\n`;
    const done = 'data: [DONE]\r\n\r\n';
    const watch = watchAnswer('text/event-stream', { firstToken: () => {} }, true);
    let out = decoder.decode(watch.take(encoder.encode(head)));
    out += decoder.decode(watch.take(encoder.encode(event + usage + done)));
    out += decoder.decode(watch.end() ?? new Uint8Array(0));
    expect(out).toBe(head + event + done);
    expect(watch.usage).toEqual({ promptTokens: 3, completionTokens: 2 });
  });

  it('cuts out the usage chunk only when the front asked for it', () => {
    const usage = encoder.encode(
      'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n',
    );
    const done = encoder.encode('data: [DONE]\n\n');
    for (const strip of [true, false]) {
      const watch = watchAnswer('text/event-stream', { firstToken: () => {} }, strip);
      const out = decoder.decode(watch.take(new Uint8Array([...usage, ...done])));
      expect(out).toBe(strip ? 'data: [DONE]\n\n' : decoder.decode(usage) + 'data: [DONE]\n\n');
      expect(watch.usage).toEqual({ promptTokens: 3, completionTokens: 2 });
    }
  });
});
