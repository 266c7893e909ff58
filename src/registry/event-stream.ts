/**
 * A bounded async-iterator subscription to registry events.
 *
 * @module
 */
import type { LaggedEvent, WorkerEvent } from './worker-event.js';

/** What {@link EventStream} yields. @public */
export type StreamItem = WorkerEvent | LaggedEvent;

/**
 * @internal One subscriber's buffer. When it is full the oldest event is dropped and counted;
 * the next read yields `{ type: 'lagged', missed }` before the events that were kept.
 */
export class EventStream implements AsyncIterableIterator<StreamItem> {
  readonly #buffer: (WorkerEvent | undefined)[];
  #head = 0;
  #count = 0;
  #missed = 0;
  #done = false;
  /** Readers waiting for an event, oldest first (several `next()` calls may be in flight). */
  readonly #waiters: ((result: IteratorResult<StreamItem>) => void)[] = [];
  readonly #onClose: (stream: EventStream) => void;

  constructor(bufferSize: number, onClose: (stream: EventStream) => void) {
    this.#buffer = new Array<WorkerEvent | undefined>(bufferSize).fill(undefined);
    this.#onClose = onClose;
  }

  /** Whether the stream has ended. */
  get closed(): boolean {
    return this.#done;
  }

  /** @internal Delivers one event (never blocks the registry). */
  push(event: WorkerEvent): void {
    if (this.#done) return;
    // A waiting reader means the buffer is empty: hand the event straight to the oldest one.
    const waiter = this.#waiters.shift();
    if (waiter !== undefined) {
      waiter({ value: event, done: false });
      return;
    }
    const size = this.#buffer.length;
    if (this.#count === size) {
      this.#head = (this.#head + 1) % size;
      this.#count--;
      this.#missed++;
    }
    this.#buffer[(this.#head + this.#count) % size] = event;
    this.#count++;
  }

  /**
   * The next event, a `lagged` marker, or `done`. Calls may overlap: each pending call settles in
   * the order it was made, and all of them settle as `done` when the stream ends.
   */
  next(): Promise<IteratorResult<StreamItem>> {
    if (this.#missed > 0) {
      const missed = this.#missed;
      this.#missed = 0;
      return Promise.resolve({ value: { type: 'lagged', missed }, done: false });
    }
    if (this.#count > 0) {
      const event = this.#buffer[this.#head]!;
      this.#buffer[this.#head] = undefined;
      this.#head = (this.#head + 1) % this.#buffer.length;
      this.#count--;
      return Promise.resolve({ value: event, done: false });
    }
    if (this.#done) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve) => {
      this.#waiters.push(resolve);
    });
  }

  /** Ends the subscription; buffered events are discarded. */
  return(): Promise<IteratorResult<StreamItem>> {
    this.close();
    return Promise.resolve({ value: undefined, done: true });
  }

  /** Settles every pending `next()` as done, oldest first. */
  #releaseWaiters(): void {
    const waiters = this.#waiters.splice(0);
    for (const waiter of waiters) waiter({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<StreamItem> {
    return this;
  }

  /** @internal Ends the stream after the buffered events have been read. */
  end(): void {
    if (this.#done) return;
    this.#done = true;
    this.#releaseWaiters();
    this.#onClose(this);
  }

  /** @internal Ends the stream now: buffered events are discarded, a pending `next()` resolves as done. */
  close(): void {
    if (this.#done) return;
    this.#buffer.fill(undefined);
    this.#count = 0;
    this.#missed = 0;
    this.end();
  }
}
