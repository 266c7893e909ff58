/**
 * `Admission` on virtual time, as a simulator drives it: it decides at `enter`, `wake` and
 * `expire(now)` and never starts a timer; room comes from real workers' counts and reports.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  Admission,
  type AdmissionTicket,
  type AdmissionWaiter,
} from '../../src/admission/admission.js';
import type { AdmissionEvent } from '../../src/admission/admission-events.js';
import { ADMISSION_OPTIONS, type AdmissionConfig } from '../../src/admission/admission-options.js';
import { type FleetRouteError, type LoadReport, WorkerRegistry } from '../../src/index.js';

let now = 0;

async function setUp(
  config: AdmissionConfig,
  staleAfterMs = Number.POSITIVE_INFINITY,
  workers = 1,
) {
  const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
  for (let i = 0; i < workers; i++)
    await registry.register({ url: `http://w${i}:8000`, models: ['m'] });
  const events: AdmissionEvent[] = [];
  const admission = new Admission(
    ADMISSION_OPTIONS.read({ ...config, clock: () => now }),
    staleAfterMs,
    { candidates: (model) => registry.getByModel(model), report: (e) => events.push(e) },
  );
  return { registry, admission, events, workers: registry.getByModel('m') };
}

/** A waiter that records how it ended. */
function waiter(log: string[], id: string) {
  const tickets: AdmissionTicket[] = [];
  const w: AdmissionWaiter = {
    granted: (ticket) => {
      log.push(`${id}:granted`);
      tickets.push(ticket);
    },
    rejected: (error: FleetRouteError) => log.push(`${id}:${error.code}:${error.reason ?? ''}`),
  };
  return { w, tickets };
}

beforeEach(() => {
  now = 0;
  vi.useFakeTimers();
});
afterEach(() => {
  expect(vi.getTimerCount()).toBe(0);
  vi.useRealTimers();
});

describe('Admission on virtual time', () => {
  it('grants at once while there is room, and a grant holds its place until its ticket is released', async () => {
    const { admission, workers } = await setUp({ maxInFlight: 1 });
    const log: string[] = [];
    const a = waiter(log, 'a');
    expect(admission.enter({ model: 'm' }, a.w)).toBeUndefined();
    // Not leased yet, but its place is taken: b waits.
    const b = waiter(log, 'b');
    expect(admission.enter({ model: 'm' }, b.w)).toBeDefined();
    const lease = workers[0]!.acquire();
    a.tickets[0]!.release();
    a.tickets[0]!.release(); // once
    expect(log).toEqual(['a:granted']);
    lease.release();
    admission.wake();
    expect(log).toEqual(['a:granted', 'b:granted']);
  });

  it('expire(now) turns away what waited past maxWaitMs, oldest first, and nothing else', async () => {
    const { admission, workers, events } = await setUp({ maxInFlight: 1, maxWaitMs: 100 });
    const lease = workers[0]!.acquire();
    const log: string[] = [];
    admission.enter({ model: 'm' }, waiter(log, 'a').w);
    now = 50;
    admission.enter({ model: 'm' }, waiter(log, 'b').w);
    expect(admission.nextDeadline).toBe(100);
    admission.expire(99);
    expect(log).toEqual([]);
    admission.expire(100);
    expect(log).toEqual(['a:SATURATED:timeout']);
    expect(admission.nextDeadline).toBe(150);
    now = 100;
    lease.release();
    admission.wake();
    expect(log).toEqual(['a:SATURATED:timeout', 'b:granted']);
    expect(events.map((e) => [e.outcome, e.reason, e.queued, e.waitedMs])).toEqual([
      ['rejected', 'timeout', true, 100],
      ['admitted', undefined, true, 50],
    ]);
  });

  it('cancel takes a waiting request out at once; a second cancel does nothing', async () => {
    const { admission, workers } = await setUp({ maxInFlight: 1 });
    const lease = workers[0]!.acquire();
    const log: string[] = [];
    const entry = admission.enter({ model: 'm' }, waiter(log, 'a').w)!;
    expect(admission.cancel(entry)).toBe(true);
    expect(admission.cancel(entry)).toBe(false);
    expect(admission.queued).toBe(0);
    lease.release();
    admission.wake();
    expect(log).toEqual([]);
    expect(admission.stats()).toMatchObject({ aborted: 1, queued: 0 });
  });

  it('a report of a full engine queue takes the room away; requests sent since count as waiting', async () => {
    const { admission, workers } = await setUp({ maxWaitingRequests: 4 });
    const w = workers[0]!;
    const reports = (report: LoadReport) =>
      admission.updateLoads(new Map([[w.url, report]]), () => w.prefilling);
    reports({ waitingRequests: 2 });
    expect(admission.wouldAdmit({ model: 'm' })).toBe(true);
    const leases = [w.acquire(), w.acquire()];
    // 2 reported + 2 sent since, awaiting their first token: 4, full.
    expect(admission.wouldAdmit({ model: 'm' })).toBe(false);
    leases[0]!.firstToken();
    expect(admission.wouldAdmit({ model: 'm' })).toBe(true);
    reports({ waitingRequests: 0, tokenUsage: 0.95 });
    expect(admission.wouldAdmit({ model: 'm' })).toBe(false);
    for (const lease of leases) lease.release();
  });

  it('counts a worker whose report is older than staleAfterMs as full', async () => {
    const { admission, workers } = await setUp({}, 1_000);
    const w = workers[0]!;
    admission.updateLoads(new Map([[w.url, {}]]), () => 0);
    now = 1_000;
    expect(admission.wouldAdmit({ model: 'm' })).toBe(true);
    now = 1_001;
    expect(admission.wouldAdmit({ model: 'm' })).toBe(false);
    admission.updateLoads(new Map([[w.url, {}]]), () => 0);
    expect(admission.wouldAdmit({ model: 'm' })).toBe(true);
  });

  it('names the full workers while others have room, and none when all are full', async () => {
    const { admission, workers } = await setUp({ maxInFlight: 1 }, Number.POSITIVE_INFINITY, 2);
    expect(admission.fullWorkers('m')).toBeUndefined();
    const a = workers[0]!.acquire();
    expect(admission.fullWorkers('m')).toEqual([workers[0]]);
    const b = workers[1]!.acquire();
    expect(admission.fullWorkers('m')).toBeUndefined();
    a.release();
    b.release();
  });

  it('close() turns every waiting request away with CLOSED, and every later one', async () => {
    const { admission, workers } = await setUp({ maxInFlight: 1 });
    const lease = workers[0]!.acquire();
    const log: string[] = [];
    admission.enter({ model: 'm' }, waiter(log, 'a').w);
    admission.enter({ model: 'm', priority: 3 }, waiter(log, 'b').w);
    admission.close();
    admission.enter({ model: 'm' }, waiter(log, 'c').w);
    expect(log).toEqual(['a:CLOSED:', 'b:CLOSED:', 'c:CLOSED:']);
    expect(admission.stats()).toMatchObject({ queued: 0, closed: 2 });
    lease.release();
  });
});
