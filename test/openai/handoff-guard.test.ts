/**
 * `HandoffGuard`: a client's abort is held while a hand-off is open and fires when the last one
 * ends; the call's own `abandon` fires at once.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { HandoffGuard } from '../../src/openai/handoff-guard.js';

/** A hold no test reaches. */
const LONG = 3_600_000;

describe('HandoffGuard', () => {
  it('holds a client abort until the open hand-off ends, then fires with its reason', () => {
    const client = new AbortController();
    const guard = new HandoffGuard(client.signal, LONG);
    guard.begin();
    client.abort('gone');
    expect(guard.signal.aborted).toBe(false);
    guard.end();
    expect(guard.signal.aborted).toBe(true);
    expect(guard.signal.reason).toBe('gone');
  });

  it('fires at once with no hand-off open, and for abandon whatever is open', () => {
    const client = new AbortController();
    const guard = new HandoffGuard(client.signal, LONG);
    client.abort('gone');
    expect(guard.signal.reason).toBe('gone');
    const other = new HandoffGuard(new AbortController().signal, LONG);
    other.begin();
    other.abandon('mine');
    expect(other.signal.reason).toBe('mine');
  });

  it('follows a model of begin, end and the client abort (property)', () => {
    const op = fc.constantFrom('begin', 'end', 'abort', 'end');
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const client = new AbortController();
        const guard = new HandoffGuard(client.signal, LONG);
        let open = 0;
        let aborted = false;
        let fired = false;
        for (const o of ops) {
          if (o === 'begin') open++;
          if (o === 'end') open = Math.max(0, open - 1);
          if (o === 'abort') aborted = true;
          if (o === 'begin') guard.begin();
          else if (o === 'end') guard.end();
          else client.abort();
          // Fires once the client aborted while, or after, no hand-off is open; never undone.
          fired ||= aborted && open === 0;
          expect(guard.signal.aborted).toBe(fired);
        }
        guard.dispose();
      }),
    );
  });

  describe('timeoutMs: a held abort fires that long after the client left at most', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    it('fires the held abort when the hand-off outlives the timeout, once', () => {
      vi.useFakeTimers();
      const client = new AbortController();
      const guard = new HandoffGuard(client.signal, 1_000);
      guard.begin();
      vi.advanceTimersByTime(5_000); // no client abort yet: nothing to time out
      expect(guard.signal.aborted).toBe(false);
      client.abort('gone');
      vi.advanceTimersByTime(999);
      expect(guard.signal.aborted).toBe(false);
      vi.advanceTimersByTime(1);
      expect(guard.signal.reason).toBe('gone');
      expect(vi.getTimerCount()).toBe(0);
      guard.end(); // the decode leg's read fails with the abort: nothing more happens
      guard.dispose();
    });

    it('clears its timer when the hand-off ends first, or the call is disposed', () => {
      vi.useFakeTimers();
      for (const how of ['end', 'dispose'] as const) {
        const client = new AbortController();
        const guard = new HandoffGuard(client.signal, 1_000);
        guard.begin();
        client.abort('gone');
        expect(vi.getTimerCount()).toBe(1);
        if (how === 'end') guard.end();
        else guard.dispose();
        expect(vi.getTimerCount()).toBe(0);
        expect(guard.signal.aborted).toBe(how === 'end');
      }
    });
  });

  it('idle() resolves once no hand-off is open; ended fires at dispose', async () => {
    const guard = new HandoffGuard(new AbortController().signal, LONG);
    await guard.idle();
    guard.begin();
    guard.begin();
    let idle = false;
    const waiting = guard.idle().then(() => {
      idle = true;
    });
    guard.end();
    await Promise.resolve();
    expect(idle).toBe(false);
    guard.end();
    await waiting;
    expect(guard.ended.aborted).toBe(false);
    guard.dispose();
    expect(guard.ended.aborted).toBe(true);
  });
});
