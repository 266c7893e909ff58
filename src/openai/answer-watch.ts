/**
 * Watching a worker's answer as it passes to the client: when the first output token arrives,
 * what usage the engine reported, and — when the front asked for usage the client did not — the
 * usage chunk cut out again. Server-sent events are forwarded whole (a partial event waits for its
 * end); other bodies pass unchanged.
 *
 * @module
 * @internal
 */
import { joinBytes } from './bytes.js';

/** @internal Token counts read from an answer (OpenAI's `usage`, or the Responses API's). */
export interface ReadUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly cachedTokens?: number;
}

/** @internal What a watch tells its call. */
export interface WatchHooks {
  /** The first output token passed. Called at most once. */
  firstToken(): void;
}

/** @internal A watch over one answer's bytes. */
export interface AnswerWatch {
  /** The bytes to forward for this chunk from the worker (possibly empty). */
  take(chunk: Uint8Array): Uint8Array;
  /** The end of the answer: bytes still held back (a last event without its blank line). */
  end(): Uint8Array | undefined;
  /** The usage read so far (the last one the answer carried). */
  readonly usage: ReadUsage | undefined;
}

/** Largest server-sent event read; a longer one is forwarded unread as it arrives. */
const MAX_EVENT_BYTES = 1024 * 1024;
/** Bytes of a JSON answer's end kept to find its `usage` object. */
const JSON_TAIL_BYTES = 16 * 1024;
/** The most tokens a usage figure may say (larger: not a count). */
const MAX_TOKENS = 2 ** 31 - 1;

const LF = 0x0a;
const CR = 0x0d;
const decoder = new TextDecoder();

/**
 * Byte searches. `Uint8Array#indexOf` walks element by element in V8 (about 0.7 ns a byte: 7 µs
 * for a 10 KB read with no CR in it); Node's `Buffer#indexOf` is a native memchr / memmem on any
 * `Uint8Array`, some 30 times faster. Used where the runtime has it (Node, Bun), else the
 * portable methods.
 */
type NativeIndexOf = (this: Uint8Array, value: number | Uint8Array, from?: number) => number;
const nativeIndexOf = (globalThis as { Buffer?: { prototype: { indexOf: NativeIndexOf } } }).Buffer
  ?.prototype.indexOf;
const nativeLastIndexOf = (globalThis as { Buffer?: { prototype: { lastIndexOf: NativeIndexOf } } })
  .Buffer?.prototype.lastIndexOf;

/** The first `byte` of `data` at or after `from`, or -1. */
function indexOfByte(data: Uint8Array, byte: number, from: number): number {
  return nativeIndexOf === undefined
    ? data.indexOf(byte, from)
    : nativeIndexOf.call(data, byte, from);
}

/** The last `byte` of `data` at or before `from`, or -1. */
function lastIndexOfByte(data: Uint8Array, byte: number, from: number): number {
  if (from < 0) return -1;
  return nativeLastIndexOf === undefined
    ? data.lastIndexOf(byte, from)
    : nativeLastIndexOf.call(data, byte, from);
}

/** `usage"` as bytes, for the native search. */
const USAGE_BYTES = new TextEncoder().encode('usage"');

/** Where `usage"` starts in `data[from, to)`, or -1. */
function indexOfUsage(data: Uint8Array, from: number, to: number): number {
  if (nativeIndexOf === undefined) {
    const at = decoder.decode(data.subarray(from, to)).indexOf('usage"');
    // In the decoded text an offset is at most the byte offset (a character takes a byte or more).
    return at < 0 ? -1 : from + at;
  }
  const at = nativeIndexOf.call(data, USAGE_BYTES, from);
  return at < 0 || at + USAGE_BYTES.length > to ? -1 : at;
}
const LINE_END = /\r\n|\r|\n/;
const EMPTY = new Uint8Array(0);

/**
 * @internal The watch for an answer with this content type: server-sent events, JSON, or
 * anything else (the first chunk is the first token; no usage).
 */
export function watchAnswer(
  contentType: string | null,
  hooks: WatchHooks,
  stripUsage: boolean,
): AnswerWatch {
  const type = (contentType ?? '').trimStart().toLowerCase();
  if (type.startsWith('text/event-stream')) return new EventWatch(hooks, stripUsage);
  if (type.startsWith('application/json')) return new JsonWatch(hooks);
  return new PlainWatch(hooks);
}

/** @internal Usage from a parsed `usage` object, or `undefined` when it holds no counts. */
export function readUsage(value: unknown): ReadUsage | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const u = value as Record<string, unknown>;
  const prompt = count(u.prompt_tokens) ?? count(u.input_tokens);
  const completion = count(u.completion_tokens) ?? count(u.output_tokens);
  if (prompt === undefined || completion === undefined) return undefined;
  const details = (u.prompt_tokens_details ?? u.input_tokens_details) as
    | Record<string, unknown>
    | null
    | undefined;
  const cached =
    typeof details === 'object' && details !== null ? count(details.cached_tokens) : undefined;
  return cached === undefined
    ? { promptTokens: prompt, completionTokens: completion }
    : { promptTokens: prompt, completionTokens: completion, cachedTokens: cached };
}

function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 && value <= MAX_TOKENS
    ? value
    : undefined;
}

/** Server-sent events: each complete event is inspected, then forwarded (or cut out). */
class EventWatch implements AnswerWatch {
  readonly #hooks: WatchHooks;
  readonly #strip: boolean;
  /** An event begun in an earlier chunk, waiting for its end. */
  #pending: Uint8Array = EMPTY;
  #seenOutput = false;
  /**
   * The next LF and CR in the chunk being read (see `nextOf`): a stream whose lines end in LF
   * alone is searched for a CR once per chunk, not once per line.
   */
  #lf = -2;
  #cr = -2;
  /** An event longer than MAX_EVENT_BYTES: everything passes unread from then on. */
  #blind = false;
  usage: ReadUsage | undefined;

  constructor(hooks: WatchHooks, strip: boolean) {
    this.#hooks = hooks;
    this.#strip = strip;
  }

  take(chunk: Uint8Array): Uint8Array {
    if (this.#blind) return chunk;
    const data = this.#pending.length === 0 ? chunk : joinBytes([this.#pending, chunk]);
    let start = 0;
    let kept: Uint8Array[] | undefined;
    let keptFrom = 0;
    let quiet = false;
    this.#lf = this.#cr = -2;
    for (;;) {
      if (this.#seenOutput && !quiet) {
        // Past the first token only a usage event matters: skip to the last event's end at once
        // when none lies before it.
        quiet = true;
        start = quietEnd(data, start);
      }
      const end = this.#eventEnd(data, start);
      if (end < 0) break;
      if (this.#inspect(data.subarray(start, end))) {
        // Cut this event out: forward what came before it.
        kept ??= [];
        if (start > keptFrom) kept.push(data.subarray(keptFrom, start));
        keptFrom = end;
      }
      start = end;
    }
    const rest = data.subarray(start);
    if (rest.length > MAX_EVENT_BYTES) {
      this.#blind = true;
      this.#pending = EMPTY;
      return kept === undefined ? data : joinBytes([...kept, data.subarray(keptFrom)]);
    }
    // Keep the partial event (a copy when it lies in the worker's chunk, which may be reused).
    this.#pending = rest.length === 0 ? EMPTY : rest.slice();
    if (kept === undefined) return start === data.length ? data : data.subarray(0, start);
    kept.push(data.subarray(keptFrom, start));
    return joinBytes(kept);
  }

  end(): Uint8Array | undefined {
    const rest = this.#pending;
    this.#pending = EMPTY;
    if (rest.length === 0) return undefined;
    return this.#inspect(rest) ? undefined : rest;
  }

  /**
   * Where the event starting at `from` ends (just past its blank line: `\n\n`, `\r\n\r\n` or
   * `\r\r`), or -1 when it has not ended yet. The calls on one chunk go forward, from its start.
   * Cost: native byte searches; each byte of the chunk is searched a bounded number of times.
   */
  #eventEnd(data: Uint8Array, from: number): number {
    let i = from;
    for (;;) {
      const lf = (this.#lf = nextOf(data, LF, i, this.#lf));
      const cr = (this.#cr = nextOf(data, CR, i, this.#cr));
      if (lf < 0 && cr < 0) return -1;
      const at = lf < 0 ? cr : cr < 0 ? lf : Math.min(lf, cr);
      // One line ending (\n, \r\n or \r), then another right after it: the blank line.
      const next = data[at] === CR && data[at + 1] === LF ? at + 2 : at + 1;
      if (next >= data.length) return -1;
      if (data[next] === LF) return next + 1;
      if (data[next] === CR) {
        if (next + 1 >= data.length) return -1; // \r at the very end: maybe \r\n
        return data[next + 1] === LF ? next + 2 : next + 1;
      }
      i = next;
    }
  }

  /** Reads one event; `true` when it is the usage chunk to cut out. */
  #inspect(event: Uint8Array): boolean {
    if (!this.#seenOutput) {
      const value = parseEvent(event);
      if (carriesOutput(value)) {
        this.#seenOutput = true;
        this.#hooks.firstToken();
      }
      return this.#usageOf(value);
    }
    if (!hasUsage(event)) return false;
    return this.#usageOf(parseEvent(event));
  }

  /** Records the usage an event carries; `true` when it is a usage-only chunk to cut out. */
  #usageOf(value: unknown): boolean {
    if (typeof value !== 'object' || value === null) return false;
    const v = value as { usage?: unknown; choices?: unknown; response?: { usage?: unknown } };
    const usage = readUsage(v.usage) ?? readUsage(v.response?.usage);
    if (usage === undefined) return false;
    this.usage = usage;
    return this.#strip && Array.isArray(v.choices) && v.choices.length === 0;
  }
}

/** A JSON answer: the first chunk is the first token; `usage` is read from its last bytes. */
class JsonWatch implements AnswerWatch {
  readonly #hooks: WatchHooks;
  #started = false;
  #tail: Uint8Array = EMPTY;
  #usage: ReadUsage | undefined;
  #ended = false;

  constructor(hooks: WatchHooks) {
    this.#hooks = hooks;
  }

  get usage(): ReadUsage | undefined {
    return this.#usage;
  }

  take(chunk: Uint8Array): Uint8Array {
    if (chunk.length === 0) return chunk;
    if (!this.#started) {
      this.#started = true;
      this.#hooks.firstToken();
    }
    this.#tail = keepTail(this.#tail, chunk, JSON_TAIL_BYTES);
    return chunk;
  }

  end(): undefined {
    if (!this.#ended) {
      this.#ended = true;
      this.#usage = usageInTail(decoder.decode(this.#tail));
      this.#tail = EMPTY;
    }
    return undefined;
  }
}

/** Any other body: passed as is; its first bytes count as the first token. */
class PlainWatch implements AnswerWatch {
  readonly #hooks: WatchHooks;
  #started = false;
  readonly usage = undefined;

  constructor(hooks: WatchHooks) {
    this.#hooks = hooks;
  }

  take(chunk: Uint8Array): Uint8Array {
    if (!this.#started && chunk.length > 0) {
      this.#started = true;
      this.#hooks.firstToken();
    }
    return chunk;
  }

  end(): undefined {
    return undefined;
  }
}

/**
 * The first `byte` at or after `from` (-1: none), given `known`, the answer of an earlier search
 * in the same buffer from a point at or before `from` (-2: none made yet). A search is made again
 * only once `from` has passed the byte found, so a forward walk reads each byte once.
 */
function nextOf(data: Uint8Array, byte: number, from: number, known: number): number {
  return known === -1 || known >= from ? known : indexOfByte(data, byte, from);
}

/**
 * How far a walk with `#eventEnd` from `from` (an event's start) can skip without reading an
 * event: to the end of the last whole event, or (at most) of the last one before the first event
 * that holds `usage"`. Cost: a backward search over the partial event at the end, then one decode
 * and one substring search of the whole events — native passes, against one search call per line
 * for the walk.
 */
function quietEnd(data: Uint8Array, from: number): number {
  const last = lastEventEnd(data, from, data.length);
  if (last <= from) return from;
  // The bytes hold `usage"` exactly when their decoded text does (ASCII decodes as itself).
  const usage = indexOfUsage(data, from, last);
  if (usage < 0) return last;
  // Skip to the last event that ends before there (for the decoded search, the offset found is at
  // most the byte offset), off a line ending.
  let at = usage;
  while (at > from && isLineEnd(data[at]!)) at--;
  return Math.max(from, lastEventEnd(data, from, at));
}

/**
 * The end of the last whole event in `data` from `from` (an event's start) that ends at or before
 * `to` (the data's length, or a byte that is not a line ending), as `#eventEnd` finds events one
 * after another, or -1. Line endings come in runs (bytes CR and LF); read from a run's
 * start (or `from`), `\r\n` is one ending and every second ending closes an event, except a
 * second `\r` that is the last byte (it may be the start of a `\r\n`). So the last run that
 * closes an event is found searching backwards, and read forwards. Cost: linear in the bytes after
 * that run's start (usually a partial event).
 */
function lastEventEnd(data: Uint8Array, from: number, to: number): number {
  let before = to;
  while (before > from) {
    const runEnd = lastLineEnd(data, before);
    if (runEnd < from) return -1;
    let runStart = runEnd;
    while (runStart > from && isLineEnd(data[runStart - 1]!)) runStart--;
    let closed = -1;
    let endings = 0;
    for (let i = runStart; i <= runEnd; ) {
      i += data[i] === CR && i < runEnd && data[i + 1] === LF ? 2 : 1;
      endings++;
      if (endings % 2 === 0 && !(i === data.length && data[i - 1] === CR)) closed = i;
    }
    if (closed >= 0) return closed;
    before = runStart;
  }
  return -1;
}

/**
 * The last CR or LF before `before` (> 0), or -1. The CR is looked for after that LF only (a
 * stream without CRs is not searched for one from its end to its start).
 */
function lastLineEnd(data: Uint8Array, before: number): number {
  const lf = lastIndexOfByte(data, LF, before - 1);
  const cr = indexOfByte(data, CR, lf + 1);
  return cr < 0 || cr >= before ? lf : lastIndexOfByte(data, CR, before - 1);
}

function isLineEnd(byte: number): boolean {
  return byte === LF || byte === CR;
}

/**
 * The JSON of an event's `data:` lines (joined), or `undefined` when it has none or is not JSON.
 * Lines end as `#eventEnd` reads them: `\n`, `\r\n` or `\r`.
 */
function parseEvent(event: Uint8Array): unknown {
  // What engines send: one `data: ` line, then the blank line. Read without splitting lines.
  const single = singleDataLine(event);
  if (single !== undefined) return parseData(decoder.decode(single));
  let data: string | undefined;
  for (const line of decoder.decode(event).split(LINE_END)) {
    if (line.startsWith('data:')) {
      const value = line.charCodeAt(5) === 0x20 ? line.slice(6) : line.slice(5);
      data = data === undefined ? value : `${data}\n${value}`;
    }
  }
  return data === undefined ? undefined : parseData(data);
}

/** An event's data as JSON (an object or an array), or `undefined`. */
function parseData(data: string): unknown {
  if (data.length === 0 || (data[0] !== '{' && data[0] !== '[')) return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

/**
 * The data of an event that is exactly `data: <data>` and its blank line (`\n\n`), with no other
 * CR or LF; `undefined` for any other shape (read line by line instead).
 */
function singleDataLine(event: Uint8Array): Uint8Array | undefined {
  const n = event.length;
  // "data: " is 0x64 0x61 0x74 0x61 0x3a 0x20.
  if (
    n < 8 ||
    event[0] !== 0x64 ||
    event[1] !== 0x61 ||
    event[2] !== 0x74 ||
    event[3] !== 0x61 ||
    event[4] !== 0x3a ||
    event[5] !== 0x20 ||
    event[n - 1] !== LF ||
    event[n - 2] !== LF
  )
    return undefined;
  const first = indexOfByte(event, LF, 6);
  if (first !== n - 2 || indexOfByte(event, CR, 6) >= 0) return undefined;
  return event.subarray(6, n - 2);
}

/**
 * Whether a parsed event carries generated output: a choice with text, content, reasoning, a
 * refusal or a tool call (chat and completions chunks), or a Responses API `…delta` event.
 */
function carriesOutput(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as { choices?: unknown; type?: unknown; delta?: unknown };
  if (Array.isArray(v.choices)) {
    for (const choice of v.choices as unknown[]) {
      if (typeof choice !== 'object' || choice === null) continue;
      const c = choice as { text?: unknown; delta?: unknown; message?: unknown };
      if (nonEmpty(c.text)) return true;
      const delta = (c.delta ?? c.message) as Record<string, unknown> | null | undefined;
      if (typeof delta !== 'object' || delta === null) continue;
      if (
        nonEmpty(delta.content) ||
        nonEmpty(delta.reasoning_content) ||
        nonEmpty(delta.reasoning) ||
        nonEmpty(delta.refusal) ||
        (Array.isArray(delta.tool_calls) && delta.tool_calls.length > 0) ||
        (typeof delta.function_call === 'object' && delta.function_call !== null)
      )
        return true;
    }
    return false;
  }
  return typeof v.type === 'string' && v.type.endsWith('.delta') && nonEmpty(v.delta);
}

function nonEmpty(value: unknown): boolean {
  return (
    (typeof value === 'string' && value.length > 0) || (Array.isArray(value) && value.length > 0)
  );
}

/** Whether the bytes hold `usage"`. */
function hasUsage(event: Uint8Array): boolean {
  return indexOfUsage(event, 0, event.length) >= 0;
}

/** The `usage` object nearest the end of a JSON text, read with a bounded scan. */
function usageInTail(text: string): ReadUsage | undefined {
  const key = text.lastIndexOf('"usage"');
  if (key < 0) return undefined;
  const open = text.indexOf('{', key);
  if (open < 0 || text.slice(key + 7, open).trim() !== ':') return undefined;
  let depth = 0;
  let inString = false;
  for (let i = open; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b) depth++;
    else if (c === 0x7d && --depth === 0) {
      try {
        return readUsage(JSON.parse(text.slice(open, i + 1)));
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** The last `max` bytes of `tail` followed by `chunk`. */
function keepTail(tail: Uint8Array, chunk: Uint8Array, max: number): Uint8Array {
  if (chunk.length >= max) return chunk.slice(chunk.length - max);
  const keep = Math.min(tail.length, max - chunk.length);
  const out = new Uint8Array(keep + chunk.length);
  out.set(tail.subarray(tail.length - keep), 0);
  out.set(chunk, keep);
  return out;
}
