/**
 * Runs at most `max` tasks at once; the rest wait in order.
 *
 * @module
 * @internal
 */

/** @internal */
export class TaskLimiter {
  readonly #max: number;
  readonly #queue: (() => Promise<void>)[] = [];
  #head = 0;
  #active = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Tasks running now. */
  get active(): number {
    return this.#active;
  }

  /** Tasks waiting for a slot. */
  get waiting(): number {
    return this.#queue.length - this.#head;
  }

  /** Starts `task` now, or when a slot frees up. A task must always settle (or be abandoned by its own timeout). */
  run(task: () => Promise<void>): void {
    if (this.#active < this.#max) this.#start(task);
    else this.#queue.push(task);
  }

  /** Drops every waiting task. */
  clear(): void {
    this.#queue.length = 0;
    this.#head = 0;
  }

  #start(task: () => Promise<void>): void {
    this.#active++;
    let promise: Promise<void>;
    try {
      promise = task();
    } catch {
      promise = Promise.resolve();
    }
    void promise.then(
      () => this.#done(),
      () => this.#done(),
    );
  }

  #done(): void {
    this.#active--;
    if (this.#head < this.#queue.length && this.#active < this.#max) {
      const next = this.#queue[this.#head]!;
      this.#queue[this.#head++] = undefined as never;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue.splice(0, this.#head);
        this.#head = 0;
      }
      this.#start(next);
    }
  }
}
