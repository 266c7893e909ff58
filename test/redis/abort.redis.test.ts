/**
 * A wait on a shared-state lookup ends at once when the caller's signal aborts or the router
 * closes: `execute` (and `router.prepare`) never wait out a lookup stalled on a real
 * `redis-server` (SIGSTOP) once nobody wants its answer. The lookup deadline is set far beyond
 * the bounded waits below, so only the abort can end the wait.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createPolicy, FleetRouteError } from '../../src/index.js';
import {
  noRedis,
  type Replica,
  redisServer,
  replica,
  routedTo,
  Teardown,
  tokens,
  until,
} from './redis-replicas.js';

/** Far beyond the bounded waits of these tests (10 s): only an abort ends a lookup's wait. */
const LONG_DEADLINE_MS = 600_000;

const sessionRequest = (key: string) => ({ model: 'm', routingKey: key });
const prefixRequest = { model: 'c', tokens: tokens(5, 512) };

/** A replica sharing sessions (`m`, manual) and the prefix index (`c`), with long deadlines. */
async function stalledReplica(t: Teardown): Promise<{
  readonly r: Replica;
  readonly stop: () => void;
  readonly resume: () => void;
}> {
  const server = await redisServer(t);
  const r = await replica(t, server.url, {
    models: ['m', 'c'],
    policy: createPolicy('manual', { seed: 3 }),
    policies: { c: 'cache_aware' },
    shared: {
      loads: { refreshMs: 0 },
      sessions: { deadlineMs: LONG_DEADLINE_MS },
      prefixIndex: { deadlineMs: LONG_DEADLINE_MS },
    },
  });
  // Connected, the scripts loaded: the lookups below reach the server and stall there.
  await routedTo(r, sessionRequest('warm'));
  await routedTo(r, prefixRequest);
  let stopped = false;
  t.add(() => {
    if (stopped) server.signal('SIGCONT');
  });
  return {
    r,
    stop: () => {
      stopped = true;
      server.signal('SIGSTOP');
    },
    resume: () => {
      stopped = false;
      server.signal('SIGCONT');
    },
  };
}

/** `execute` on `r`, recording how it settled and whether `send` was called. */
function executeRecorded(
  r: Replica,
  request: Parameters<Replica['router']['execute']>[0],
  signal?: AbortSignal,
): { readonly outcome: () => unknown; readonly sent: () => boolean } {
  let outcome: unknown;
  let sent = false;
  const send = async () => {
    sent = true;
    return { status: 200 };
  };
  r.router.execute(request, send, signal === undefined ? {} : { signal }).then(
    (value) => (outcome = value),
    (error: unknown) => (outcome = error),
  );
  return { outcome: () => outcome, sent: () => sent };
}

describe.skipIf(noRedis)('a wait on a stalled shared-state lookup', () => {
  const t = new Teardown();
  afterEach(() => t.run());

  it.each([
    ['session', sessionRequest('user-1')],
    ['prefix', prefixRequest],
  ])(
    "execute ends its wait on a %s lookup as soon as the caller's signal aborts",
    async (_, request) => {
      const { r, stop, resume } = await stalledReplica(t);
      stop();
      const controller = new AbortController();
      const call = executeRecorded(r, request, controller.signal);
      const reason = new Error('the client went away');
      controller.abort(reason);
      const ended = await until(() => call.outcome() !== undefined);
      resume();

      expect(ended).toBe(true);
      expect(call.outcome()).toBe(reason);
      expect(call.sent()).toBe(false);
    },
  );

  it('execute ends its wait with CLOSED as soon as the router closes, and close() resolves', async () => {
    const { r, stop, resume } = await stalledReplica(t);
    stop();
    const call = executeRecorded(r, sessionRequest('user-2'));
    let closed = false;
    const closing = r.router.close().then(() => (closed = true));
    const ended = await until(() => call.outcome() !== undefined && closed);
    resume();
    await closing;

    expect(ended).toBe(true);
    expect(call.outcome()).toBeInstanceOf(FleetRouteError);
    expect((call.outcome() as FleetRouteError).code).toBe('CLOSED');
    expect(call.sent()).toBe(false);
  });

  it('router.prepare resolves as soon as the router closes', async () => {
    const { r, stop, resume } = await stalledReplica(t);
    stop();
    let prepared = false;
    void r.router.prepare(prefixRequest).then(() => (prepared = true));
    const closing = r.router.close();
    const ended = await until(() => prepared);
    resume();
    await closing;

    expect(ended).toBe(true);
  });
});
