/**
 * `ReportRounds`: which round of load reports a start-time restart is measured against — the
 * last one whose report still showed the old start time — whether the restart is told before or
 * after the round that shows the change.
 */
import { describe, expect, it } from 'vitest';
import { MARK_ROUNDS, ReportRounds } from '../../../src/policies/cache-aware/report-rounds.js';
import type { LoadReport } from '../../../src/workers/load-report.js';

const A = 'http://a:8000';
const reports = (startedAt?: number) =>
  new Map<string, LoadReport>([
    [A, startedAt === undefined ? { runningRequests: 0 } : { runningRequests: 0, startedAt }],
  ]);

describe('ReportRounds', () => {
  it('numbers rounds from 1, keeps their times by slot, and answers 0 before any round', () => {
    const rounds = new ReportRounds();
    expect(rounds.restartRound(A)).toBe(0);
    expect(rounds.deliver(reports(1), 100)).toBe(ReportRounds.slotOf(1));
    rounds.deliver(reports(1), 200);
    expect(rounds.round).toBe(2);
    expect(rounds.timeOf(1)).toBe(100);
    expect(rounds.timeOf(2)).toBe(200);
  });

  it.each([
    ['told before the round showing the change', true],
    ['told after it', false],
  ])('the round before the one showing the new start time: %s', (_name, before) => {
    const rounds = new ReportRounds();
    rounds.deliver(reports(1), 0);
    rounds.deliver(reports(1), 0); // round 2: the last with the old start time
    let round = before ? rounds.restartRound(A) : -1;
    rounds.deliver(reports(2), 0); // round 3
    if (!before) round = rounds.restartRound(A);
    expect(round).toBe(2);
  });

  it('a change is answered once: back-to-back restarts each go back one round', () => {
    const rounds = new ReportRounds();
    rounds.deliver(reports(1), 0);
    expect(rounds.restartRound(A)).toBe(1); // told before round 2…
    rounds.deliver(reports(2), 0); // …which shows it
    expect(rounds.restartRound(A)).toBe(2); // told before round 3…
    rounds.deliver(reports(3), 0); // …which shows it
    rounds.deliver(reports(4), 0); // round 4 shows another, told after it
    expect(rounds.restartRound(A)).toBe(3);
    expect(rounds.restartRound(A)).toBe(4); // nothing owed: the latest report
  });

  it('reports without a usable start time change nothing', () => {
    const rounds = new ReportRounds();
    rounds.deliver(reports(1), 0);
    for (const junk of [undefined, Number.NaN, -1, Number.POSITIVE_INFINITY])
      rounds.deliver(reports(junk), 0);
    rounds.deliver(reports(2), 0); // round 6
    expect(rounds.restartRound(A)).toBe(1); // rounds 2–5 carried no start time of it
  });

  it('a worker with no start time known is measured against the latest round; a forgotten one too', () => {
    const rounds = new ReportRounds();
    rounds.deliver(new Map(), 0);
    rounds.deliver(new Map(), 0);
    expect(rounds.restartRound(A)).toBe(2);
    rounds.deliver(reports(1), 0);
    rounds.forget(A);
    expect(rounds.size).toBe(0);
    rounds.deliver(reports(2), 0); // a first value again
    expect(rounds.restartRound(A)).toBe(4);
  });

  it('clamps to the oldest round kept, and clear() forgets every round', () => {
    const rounds = new ReportRounds();
    rounds.deliver(reports(1), 0);
    for (let i = 0; i < MARK_ROUNDS + 2; i++) rounds.deliver(new Map(), 0);
    rounds.deliver(reports(2), 0);
    expect(rounds.restartRound(A)).toBe(rounds.round - MARK_ROUNDS + 1);
    rounds.clear();
    expect(rounds.round).toBe(0);
    expect(rounds.restartRound(A)).toBe(0);
  });
});
