/**
 * `UpstreamAnswer`: a worker's answer body as the client reads it — one chunk from the worker
 * per read, so a slow client slows the worker's stream instead of filling memory.
 *
 * @module
 * @internal
 */

import type { AnswerWatch, ReadUsage } from './answer-watch.js';
import type { AnswerSource } from './front-answer.js';

const encoder = new TextEncoder();

/**
 * The last event a client gets when a streamed answer breaks midway, before its connection is
 * cut: what the engines send on their own errors, so SDKs raise it.
 */
const BROKEN_EVENT = encoder.encode(
  `data: ${JSON.stringify({
    error: {
      message: "the worker's answer broke off midway",
      type: 'server_error',
      param: null,
      code: 'upstream_stream_broken',
    },
  })}\n\n`,
);

/**
 * @internal The error a read rejects with when the worker's answer broke: `farewell` is a last
 * chunk to write before cutting the connection (an error event, for server-sent events).
 */
export class BrokenAnswerError extends Error {
  readonly farewell: Uint8Array | undefined;

  constructor(cause: unknown, farewell: Uint8Array | undefined) {
    super("the worker's answer broke off midway", { cause });
    this.name = 'BrokenAnswerError';
    this.farewell = farewell;
  }
}

/** @internal How the answer ended, told to the call that carries it. */
export interface AnswerEnd {
  /** The answer ended: `usage` as read from it. */
  finished(usage: ReadUsage | undefined): void;
  /** The answer broke midway (the worker's stream failed). */
  broke(error: unknown): void;
  /** The client went away or stopped reading. */
  cancelled(reason: unknown): void;
}

/**
 * @internal One worker answer being relayed. Each `read()` reads the worker's stream until it has
 * bytes to forward (the watch may hold back a partial event). When the worker's stream fails, a
 * server-sent-events answer gets one last error event, then reads reject; other answers reject at
 * once. Nothing is buffered beyond the chunk in hand and one partial event.
 */
export class UpstreamAnswer implements AnswerSource {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #watch: AnswerWatch;
  readonly #end: AnswerEnd;
  readonly #events: boolean;
  #state: 'open' | 'broken' | 'done' = 'open';
  #error: BrokenAnswerError | undefined;

  constructor(
    body: ReadableStream<Uint8Array>,
    watch: AnswerWatch,
    events: boolean,
    end: AnswerEnd,
  ) {
    this.#reader = body.getReader();
    this.#watch = watch;
    this.#events = events;
    this.#end = end;
  }

  async read(): Promise<Uint8Array | undefined> {
    if (this.#state === 'done') return undefined;
    if (this.#state === 'broken') throw this.#error;
    for (;;) {
      let next: Awaited<ReturnType<ReadableStreamDefaultReader<Uint8Array>['read']>>;
      try {
        next = await this.#reader.read();
      } catch (error) {
        if (this.#state !== 'open') return this.read();
        return this.#break(error);
      }
      if (this.#state !== 'open') return this.read();
      if (next.done) {
        const rest = this.#watch.end();
        this.#state = 'done';
        this.#end.finished(this.#watch.usage);
        return rest;
      }
      const out = this.#watch.take(next.value);
      if (out.length > 0) return out;
    }
  }

  cancel(reason?: unknown): void {
    if (this.#state !== 'open') return;
    this.#state = 'done';
    this.#reader.cancel(reason).catch(() => {});
    this.#end.cancelled(reason);
  }

  /**
   * The worker's stream failed: this read and every later one reject, the first with a farewell
   * error event (for server-sent events) to write before the connection is cut.
   */
  #break(error: unknown): never {
    this.#state = 'broken';
    this.#error = new BrokenAnswerError(error, undefined);
    this.#end.broke(error);
    throw this.#events ? new BrokenAnswerError(error, BROKEN_EVENT) : this.#error;
  }
}
