/**
 * The OpenAI front's watch over a streamed answer, alone: µs to pass one vLLM-like chat answer
 * (a role chunk, 200 content chunks, a final chunk, the usage chunk the front asked for, which is
 * cut out, and `data: [DONE]`) through `watchAnswer(...).take` and `end`, as it arrives in 1, 4
 * or 20 reads, or one event per read (a worker streaming token by token). Variants: `\r\n` line
 * endings, and content that is not ASCII (three-byte characters).
 *
 * How an answer is cut into reads matters: a worker writing as fast as the socket takes it
 * reaches the front in a few large reads (about 4 for these 40 KB on loopback); one generating
 * at its own pace, one event per read.
 */
import { watchAnswer } from '../src/openai/answer-watch.js';
import { emit, fmt, type OpsRunner, timeOps } from './harness.js';

const TOKENS = 200;
const encoder = new TextEncoder();

function answer(eol: string, token: string): string {
  const base = { id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1_767_225_600 };
  const event = (value: unknown): string => `data: ${JSON.stringify(value)}${eol}${eol}`;
  const chunk = (delta: unknown, finish: string | null): string =>
    event({
      ...base,
      model: 'm',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
    });
  let text = chunk({ role: 'assistant', content: '' }, null);
  for (let i = 0; i < TOKENS; i++) text += chunk({ content: token }, null);
  text += chunk({}, 'length');
  text += event({
    ...base,
    model: 'm',
    choices: [],
    usage: { prompt_tokens: 16, completion_tokens: TOKENS },
  });
  return `${text}data: [DONE]${eol}${eol}`;
}

/** The answer's bytes in `reads` pieces of equal size, or one piece per event (`reads` 0). */
function reads(text: string, eol: string, count: number): Uint8Array[] {
  const bytes = encoder.encode(text);
  const out: Uint8Array[] = [];
  if (count === 0) {
    let at = 0;
    for (const event of text.split(`${eol}${eol}`).slice(0, -1)) {
      const size = encoder.encode(event).length + 2 * eol.length;
      out.push(bytes.slice(at, at + size));
      at += size;
    }
    return out;
  }
  const size = Math.ceil(bytes.length / count);
  for (let at = 0; at < bytes.length; at += size) out.push(bytes.slice(at, at + size));
  return out;
}

function runner(pieces: readonly Uint8Array[]): OpsRunner {
  const hooks = { firstToken: (): void => {} };
  return (ops) => {
    let sum = 0;
    for (let i = 0; i < ops; i++) {
      const watch = watchAnswer('text/event-stream', hooks, true);
      for (const piece of pieces) sum += watch.take(piece).length;
      sum += watch.end()?.length ?? 0;
    }
    return sum;
  };
}

const cases: [string, string, string, number][] = [
  ['1 read', '\n', ' fox', 1],
  ['4 reads', '\n', ' fox', 4],
  ['20 reads', '\n', ' fox', 20],
  ['one event per read', '\n', ' fox', 0],
  ['4 reads, \\r\\n line endings', '\r\n', ' fox', 4],
  ['4 reads, non-ASCII content', '\n', ' 狐狸', 4],
];
const rows = cases.map(([label, eol, token, count]) => {
  const text = answer(eol, token);
  const pieces = reads(text, eol, count);
  const timing = timeOps(runner(pieces));
  return [
    label,
    String(pieces.length),
    fmt(encoder.encode(text).length / 1024, 1),
    fmt(timing.nsPerOp / 1000, 1),
    fmt(timing.nsPerOp / TOKENS, 0),
  ];
});

emit({
  name: 'answer-watch',
  tables: [
    {
      title: `The answer watch alone: one streamed chat answer of ${TOKENS} content chunks (usage chunk cut out)`,
      columns: ['answer arrives in', 'reads', 'KB', 'µs per answer', 'ns per chunk'],
      rows,
    },
  ],
  notes: [
    'Past the first token only a usage event is read: a read that holds none costs one backward search for its last whole event and one decode and substring search.',
  ],
});
