/**
 * `HandoffGuard`: a client's abort is held while a hand-off is open and fires when the last one
 * ends; the call's own `abandon` fires at once.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HandoffGuard } from '../../src/openai/handoff-guard.js';

describe('HandoffGuard', () => {
  it('holds a client abort until the open hand-off ends, then fires with its reason', () => {
    const client = new AbortController();
    const guard = new HandoffGuard(client.signal);
    guard.begin();
    client.abort('gone');
    expect(guard.signal.aborted).toBe(false);
    guard.end();
    expect(guard.signal.aborted).toBe(true);
    expect(guard.signal.reason).toBe('gone');
  });

  it('fires at once with no hand-off open, and for abandon whatever is open', () => {
    const client = new AbortController();
    const guard = new HandoffGuard(client.signal);
    client.abort('gone');
    expect(guard.signal.reason).toBe('gone');
    const other = new HandoffGuard(new AbortController().signal);
    other.begin();
    other.abandon('mine');
    expect(other.signal.reason).toBe('mine');
  });

  it('follows a model of begin, end and the client abort (property)', () => {
    const op = fc.constantFrom('begin', 'end', 'abort', 'end');
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), (ops) => {
        const client = new AbortController();
        const guard = new HandoffGuard(client.signal);
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
});
