/**
 * The routing text of a chat request: its tools and its messages rendered in order, so that the
 * text of a conversation's turn is a prefix of the next turn's.
 *
 * @module
 * @internal
 */

import { contentDigest } from '../core/content-digest.js';
import { fail } from '../core/options.js';
import { CappedText } from './capped-text.js';

type Fields = Readonly<Record<string, unknown>>;

/** @internal Whether `value` is a JSON object (not null, not an array). */
export function isObject(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * @internal The routing text of a chat body whose `messages` is `messages`, at most `cap` UTF-16
 * code units (the format is documented in docs/openai.md):
 *
 * ```
 * [tools:<hex>]\n [functions:<hex>]\n                  when given and not empty
 * <|role name=… tool_call_id=…|>\n                      per message; the attributes when given
 *   content\n | one piece per part                      text\n, [refusal]text\n, [image:<hex>]\n …
 *   [refusal]text\n  [call name]arguments\n  [call:<hex>]\n  [audio:<hex>]\n
 * ```
 *
 * Each message's rendering depends on that message alone, and nothing depends on the list's
 * length or end, so the text is prefix-stable. Every part and every call contributes at least
 * one character.
 *
 * @returns the text (possibly empty).
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first field of a wrong type,
 *   anywhere in the messages (shapes are checked past the cap too, so whether a body is refused
 *   never depends on the cap).
 *
 * Cost: linear in the messages and their strings up to the cap; past it, a few type checks per
 * message, part and call, and no digest: a part past the cap is never read beyond its `type`
 * and its text.
 */
export function chatRoutingText(body: Fields, messages: readonly unknown[], cap: number): string {
  const out = new CappedText(cap);
  appendDefinitions(out, body.tools, 'tools');
  appendDefinitions(out, body.functions, 'functions');
  for (let i = 0; i < messages.length; i++) appendMessage(out, messages[i], i);
  return out.finish();
}

/** The request's `tools` (or legacy `functions`): one digest of the whole list. */
function appendDefinitions(out: CappedText, list: unknown, field: 'tools' | 'functions'): void {
  if (list === undefined || list === null) return;
  if (!Array.isArray(list)) fail(field, 'an array', list);
  if (list.length === 0 || out.full) return;
  out.append(field === 'tools' ? '[tools:' : '[functions:');
  out.append(contentDigest(list, field));
  out.append(']\n');
}

function appendMessage(out: CappedText, message: unknown, i: number): void {
  if (!isObject(message)) fail(`messages[${i}]`, 'an object', message);
  const role = optionalString(message.role, i, 'role');
  const name = optionalString(message.name, i, 'name');
  const callId = optionalString(message.tool_call_id, i, 'tool_call_id');
  out.append('<|');
  if (role !== undefined) out.append(role);
  if (name !== undefined) {
    out.append(' name=');
    out.append(name);
  }
  if (callId !== undefined) {
    out.append(' tool_call_id=');
    out.append(callId);
  }
  out.append('|>\n');
  appendContent(out, message.content, i);
  const refusal = optionalString(message.refusal, i, 'refusal');
  if (refusal !== undefined) appendLine(out, '[refusal]', refusal);
  appendToolCalls(out, message.tool_calls, i);
  const legacy = message.function_call;
  if (legacy !== undefined && legacy !== null) appendFunctionCall(out, legacy, i, -1);
  const audio = message.audio;
  if (audio !== undefined && audio !== null && !out.full) {
    appendLine(out, '[audio:', contentDigest(audio, `messages[${i}].audio`), ']');
  }
}

function appendContent(out: CappedText, content: unknown, i: number): void {
  if (content === undefined || content === null) return;
  if (typeof content === 'string') {
    appendLine(out, '', content);
    return;
  }
  if (!Array.isArray(content)) {
    fail(`messages[${i}].content`, 'a string, an array of content parts or null', content);
  }
  for (let j = 0; j < content.length; j++) appendPart(out, content[j], i, j);
}

/** What a part that is not text contributes: its kind, then its digest. */
function digestLabel(type: unknown): string {
  switch (type) {
    case 'image_url':
      return '[image:';
    case 'input_audio':
      return '[audio:';
    case 'file':
      return '[file:';
    default:
      return '[part:';
  }
}

function appendPart(out: CappedText, part: unknown, i: number, j: number): void {
  if (!isObject(part)) fail(`messages[${i}].content[${j}]`, 'an object', part);
  const type = part.type;
  if (type === 'text' || type === 'refusal') {
    const text = part[type];
    if (typeof text !== 'string') fail(`messages[${i}].content[${j}].${type}`, 'a string', text);
    appendLine(out, type === 'text' ? '' : '[refusal]', text);
    return;
  }
  if (out.full) return;
  appendLine(out, digestLabel(type), contentDigest(part, `messages[${i}].content[${j}]`), ']');
}

function appendToolCalls(out: CappedText, calls: unknown, i: number): void {
  if (calls === undefined || calls === null) return;
  if (!Array.isArray(calls)) fail(`messages[${i}].tool_calls`, 'an array', calls);
  for (let k = 0; k < calls.length; k++) {
    const call: unknown = calls[k];
    if (!isObject(call)) fail(`messages[${i}].tool_calls[${k}]`, 'an object', call);
    const fn = call.function;
    if (call.type === 'function' || (fn !== undefined && fn !== null)) {
      appendFunctionCall(out, fn, i, k);
    } else if (!out.full) {
      appendLine(out, '[call:', contentDigest(call, `messages[${i}].tool_calls[${k}]`), ']');
    }
  }
}

/** A function call (`k` ≥ 0: `tool_calls[k].function`; −1: the legacy `function_call`). */
function appendFunctionCall(out: CappedText, fn: unknown, i: number, k: number): void {
  if (!isObject(fn)) fail(functionField(i, k), 'an object', fn);
  const name = fn.name;
  const args = fn.arguments;
  if (name !== undefined && name !== null && typeof name !== 'string') {
    fail(`${functionField(i, k)}.name`, 'a string', name);
  }
  if (args !== undefined && args !== null && typeof args !== 'string') {
    fail(`${functionField(i, k)}.arguments`, 'a string', args);
  }
  out.append('[call ');
  if (typeof name === 'string') out.append(name);
  out.append(']');
  if (typeof args === 'string') out.append(args);
  out.append('\n');
}

function functionField(i: number, k: number): string {
  return k < 0 ? `messages[${i}].function_call` : `messages[${i}].tool_calls[${k}].function`;
}

/** `label`, `text`, `close`, then a line break. */
function appendLine(out: CappedText, label: string, text: string, close = ''): void {
  if (label !== '') out.append(label);
  out.append(text);
  if (close !== '') out.append(close);
  out.append('\n');
}

/** A message's optional string field (absent or `null`: `undefined`). */
function optionalString(value: unknown, i: number, key: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') fail(`messages[${i}].${key}`, 'a string', value);
  return value;
}
