/**
 * Model-based property test of the WorkerRegistry under concurrent mutation .
 *
 * Each run draws a batch of async calls (valid and junk) over a small pool of URLs, starts them
 * all, and lets `fc.scheduler()` decide the order in which they start, ask for their URL's lock
 * and enter it. After every run it checks the registry's invariants (docs/registry.md):
 *   1. exactly one event per successful mutation, none for a failed or no-op call;
 *   2. per worker id, `registered` first and `removed` last;
 *   3. replaying the event log onto an empty model reproduces membership, statuses, models;
 *   4. url ↔ id is a bijection over live workers, reservations never shadow, no stale mapping;
 *   5. every ring's membership equals its model's workers, the wildcard ring all workers;
 *   6. a throwing listener changes nothing for the registry or the other listeners.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FleetRouteError, type FleetRouteErrorCode } from '../../src/core/errors.js';
import { loadHasher } from '../../src/core/hash.js';
import type { StreamItem } from '../../src/registry/event-stream.js';
import type { WorkerEvent } from '../../src/registry/worker-event.js';
import {
  createRegistryWithHooks,
  type WorkerRegistry,
} from '../../src/registry/worker-registry.js';
import type { Worker } from '../../src/workers/worker.js';
import type { WorkerStatus } from '../../src/workers/worker-spec.js';
import { runs } from '../helpers/fc-settings.js';

/** Several spellings normalise to the same worker URL on purpose. */
const URLS = [
  'http://w0:8000',
  'w0:8000',
  'http://w1:8000',
  'HTTP://W2:8000/',
  'http://w2:8000',
  'grpc://w3:9000',
  'http://w4:8000@1',
] as const;
const MODELS = ['a', 'b', 'c'] as const;
const STATUSES: readonly WorkerStatus[] = ['pending', 'ready', 'not_ready', 'failed', 'draining'];

type Revision = 'none' | 'current' | 'stale';
type Op =
  | { kind: 'register'; url: number; models: string[]; status?: WorkerStatus | undefined }
  | { kind: 'registerOrReplace'; url: number; models: string[] }
  | {
      kind: 'replace';
      target: number;
      url: number | undefined;
      models: string[];
      revision: Revision;
    }
  | { kind: 'transition'; target: number; status: WorkerStatus; revision: Revision }
  | { kind: 'probe'; target: number; status: WorkerStatus }
  | { kind: 'remove'; target: number }
  | { kind: 'removeByUrl'; url: number }
  | { kind: 'reserve'; url: number }
  | { kind: 'setRetry'; model: string }
  | { kind: 'junk'; which: number };

const urlIndex = fc.integer({ min: 0, max: URLS.length - 1 });
const models = fc.subarray([...MODELS]);
const status = fc.constantFrom(...STATUSES);
const revision = fc.constantFrom<Revision>('none', 'current', 'stale');
/** A replacement mostly keeps the URL (undefined); sometimes it names another one (URL_CHANGED). */
const sameOrOtherUrl = fc.oneof(
  { weight: 4, arbitrary: fc.constant(undefined) },
  { weight: 1, arbitrary: urlIndex },
);

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record(
      {
        kind: fc.constant('register' as const),
        url: urlIndex,
        models,
        status: fc.option(status, { nil: undefined }),
      },
      { requiredKeys: ['kind', 'url', 'models'] },
    ),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('registerOrReplace' as const),
      url: urlIndex,
      models,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      target: urlIndex,
      url: sameOrOtherUrl,
      models,
      revision,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('transition' as const),
      target: urlIndex,
      status,
      revision,
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({ kind: fc.constant('probe' as const), target: urlIndex, status }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('remove' as const), target: urlIndex }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('removeByUrl' as const), url: urlIndex }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('reserve' as const), url: urlIndex }) },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('setRetry' as const),
      model: fc.constantFrom(...MODELS),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('junk' as const),
      which: fc.nat({ max: JUNK_COUNT() - 1 }),
    }),
  },
);

/** Bad calls: each must fail with a typed error (or resolve to undefined) and change nothing. */
function junkCalls(registry: WorkerRegistry, someId: string): Array<() => Promise<unknown>> {
  const r = registry as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return [
    () => r.register!(42),
    () => r.register!({ url: 42 }),
    () => r.register!({ url: 'ftp://w0:8000' }),
    () => r.register!({ url: 'http://w0:8000', models: [1] }),
    () => r.register!({ url: 'http://w0:8000', dpSize: Number.NaN }),
    () => r.register!({ url: `http://w0:8000/${'\uD800'}` }),
    () => r.register!({ url: `http://${'x'.repeat(5000)}:1` }),
    () => r.replace!(someId, { url: 'ftp://nope' }),
    () => r.replace!('worker-404', { url: 'http://w1:8000' }),
    () => r.transitionStatus!(someId, 'bogus'),
    () => r.transitionStatus!(someId, 'ready', { expectedRevision: Number.NaN }),
    () => r.transitionStatus!(someId, 'ready', { expectedRevision: -1 }),
    () => r.remove!(123),
    () => r.remove!(''),
    () => r.removeByUrl!('\uD800'),
    () => r.removeByUrl!(''),
    () => r.reserveIdForUrl!(null),
    async () => registry.setModelRetryConfig('a', { maxAttempts: -1 }),
    async () => registry.getByModel(5 as unknown as string),
  ];
}
function JUNK_COUNT(): number {
  return 19;
}

const ALLOWED_CODES: Record<Op['kind'], readonly FleetRouteErrorCode[]> = {
  register: ['DUPLICATE_URL'],
  registerOrReplace: [],
  replace: ['NOT_FOUND', 'URL_CHANGED', 'STALE_REVISION'],
  transition: ['NOT_FOUND', 'STALE_REVISION'],
  probe: ['NOT_FOUND', 'STALE_REVISION'],
  remove: [],
  removeByUrl: [],
  reserve: [],
  setRetry: ['NOT_FOUND'],
  junk: ['INVALID_URL', 'INVALID_ARGUMENT', 'NOT_FOUND'],
};

type Settled = { ok: true; value: unknown } | { ok: false; error: unknown };

/** What an op saw when it started and what was true when it had settled. */
interface Context {
  id?: string | undefined;
  revisionAtStart?: number | undefined;
  expectedRevision?: number | undefined;
  liveIdAtStart?: string | undefined;
  liveIdAtEnd?: string | undefined;
  revisionAtEnd?: number | undefined;
}

interface ModelWorker {
  url: string;
  models: readonly string[];
  status: WorkerStatus;
  revision: number;
}

async function runBatch(s: fc.Scheduler, ops: readonly Op[], throwEvery: number): Promise<void> {
  const hasher = await loadHasher();
  const schedule = (label: string) => (url: string) =>
    s.schedule(Promise.resolve(), `${label} ${url}`);
  const registry = createRegistryWithHooks(
    hasher,
    { virtualNodes: 4, onListenerError: () => listenerErrors++ },
    { beforeLock: schedule('before lock'), insideLock: schedule('inside lock') },
  );
  let listenerErrors = 0;
  let thrown = 0;
  const log: WorkerEvent[] = [];
  const problems: string[] = [];

  // A listener that throws, registered before the recorder: it must not stop the recorder.
  registry.on('event', (event) => {
    if (event.seq % throwEvery === 0) {
      thrown++;
      throw new Error(`listener failure at ${event.seq}`);
    }
  });
  registry.on('event', (event) => {
    log.push(event);
    checkAtEvent(registry, event, problems);
    try {
      checkRings(registry);
      for (const model of Object.keys(registry.snapshot().retryConfigs))
        expect(registry.getModels()).toContain(model);
    } catch (error) {
      problems.push(`after event ${event.seq} (${event.type}): ${(error as Error).message}`);
    }
  });
  const stream = registry.events({ bufferSize: 100_000 });

  const settled: Settled[] = [];
  const contexts: Context[] = ops.map(() => ({}));
  const tasks = ops.map((op, i) =>
    s
      .schedule(Promise.resolve(), `start #${i} ${JSON.stringify(op)}`)
      .then(() => execute(registry, s, op, contexts[i]!))
      .then(
        (value) => {
          settled[i] = { ok: true, value };
        },
        (error: unknown) => {
          settled[i] = { ok: false, error };
        },
      )
      .then(() => observeEnd(registry, op, contexts[i]!)),
  );
  await s.waitIdle();
  await Promise.all(tasks);

  expect(problems, problems.join('\n')).toEqual([]);
  expect(listenerErrors).toBe(thrown);
  checkResultsAgainstEvents(ops, settled, log);
  checkRevisionsAndReservations(ops, settled, contexts, log);
  checkEventOrder(log);
  checkReplay(registry, log);
  checkMappings(registry, log);
  checkRings(registry);
  for (const model of registry.getModels())
    expect(registry.getByModel(model)).toBe(registry.getByModel(model));
  for (const model of Object.keys(registry.snapshot().retryConfigs))
    expect(registry.getModels()).toContain(model);

  registry.close();
  const streamed: StreamItem[] = [];
  for await (const item of stream) streamed.push(item);
  expect(streamed).toEqual(log);
}

async function execute(
  registry: WorkerRegistry,
  s: fc.Scheduler,
  op: Op,
  ctx: Context,
): Promise<unknown> {
  const idOf = (target: number): string => {
    const id = registry.getIdByUrl(URLS[target]!) ?? 'worker-404';
    ctx.id = id;
    ctx.revisionAtStart = registry.get(id)?.revision;
    return id;
  };
  const expectedRevision = (id: string, rev: Revision): { expectedRevision?: number } => {
    const current = registry.get(id)?.revision ?? 0;
    if (rev === 'none') return {};
    ctx.expectedRevision = rev === 'current' ? current : current + 1;
    return { expectedRevision: ctx.expectedRevision };
  };
  if (op.kind === 'reserve') ctx.liveIdAtStart = registry.getByUrl(URLS[op.url]!)?.id;
  switch (op.kind) {
    case 'register':
      return registry.register(
        op.status === undefined
          ? { url: URLS[op.url]!, models: op.models }
          : { url: URLS[op.url]!, models: op.models, status: op.status },
      );
    case 'registerOrReplace':
      return registry.registerOrReplace({ url: URLS[op.url]!, models: op.models });
    case 'replace': {
      const id = idOf(op.target);
      const url = URLS[op.url ?? op.target]!;
      return registry.replace(id, { url, models: op.models }, expectedRevision(id, op.revision));
    }
    case 'transition': {
      const id = idOf(op.target);
      return registry.transitionStatus(id, op.status, expectedRevision(id, op.revision));
    }
    case 'probe': {
      // A health probe: launched at one revision, completing later with that revision.
      const id = idOf(op.target);
      const launched = registry.get(id)?.revision ?? 0;
      ctx.expectedRevision = launched;
      await s.schedule(Promise.resolve(), `probe of ${id} completes`);
      return registry.transitionStatus(id, op.status, { expectedRevision: launched });
    }
    case 'remove':
      return registry.remove(idOf(op.target));
    case 'removeByUrl':
      return registry.removeByUrl(URLS[op.url]!);
    case 'reserve':
      return registry.reserveIdForUrl(URLS[op.url]!);
    case 'setRetry':
      registry.setModelRetryConfig(op.model, { maxAttempts: 2 });
      return undefined;
    case 'junk': {
      const someId = registry.getAll()[0]?.id ?? 'worker-1';
      return junkCalls(registry, someId)[op.which]!();
    }
  }
}

function observeEnd(registry: WorkerRegistry, op: Op, ctx: Context): void {
  if (ctx.id !== undefined) ctx.revisionAtEnd = registry.get(ctx.id)?.revision;
  if (op.kind === 'reserve') ctx.liveIdAtEnd = registry.getByUrl(URLS[op.url]!)?.id;
}

/**
 * Revision checks and reservations, judged only where the outcome is certain: a worker whose id
 * is live at the same revision before and after an op was at that revision throughout (ids are
 * never reused and revisions only grow), so the op's revision check had exactly one right answer.
 */
function checkRevisionsAndReservations(
  ops: readonly Op[],
  settled: readonly Settled[],
  contexts: readonly Context[],
  log: readonly WorkerEvent[],
): void {
  ops.forEach((op, i) => {
    const ctx = contexts[i]!;
    const result = settled[i]!;
    const stale = !result.ok && FleetRouteError.is(result.error, 'STALE_REVISION');
    if (ctx.expectedRevision !== undefined && result.ok && result.value !== undefined) {
      // A successful checked mutation acted on exactly the expected revision.
      if (op.kind === 'replace') {
        const event = log.find((e) => e.type === 'replaced' && e.new === result.value);
        expect(event?.type === 'replaced' && event.old.revision).toBe(ctx.expectedRevision);
      } else {
        const { from, to } = result.value as { from: WorkerStatus; to: WorkerStatus };
        const match = log.some(
          (e) =>
            e.type === 'statusChanged' &&
            e.workerId === ctx.id &&
            e.from === from &&
            e.to === to &&
            e.worker.revision === ctx.expectedRevision,
        );
        expect(
          match,
          `op #${i} ${op.kind} succeeded at a revision other than ${ctx.expectedRevision}`,
        ).toBe(true);
      }
    }
    const steady = ctx.revisionAtStart !== undefined && ctx.revisionAtStart === ctx.revisionAtEnd;
    const decided = result.ok || stale;
    if (steady && decided && ctx.expectedRevision !== undefined) {
      expect(
        stale,
        `op #${i} ${op.kind}: STALE_REVISION must be thrown iff ${ctx.expectedRevision} ≠ ${ctx.revisionAtStart}`,
      ).toBe(ctx.expectedRevision !== ctx.revisionAtStart);
    }
    if (
      op.kind === 'reserve' &&
      result.ok &&
      ctx.liveIdAtStart !== undefined &&
      ctx.liveIdAtStart === ctx.liveIdAtEnd
    ) {
      expect(result.value, `a reservation shadowed live worker ${ctx.liveIdAtStart}`).toBe(
        ctx.liveIdAtStart,
      );
    }
  });
}

/** At the moment an event is delivered, the registry already reflects it. */
function checkAtEvent(registry: WorkerRegistry, event: WorkerEvent, problems: string[]): void {
  const live = event.type === 'replaced' ? event.new : event.worker;
  if (event.type === 'removed') {
    if (registry.get(event.workerId) !== undefined)
      problems.push(`removed ${event.workerId} still live`);
    if (registry.getIdByUrl(live.url) === event.workerId)
      problems.push(`removed ${event.workerId} still mapped`);
    if (live.live) problems.push(`removed ${event.workerId} still marked live`);
  } else {
    if (registry.get(event.workerId) !== live)
      problems.push(`${event.type} ${event.workerId} is not the live object`);
    if (registry.getIdByUrl(live.url) !== event.workerId)
      problems.push(`${event.type} ${event.workerId} not mapped by URL`);
  }
}

function eventsOf(log: readonly WorkerEvent[], predicate: (e: WorkerEvent) => boolean): number {
  return log.filter(predicate).length;
}

/** Invariant 1: exactly one event per successful mutation, none for failures or no-ops. */
function checkResultsAgainstEvents(
  ops: readonly Op[],
  settled: readonly Settled[],
  log: readonly WorkerEvent[],
): void {
  let expected = 0;
  ops.forEach((op, i) => {
    const result = settled[i]!;
    if (!result.ok) {
      const error = result.error;
      expect(
        error,
        `op #${i} ${op.kind} failed with a non-FleetRouteError: ${String(error)}`,
      ).toBeInstanceOf(FleetRouteError);
      expect(ALLOWED_CODES[op.kind], `op #${i} ${op.kind}: ${(error as Error).message}`).toContain(
        (error as FleetRouteError).code,
      );
      return;
    }
    const value = result.value;
    switch (op.kind) {
      case 'register':
        expected++;
        expect(eventsOf(log, (e) => e.type === 'registered' && e.worker === value)).toBe(1);
        break;
      case 'registerOrReplace': {
        const { worker, replaced } = value as { worker: Worker; replaced: boolean };
        expected++;
        if (replaced)
          expect(eventsOf(log, (e) => e.type === 'replaced' && e.new === worker)).toBe(1);
        else expect(eventsOf(log, (e) => e.type === 'registered' && e.worker === worker)).toBe(1);
        break;
      }
      case 'replace':
        expected++;
        expect(eventsOf(log, (e) => e.type === 'replaced' && e.new === value)).toBe(1);
        break;
      case 'transition':
      case 'probe':
        if (value !== undefined) expected++;
        break;
      case 'remove':
      case 'removeByUrl':
        if (value !== undefined) {
          expected++;
          expect(eventsOf(log, (e) => e.type === 'removed' && e.worker === value)).toBe(1);
        }
        break;
      case 'reserve':
      case 'setRetry':
      case 'junk':
        break;
    }
  });
  expect(log.length).toBe(expected);
  expect(log.map((event) => event.seq)).toEqual(log.map((_, i) => i + 1));
}

/** Invariant 2: per id, `registered` first, `removed` last, nothing after. */
function checkEventOrder(log: readonly WorkerEvent[]): void {
  const state = new Map<string, 'live' | 'gone'>();
  for (const event of log) {
    const seen = state.get(event.workerId);
    if (event.type === 'registered') {
      expect(seen, `second registered for ${event.workerId}`).toBeUndefined();
      state.set(event.workerId, 'live');
    } else {
      expect(seen, `${event.type} for ${event.workerId} outside its lifetime`).toBe('live');
      if (event.type === 'removed') state.set(event.workerId, 'gone');
    }
  }
}

/** Invariant 3: the event log alone rebuilds membership, statuses and the model index. */
function checkReplay(registry: WorkerRegistry, log: readonly WorkerEvent[]): void {
  const model = new Map<string, ModelWorker>();
  for (const event of log) {
    switch (event.type) {
      case 'registered':
        model.set(event.workerId, {
          url: event.worker.url,
          models: event.worker.models,
          status: event.status,
          revision: event.worker.revision,
        });
        break;
      case 'replaced': {
        const entry = model.get(event.workerId)!;
        expect(event.old.url).toBe(event.new.url);
        expect(event.new.revision).toBe(entry.revision + 1);
        entry.models = event.new.models;
        entry.revision = event.new.revision;
        break;
      }
      case 'statusChanged': {
        const entry = model.get(event.workerId)!;
        expect(event.from).toBe(entry.status);
        expect(event.to).not.toBe(event.from);
        entry.status = event.to;
        break;
      }
      case 'removed':
        model.delete(event.workerId);
        break;
    }
  }
  const actual = registry.getAll();
  expect(new Set(actual.map((w) => w.id))).toEqual(new Set(model.keys()));
  expect(registry.size).toBe(model.size);
  for (const worker of actual) {
    const entry = model.get(worker.id)!;
    expect(worker.url).toBe(entry.url);
    expect(worker.status).toBe(entry.status);
    expect(worker.revision).toBe(entry.revision);
    expect(worker.models).toEqual(entry.models);
  }
  const explicit = new Map<string, Set<string>>();
  const wildcard = new Set<string>();
  for (const [id, entry] of model) {
    if (entry.models.length === 0) wildcard.add(id);
    for (const m of entry.models) {
      if (!explicit.has(m)) explicit.set(m, new Set());
      explicit.get(m)!.add(id);
    }
  }
  expect([...registry.getModels()]).toEqual([...explicit.keys()].sort());
  for (const [m, ids] of explicit) {
    expect(new Set(registry.getByModel(m).map((w) => w.id))).toEqual(
      new Set([...ids, ...wildcard]),
    );
  }
  expect(new Set(registry.getByModel('never-served').map((w) => w.id))).toEqual(
    explicit.size === 0 ? new Set(model.keys()) : wildcard,
  );
}

/** Invariant 4: url ↔ id bijection over live workers; no stale or shadowing mapping. */
function checkMappings(registry: WorkerRegistry, log: readonly WorkerEvent[]): void {
  const liveIds = new Set(registry.getAll().map((w) => w.id));
  const urls = new Set<string>();
  for (const worker of registry.getAll()) {
    expect(urls.has(worker.url), `two live workers share ${worker.url}`).toBe(false);
    urls.add(worker.url);
    expect(registry.getIdByUrl(worker.url)).toBe(worker.id);
    expect(registry.getByUrl(worker.url)).toBe(worker);
    expect(registry.get(worker.id)).toBe(worker);
    expect(worker.live).toBe(true);
  }
  const everUsed = new Set(log.map((e) => e.workerId));
  for (const spelling of URLS) {
    const worker = registry.getByUrl(spelling);
    const id = registry.getIdByUrl(spelling);
    if (worker !== undefined) {
      expect(id).toBe(worker.id);
      continue;
    }
    // Not live: at most a reservation, which must be an id never used by any worker.
    if (id !== undefined) {
      expect(liveIds.has(id)).toBe(false);
      expect(everUsed.has(id), `stale mapping ${spelling} → ${id}`).toBe(false);
    }
  }
  for (const event of log) {
    if (event.type === 'removed' && !liveIds.has(event.workerId))
      expect(event.worker.live).toBe(false);
  }
}

/** Invariant 5: ring membership equals model membership; the wildcard ring holds everyone. */
function checkRings(registry: WorkerRegistry): void {
  const urlsOf = (workers: readonly Worker[]): string[] => workers.map((w) => w.url).sort();
  expect([...registry.getHashRing().urls]).toEqual(urlsOf(registry.getAll()));
  expect(registry.getHashRing('*')).toBe(registry.getHashRing());
  for (const model of registry.getModels()) {
    expect([...registry.getHashRing(model).urls]).toEqual(urlsOf(registry.getByModel(model)));
  }
  expect([...registry.getHashRing('never-served').urls]).toEqual(
    urlsOf(registry.getByModel('never-served')),
  );
  if (registry.getModels().length === 1) {
    expect(registry.getHashRing(registry.getModels()[0])).toBe(registry.getHashRing());
  }
}

describe('WorkerRegistry under concurrent mutation (model-based)', () => {
  it('keeps every registry invariant for any interleaving of register / replace / transition / remove / reserve / probe / junk', async () => {
    expect(JUNK_COUNT()).toBe(junkCalls(undefined as unknown as WorkerRegistry, 'x').length);
    await fc.assert(
      fc.asyncProperty(
        fc.scheduler(),
        fc.array(opArb, { minLength: 1, maxLength: 24 }),
        fc.integer({ min: 2, max: 7 }),
        (s, ops, throwEvery) => runBatch(s, ops, throwEvery),
      ),
      runs(1000, 3000),
    );
  });
});
