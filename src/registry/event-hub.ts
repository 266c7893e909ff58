/**
 * Delivery of registry events: listeners (isolated from each other) and bounded async-iterator
 * streams, with the `seq` numbering that lets a late subscriber line events up with a snapshot.
 *
 * @module
 * @internal
 */
import { EventEmitter } from 'eventemitter3';
import { fail, readInteger, readObject } from '../core/options.js';
import { EventStream, type StreamItem } from './event-stream.js';
import type { WorkerEvent, WorkerEventMap, WorkerEventType } from './worker-event.js';

type Listener = (event: WorkerEvent) => void;

const EVENT_NAMES: ReadonlySet<string> = new Set([
  'event',
  'registered',
  'removed',
  'replaced',
  'statusChanged',
]);

/** @internal */
export class EventHub {
  readonly #emitter = new EventEmitter<WorkerEventMap>();
  readonly #streams = new Set<EventStream>();
  /** `once` listeners → their self-removing wrappers, per event type, so `off` finds them. */
  readonly #onceWrappers = new Map<string, Map<unknown, Listener[]>>();
  readonly #defaultBufferSize: number;
  readonly #onListenerError: (error: unknown, event: WorkerEvent) => void;
  #seq = 0;
  #listenerErrors = 0;

  constructor(
    defaultBufferSize: number,
    onListenerError: (error: unknown, event: WorkerEvent) => void,
  ) {
    this.#defaultBufferSize = defaultBufferSize;
    this.#onListenerError = onListenerError;
  }

  /** `seq` of the last event emitted (0 before the first). */
  get seq(): number {
    return this.#seq;
  }

  /** Listener calls that threw. */
  get listenerErrors(): number {
    return this.#listenerErrors;
  }

  /** Open streams plus listeners. */
  get subscribers(): number {
    let listeners = 0;
    for (const type of this.#emitter.eventNames()) listeners += this.#emitter.listenerCount(type);
    return this.#streams.size + listeners;
  }

  on(type: keyof WorkerEventMap, listener: unknown): void {
    checkListener(type, listener);
    this.#emitter.on(type, listener as never);
  }

  once(type: keyof WorkerEventMap, listener: unknown): void {
    checkListener(type, listener);
    const wrapper: Listener = (event) => {
      this.#forgetOnce(type, listener, wrapper);
      (listener as Listener)(event);
    };
    let byListener = this.#onceWrappers.get(type);
    if (byListener === undefined) {
      byListener = new Map();
      this.#onceWrappers.set(type, byListener);
    }
    byListener.set(listener, [...(byListener.get(listener) ?? []), wrapper]);
    this.#emitter.on(type, wrapper as never);
  }

  off(type: keyof WorkerEventMap, listener: unknown): void {
    this.#emitter.off(type, listener as never);
    for (const wrapper of this.#onceWrappers.get(type)?.get(listener) ?? []) {
      this.#forgetOnce(type, listener, wrapper);
    }
  }

  /**
   * Validates stream options and returns the function that opens the stream, so the caller can
   * check its own state between validation and subscription.
   */
  prepareStream(options: unknown): () => EventStream {
    const o = readObject('events options', options);
    const bufferSize = readInteger(
      'events.bufferSize',
      o.bufferSize,
      this.#defaultBufferSize,
      1,
      1_000_000,
    );
    const signal = o.signal;
    if (signal !== undefined && !(signal instanceof AbortSignal)) {
      fail('events.signal', 'an AbortSignal', signal);
    }
    return () => {
      const onAbort = (): void => stream.close();
      const stream = new EventStream(bufferSize, (closed) => {
        this.#streams.delete(closed);
        signal?.removeEventListener('abort', onAbort);
      });
      this.#streams.add(stream);
      if (signal !== undefined) {
        if (signal.aborted) stream.close();
        else signal.addEventListener('abort', onAbort, { once: true });
      }
      return stream;
    };
  }

  /** Stamps `seq`, then delivers to listeners (each isolated) and to every stream. */
  emit(draft: WorkerEvent): WorkerEvent {
    const event = Object.freeze({ ...draft, seq: ++this.#seq }) as WorkerEvent;
    this.#deliver('event', event);
    this.#deliver(event.type, event);
    for (const stream of this.#streams) stream.push(event);
    return event;
  }

  /** Ends every stream after its buffered events and drops every listener. */
  close(): void {
    for (const stream of [...this.#streams]) stream.end();
    this.#emitter.removeAllListeners();
    this.#onceWrappers.clear();
  }

  #deliver(type: WorkerEventType | 'event', event: WorkerEvent): void {
    if (this.#emitter.listenerCount(type) === 0) return;
    for (const listener of this.#emitter.listeners(type)) {
      try {
        (listener as Listener)(event);
      } catch (error) {
        this.#listenerErrors++;
        try {
          this.#onListenerError(error, event);
        } catch {
          // The reporter itself failed; nothing more can be done without risking the registry.
        }
      }
    }
  }

  #forgetOnce(type: string, listener: unknown, wrapper: Listener): void {
    this.#emitter.off(type as keyof WorkerEventMap, wrapper as never);
    const byListener = this.#onceWrappers.get(type);
    const rest = byListener?.get(listener)?.filter((w) => w !== wrapper) ?? [];
    if (rest.length > 0) byListener!.set(listener, rest);
    else byListener?.delete(listener);
  }
}

function checkListener(type: unknown, listener: unknown): void {
  if (typeof type !== 'string' || !EVENT_NAMES.has(type)) {
    fail('event type', `one of ${[...EVENT_NAMES].map((n) => `'${n}'`).join(', ')}`, type);
  }
  if (typeof listener !== 'function') fail('listener', 'a function', listener);
}

export type { StreamItem };
