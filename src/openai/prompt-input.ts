/**
 * The `prompt` of a completions request as routing input: text, or token ids.
 *
 * @module
 * @internal
 */
import { fail } from '../core/options.js';
import { CappedText } from './capped-text.js';

/** @internal What a prompt routes on: at most one of the two is set. */
export interface PromptInput {
  text?: string;
  tokens?: Uint32Array;
}

const SHAPES =
  'a string, an array of strings, an array of token ids or an array of token-id arrays';
const TOKEN_RULE = 'a token id (an integer from 0 to 4294967295)';

/**
 * @internal Reads a completions `prompt` (not `undefined` or `null`) into `into`:
 *
 * - a string: `text`, cut at `maxTextChars`;
 * - an array of strings (a batch): `text`, the strings joined with `\n`, cut at `maxTextChars`;
 * - an array of token ids: `tokens`, the first `maxTokens`;
 * - an array of token-id arrays (a batch): `tokens`, the arrays concatenated in order, the first
 *   `maxTokens`.
 *
 * An empty array, an empty text or no tokens set nothing. Every element is checked, past the
 * caps too, so whether a prompt is refused never depends on them.
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming `prompt` or the first element of a
 *   wrong type (a token id must be an integer in [0, 2³²)).
 *
 * Cost: one check per element; strings copied up to `maxTextChars`, ids up to `maxTokens`.
 */
export function readPrompt(
  prompt: unknown,
  maxTextChars: number,
  maxTokens: number,
  into: PromptInput,
): void {
  if (typeof prompt === 'string') {
    const out = new CappedText(maxTextChars);
    out.append(prompt);
    setText(into, out.finish());
    return;
  }
  if (!Array.isArray(prompt)) fail('prompt', SHAPES, prompt);
  if (prompt.length === 0) return;
  const first: unknown = prompt[0];
  if (typeof first === 'string') readStrings(prompt, maxTextChars, into);
  else if (typeof first === 'number') readTokens(prompt, maxTokens, into);
  else if (Array.isArray(first)) readTokenBatch(prompt, maxTokens, into);
  else fail('prompt[0]', 'a string, a token id or an array of token ids', first);
}

function setText(into: PromptInput, text: string): void {
  if (text !== '') into.text = text;
}

function readStrings(prompt: readonly unknown[], cap: number, into: PromptInput): void {
  const out = new CappedText(cap);
  for (let i = 0; i < prompt.length; i++) {
    const item = prompt[i];
    if (typeof item !== 'string') fail(`prompt[${i}]`, 'a string (as prompt[0] is)', item);
    if (i > 0) out.append('\n');
    out.append(item);
  }
  setText(into, out.finish());
}

function isTokenId(value: unknown): value is number {
  return typeof value === 'number' && value >>> 0 === value;
}

function readTokens(prompt: readonly unknown[], cap: number, into: PromptInput): void {
  for (let i = 0; i < prompt.length; i++) {
    if (!isTokenId(prompt[i])) fail(`prompt[${i}]`, TOKEN_RULE, prompt[i]);
  }
  const n = Math.min(prompt.length, cap);
  if (n === 0) return;
  const tokens = new Uint32Array(n);
  for (let i = 0; i < n; i++) tokens[i] = prompt[i] as number;
  into.tokens = tokens;
}

function readTokenBatch(prompt: readonly unknown[], cap: number, into: PromptInput): void {
  let total = 0;
  for (let i = 0; i < prompt.length; i++) {
    const ids: unknown = prompt[i];
    if (!Array.isArray(ids)) fail(`prompt[${i}]`, 'an array of token ids (as prompt[0] is)', ids);
    for (let j = 0; j < ids.length; j++) {
      if (!isTokenId(ids[j])) fail(`prompt[${i}][${j}]`, TOKEN_RULE, ids[j]);
    }
    total += ids.length;
  }
  const n = Math.min(total, cap);
  if (n === 0) return;
  const tokens = new Uint32Array(n);
  let at = 0;
  for (let i = 0; i < prompt.length && at < n; i++) {
    const ids = prompt[i] as readonly number[];
    const take = Math.min(ids.length, n - at);
    for (let j = 0; j < take; j++) tokens[at + j] = ids[j]!;
    at += take;
  }
  into.tokens = tokens;
}
