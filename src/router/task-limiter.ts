/**
 * Runs at most `max` tasks at once; the rest wait in order.
 *
 * @module
 * @internal
 */

interface Queued {
  readonly task: () => Promise<void>;
  readonly dropped: (() => void) | undefined;
}

/** @internal */
export class TaskLimiter {
  readonly #max: number;
  readonly #queue: (Queued | undefined)[] = [];
  #head = 0;
  #active = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /**
   * Starts `task` now, or when a slot frees up. A task must always settle (or be abandoned by its
   * own timeout). `dropped` is called instead of the task if {@link TaskLimiter.clear} drops it
   * while it waits, so whoever awaits the task's effect is never left hanging.
   */
  run(task: () => Promise<void>, dropped?: () => void): void {
    if (this.#active < this.#max) this.#start(task);
    else this.#queue.push({ task, dropped });
  }

  /** Drops every waiting task, calling each one's `dropped` callback (in queue order). */
  clear(): void {
    const waiting = this.#queue.slice(this.#head);
    this.#queue.length = 0;
    this.#head = 0;
    for (const queued of waiting) {
      try {
        queued?.dropped?.();
      } catch {
        // A callback that throws must not keep the others from running.
      }
    }
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
      this.#queue[this.#head++] = undefined;
      if (this.#head > 1024 && this.#head * 2 > this.#queue.length) {
        this.#queue.splice(0, this.#head);
        this.#head = 0;
      }
      this.#start(next.task);
    }
  }
}
