/**
 * `KvSequence`: the subscriber's sequence logic alone, without a socket — what each live batch
 * means, what a replay's batches are, where a live batch stands once the replay is over.
 */
import { describe, expect, it } from 'vitest';
import { KvSequence } from '../../src/kv-events/sequence.js';

/** Applies live batches `seqs` in order, as the subscriber does when each is the next. */
function appliedThrough(sequence: KvSequence, ...seqs: bigint[]): void {
  for (const seq of seqs) {
    expect(sequence.live(seq, false)).toEqual({ restart: undefined, step: { kind: 'apply' } });
    expect(sequence.settle(seq)).toBe('next');
    sequence.applied(seq, true);
  }
}

describe('KvSequence', () => {
  it('applies batches in order, from any first one when there is no warm-up', () => {
    const sequence = new KvSequence();
    appliedThrough(sequence, 7n, 8n, 9n);
    expect(sequence.last).toBe(9n);
  });

  it('warms up from a first batch that is not the engine’s first, only when it can', () => {
    expect(new KvSequence().live(5n, true).step).toEqual({ kind: 'warmup' });
    expect(new KvSequence().live(0n, true).step).toEqual({ kind: 'apply' });
    expect(new KvSequence().live(5n, false).step).toEqual({ kind: 'apply' });
  });

  it('names the missing batches of a gap', () => {
    const sequence = new KvSequence();
    appliedThrough(sequence, 3n);
    expect(sequence.live(7n, true)).toEqual({
      restart: undefined,
      step: { kind: 'gap', from: 4n, to: 6n },
    });
  });

  it('a sequence going backwards on one connection is a restart; after a lost connection it is not', () => {
    const sequence = new KvSequence();
    appliedThrough(sequence, 10n, 11n);
    expect(sequence.live(2n, true)).toEqual({ restart: 'backwards', step: { kind: 'warmup' } });
    expect(sequence.last).toBeUndefined();

    const other = new KvSequence();
    appliedThrough(other, 10n, 11n);
    other.connectionLost();
    other.cleared();
    expect(other.live(2n, false)).toEqual({ restart: undefined, step: { kind: 'apply' } });
  });

  it('a gap replay fills the gap: its batches are next, the live batch is covered, later live duplicates skipped', () => {
    const sequence = new KvSequence();
    appliedThrough(sequence, 3n);
    sequence.live(6n, true);
    sequence.replayStart(4n, false);
    expect(sequence.replayed(2n)).toBe('stale');
    for (const seq of [4n, 5n, 6n, 7n]) {
      expect(sequence.replayed(seq)).toBe('next');
      sequence.applied(seq, false);
    }
    sequence.replayEnd();
    expect(sequence.settle(6n)).toBe('covered');
    // Queued live while the replay ran: brought already.
    expect(sequence.live(7n, true)).toEqual({ restart: undefined, step: { kind: 'duplicate' } });
    expect(sequence.live(8n, true).step).toEqual({ kind: 'apply' });
  });

  it('a gap replay that starts past the gap, or skips inside it, meets a hole', () => {
    const sequence = new KvSequence();
    appliedThrough(sequence, 3n);
    sequence.live(9n, true);
    sequence.replayStart(4n, false);
    expect(sequence.replayed(6n)).toBe('hole');
    sequence.cleared();
    sequence.applied(6n, false);
    expect(sequence.replayed(8n)).toBe('hole');
  });

  it('a warm-up takes whatever the buffer starts with', () => {
    const sequence = new KvSequence();
    expect(sequence.live(50n, true).step).toEqual({ kind: 'warmup' });
    sequence.replayStart(0n, true);
    expect(sequence.replayed(40n)).toBe('next');
  });

  it('a replay that ended before the live batch leaves it short: the batches between are lost', () => {
    const sequence = new KvSequence();
    appliedThrough(sequence, 3n);
    sequence.live(9n, true);
    sequence.replayStart(4n, false);
    sequence.replayed(4n);
    sequence.applied(4n, false);
    sequence.replayEnd();
    expect(sequence.settle(9n)).toBe('short');
  });

  it('a live batch not past what a failed warm-up applied is behind: cleared, then applied', () => {
    const sequence = new KvSequence();
    sequence.live(5n, true);
    sequence.replayStart(0n, true);
    for (const seq of [3n, 4n, 5n, 6n]) sequence.applied(seq, false);
    // No end marker: the replay failed; the live 5 is covered, but 6 is no duplicate.
    expect(sequence.settle(5n)).toBe('covered');
    expect(sequence.live(6n, true)).toEqual({ restart: 'behind', step: { kind: 'apply' } });
    expect(sequence.last).toBeUndefined();
  });
});
