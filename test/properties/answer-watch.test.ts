/**
 * The answer watch over any split of a worker's answer into chunks: what it forwards is the
 * answer (less the usage chunk it was told to cut), the first token is reported exactly once at
 * the first event with output, and the last usage is read — whatever the line endings and however
 * the bytes were cut.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ReadUsage, watchAnswer } from '../../src/openai/answer-watch.js';
import { runs } from '../helpers/fc-settings.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

type Piece =
  | { readonly kind: 'role' }
  | { readonly kind: 'content'; readonly text: string }
  | { readonly kind: 'usage'; readonly prompt: number; readonly completion: number }
  | { readonly kind: 'comment' }
  | { readonly kind: 'done' };

function eventOf(piece: Piece): string {
  switch (piece.kind) {
    case 'role':
      return JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: '' } }] });
    case 'content':
      return JSON.stringify({ choices: [{ index: 0, delta: { content: piece.text } }] });
    case 'usage':
      return JSON.stringify({
        choices: [],
        usage: { prompt_tokens: piece.prompt, completion_tokens: piece.completion },
      });
    case 'comment':
      return '';
    case 'done':
      return '[DONE]';
  }
}

const piece: fc.Arbitrary<Piece> = fc.oneof(
  fc.constant<Piece>({ kind: 'role' }),
  fc.string({ minLength: 1, maxLength: 12 }).map<Piece>((text) => ({ kind: 'content', text })),
  fc
    .record({ prompt: fc.nat(100_000), completion: fc.nat(100_000) })
    .map<Piece>((u) => ({ kind: 'usage', ...u })),
  fc.constant<Piece>({ kind: 'comment' }),
  fc.constant<Piece>({ kind: 'done' }),
);

const newline = fc.constantFrom('\n', '\r\n', '\r');

/** The answer's events as text, each with its own line endings. */
const answer = fc.array(fc.tuple(piece, newline), { maxLength: 12 }).map((events) =>
  events.map(([p, nl]) => ({
    piece: p,
    text: p.kind === 'comment' ? `: keep-alive${nl}${nl}` : `data: ${eventOf(p)}${nl}${nl}`,
  })),
);

/** Bytes cut into chunks at the given points. */
function cut(bytes: Uint8Array, points: readonly number[]): Uint8Array[] {
  const at = [...new Set(points.map((p) => p % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const p of [...at, bytes.length]) {
    if (p > from) chunks.push(bytes.slice(from, p));
    from = Math.max(from, p);
  }
  return chunks;
}

function run(chunks: readonly Uint8Array[], strip: boolean) {
  let firstTokens = 0;
  let forwardedBeforeFirst = '';
  let out = '';
  const watch = watchAnswer(
    'text/event-stream; charset=utf-8',
    {
      firstToken: () => {
        firstTokens++;
        forwardedBeforeFirst = out;
      },
    },
    strip,
  );
  for (const chunk of chunks) out += decoder.decode(watch.take(chunk), { stream: true });
  const rest = watch.end();
  if (rest !== undefined) out += decoder.decode(rest, { stream: true });
  out += decoder.decode();
  return { out, firstTokens, forwardedBeforeFirst, usage: watch.usage };
}

describe('the answer watch, over every split of an answer into chunks', () => {
  it('forwards the answer (less cut usage chunks), reports the first token once, reads the last usage', () => {
    fc.assert(
      fc.property(
        answer,
        fc.array(fc.nat(), { maxLength: 8 }),
        fc.boolean(),
        (events, points, strip) => {
          const whole = events.map((e) => e.text).join('');
          const result = run(cut(encoder.encode(whole), points), strip);
          const expected = events
            .filter((e) => !(strip && e.piece.kind === 'usage'))
            .map((e) => e.text)
            .join('');
          expect(result.out).toBe(expected);
          const firstOutput = events.findIndex((e) => e.piece.kind === 'content');
          expect(result.firstTokens).toBe(firstOutput < 0 ? 0 : 1);
          if (firstOutput >= 0) {
            // Reported when its event is read: nothing after that event was forwarded before.
            const upTo = events
              .slice(0, firstOutput)
              .filter((e) => !(strip && e.piece.kind === 'usage'))
              .map((e) => e.text)
              .join('');
            expect(upTo.startsWith(result.forwardedBeforeFirst)).toBe(true);
          }
          const usages = events.filter((e) => e.piece.kind === 'usage');
          const last = usages.at(-1)?.piece as Extract<Piece, { kind: 'usage' }> | undefined;
          const expectedUsage: ReadUsage | undefined =
            last === undefined
              ? undefined
              : { promptTokens: last.prompt, completionTokens: last.completion };
          expect(result.usage).toEqual(expectedUsage);
        },
      ),
      runs(500, 2_000),
    );
  });

  it('a JSON answer passes unchanged, its usage read from its end, the first byte the first token', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 40_000 }),
        fc.nat(1_000_000),
        fc.array(fc.nat(), { maxLength: 8 }),
        (text, completion, points) => {
          const body = JSON.stringify({
            choices: [{ index: 0, message: { role: 'assistant', content: text } }],
            usage: {
              prompt_tokens: 7,
              completion_tokens: completion,
              prompt_tokens_details: { cached_tokens: 3 },
            },
          });
          let firstTokens = 0;
          const watch = watchAnswer('application/json', { firstToken: () => firstTokens++ }, true);
          let out = '';
          for (const chunk of cut(encoder.encode(body), points))
            out += decoder.decode(watch.take(chunk), { stream: true });
          watch.end();
          out += decoder.decode();
          expect(out).toBe(body);
          expect(firstTokens).toBe(1);
          expect(watch.usage).toEqual({
            promptTokens: 7,
            completionTokens: completion,
            cachedTokens: 3,
          });
        },
      ),
      runs(100, 300),
    );
  });

  it('an event longer than 1 MiB passes unread, and so does everything after it', () => {
    const long = `data: ${JSON.stringify({ choices: [{ delta: { content: 'x'.repeat(1_100_000) } }] })}\n\n`;
    const after = `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 1, completion_tokens: 2 } })}\n\n`;
    const bytes = encoder.encode(long + after);
    const result = run(cut(bytes, [1_050_000]), true); // 1 MiB and more of one event, unended
    expect(result.out).toBe(long + after);
    expect(result.usage).toBeUndefined();
  });
});
