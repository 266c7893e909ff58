/**
 * `openAIRequest`: µs per call to turn a parsed chat body into a `SelectRequest`, for a
 * 50-message, 20 KB conversation (text only; with images and tool calls), with the options
 * resolved once or given raw; beside it, `JSON.parse` of the same body (what the handler pays
 * before); the digest's throughput on a large image; the cost of resolving the options.
 *
 * Why: the OpenAI front calls it on every request, before the policy's `select`; it should cost
 * a small fraction of parsing the body. Each call's text is read to its last character, so the
 * figure includes flattening the string, as the policies' first read of it does.
 */
import {
  type OpenAIRequestOptions,
  openAIRequest,
  type ResolvedOpenAIRequestOptions,
  resolveOpenAIRequestOptions,
} from '../src/openai/openai-request.js';
import { seededRandom } from './fixtures.js';
import { emit, fmt, timeOps } from './harness.js';

function words(random: () => number, length: number): string {
  let out = '';
  while (out.length < length) out += `${Math.floor(random() * 1e9).toString(36)} `;
  return out.slice(0, length);
}

/** A 50-message conversation of about 20 KB of JSON: a system prompt, then user and assistant. */
function conversation(rich: boolean): Record<string, unknown> {
  const random = seededRandom(7);
  const messages: unknown[] = [{ role: 'system', content: words(random, 600) }];
  for (let i = 1; i < 50; i++) {
    if (i % 2 === 1) {
      const text = words(random, 360);
      messages.push({
        role: 'user',
        content:
          rich && i % 10 === 1
            ? [
                { type: 'text', text },
                { type: 'image_url', image_url: { url: `https://img.example/${i}.png` } },
              ]
            : text,
      });
    } else if (rich && i % 10 === 4) {
      messages.push({
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: `c${i}`, type: 'function', function: { name: 'search', arguments: '{"q":"x"}' } },
        ],
      });
    } else {
      messages.push({ role: 'assistant', content: words(random, 360) });
    }
  }
  const tools = [
    { type: 'function', function: { name: 'search', parameters: { type: 'object' } } },
  ];
  return rich ? { model: 'm', tools, messages } : { model: 'm', messages };
}

function timeCall(
  body: Record<string, unknown>,
  options: OpenAIRequestOptions | ResolvedOpenAIRequestOptions,
): { us: number; chars: number } {
  const chars = openAIRequest(body, { 'x-session-id': 's' }, options).text?.length ?? 0;
  const timing = timeOps((ops) => {
    let check = 0;
    for (let i = 0; i < ops; i++) {
      const text = openAIRequest(body, { 'x-session-id': 's' }, options).text!;
      check += text.charCodeAt(text.length - 1);
    }
    return check;
  });
  return { us: timing.nsPerOp / 1_000, chars };
}

function timeParse(json: string): number {
  return (
    timeOps((ops) => {
      let check = 0;
      for (let i = 0; i < ops; i++)
        check += (JSON.parse(json) as { messages: unknown[] }).messages.length;
      return check;
    }).nsPerOp / 1_000
  );
}

const raw: OpenAIRequestOptions = { routingKeyHeader: 'x-session-id' };
const resolved = resolveOpenAIRequestOptions(raw);

const rows: string[][] = [];
for (const rich of [false, true]) {
  const body = conversation(rich);
  const json = JSON.stringify(body);
  const once = timeCall(body, resolved);
  const each = timeCall(body, raw);
  const parse = timeParse(json);
  rows.push([
    rich ? '50 messages, 5 images, 5 tool calls, tools' : '50 messages, text only',
    fmt(json.length / 1_024, 1),
    fmt(once.chars, 0),
    fmt(once.us, 2),
    fmt(each.us, 2),
    fmt(parse, 2),
    `${fmt((100 * once.us) / parse, 0)} %`,
  ]);
}

// The digest's throughput: one user message with a 4 MB data-URL image.
const image = `data:image/png;base64,${'iVBORw0KGgo'.repeat(381_300)}`;
const imageBody = {
  messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: image } }] }],
};
const imageUs =
  timeOps(
    (ops) => {
      let check = 0;
      for (let i = 0; i < ops; i++) check += openAIRequest(imageBody).text!.length;
      return check;
    },
    { samples: 5, sampleMs: 200 },
  ).nsPerOp / 1_000;

const resolveUs =
  timeOps((ops) => {
    let check = 0;
    for (let i = 0; i < ops; i++) check += resolveOpenAIRequestOptions(raw).maxTextChars;
    return check;
  }).nsPerOp / 1_000;

emit({
  name: 'openai-request',
  tables: [
    {
      title: 'openAIRequest per call (µs), text read to its end',
      columns: [
        'body',
        'JSON KB',
        'text chars',
        'options resolved once',
        'raw options',
        'JSON.parse',
        'resolved / parse',
      ],
      rows,
    },
    {
      title: 'digest and options',
      columns: ['what', 'figure'],
      rows: [
        ['4 MB image part digested (MB/s)', fmt(image.length / 2 ** 20 / (imageUs / 1e6), 0)],
        ['resolveOpenAIRequestOptions (µs)', fmt(resolveUs, 2)],
      ],
    },
  ],
  notes: [
    'Raw options are resolved on every call: pass resolveOpenAIRequestOptions(...) once instead.',
  ],
});
