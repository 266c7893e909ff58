/**
 * `KvEventSubscriber` over real ZMQ sockets on 127.0.0.1: a fake engine publishes the engines'
 * exact frames; the subscriber's view of the worker must end equal to what the engine holds, or
 * a subset of it after a counted clear — never a block the engine does not hold.
 */
import { createServer } from 'node:net';
import { encode } from '@msgpack/msgpack';
import { afterEach, describe, expect, it } from 'vitest';
import * as zeromq from 'zeromq';
import { createPolicy, WorkerRegistry } from '../../src/index.js';
import { loadMsgpackDecode } from '../../src/kv-events/msgpack.js';
import { KvEventSubscriber } from '../../src/kv-events/subscriber.js';
import type { KvSubscriberEvent } from '../../src/kv-events/subscriber-events.js';
import type { Zmq } from '../../src/kv-events/zeromq.js';
import {
  EngineModel,
  FakeEngine,
  type FakeEngineOptions,
  RecordingTarget,
  seqFrame,
  until,
} from './support/fake-engine.js';

const URL = 'http://127.0.0.1:8000';
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);

const open: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

async function engine(options: FakeEngineOptions = {}) {
  const e = await FakeEngine.start(options);
  open.push(e);
  return e;
}

type SubscriberOptions = Parameters<typeof KvEventSubscriber.open>[0];

async function subscribe(
  e: FakeEngine | undefined,
  target: SubscriberOptions['target'],
  extra: Partial<SubscriberOptions> = {},
) {
  const s = await KvEventSubscriber.open({
    workerUrl: URL,
    endpoint: e?.endpoint ?? '',
    target,
    reconnectIntervalMs: 20,
    reconnectMaxIntervalMs: 100,
    ...(e?.replayEndpoint === undefined ? {} : { replayEndpoint: e.replayEndpoint }),
    ...extra,
  });
  open.push(s);
  return s;
}

/**
 * Sends a probe batch until the subscriber has seen one (the slow joiner's first messages are
 * lost), then waits for the last probe.
 */
async function joined(e: FakeEngine, s: KvEventSubscriber) {
  const seen = s.stats().batches;
  await until(() => {
    void e.send([]);
    return s.stats().batches > seen;
  });
  await caughtUp(e, s);
}

/** Waits until the subscriber has applied the engine's last batch. */
async function caughtUp(e: EngineModel, s: KvEventSubscriber, tries?: number) {
  await until(() => s.stats().lastSeq === e.seq - 1n, tries);
}

/** A {@link RecordingTarget} that spends a little CPU on each batch, so a flood overruns it. */
class SlowTarget extends RecordingTarget {
  override applyKvKeys(...args: Parameters<RecordingTarget['applyKvKeys']>) {
    let x = 0;
    for (let i = 0; i < 20_000; i++) x += Math.sqrt(i);
    if (x < 0) return;
    super.applyKvKeys(...args);
  }
}

/** Every element of `a` is in `b`. */
function isSubset(a: ReadonlySet<number>, b: ReadonlySet<number>): boolean {
  for (const k of a) if (!b.has(k)) return false;
  return true;
}

/** A TCP port nobody listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        resolve(typeof address === 'object' && address !== null ? address.port : 0),
      );
    });
  });
}

describe('KvEventSubscriber over real sockets', () => {
  it('follows stored and removed blocks to the engine’s ground truth', async () => {
    const e = await engine();
    const target = new RecordingTarget();
    const s = await subscribe(e, target);
    await joined(e, s);
    const a = e.stored(range(64, 1));
    await e.send([a.event]);
    const b = e.stored(range(32, 500), a.hashes[3]);
    await e.send([b.event, e.removed([a.hashes[0]!])]);
    await caughtUp(e, s);
    expect(target.keys(URL)).toEqual(e.truth());
    expect(target.keys(URL).size).toBe(5);
    expect(s.stats().gaps).toBe(0);
  });

  it('without a replay socket, a gap clears the worker and the stream is followed from there', async () => {
    const e = await engine();
    const target = new RecordingTarget();
    const s = await subscribe(e, target);
    await joined(e, s);
    const a = e.stored(range(32, 1));
    await e.send([a.event]);
    e.lose([e.removed([a.hashes[1]!])]);
    const c = e.stored(range(16, 900));
    await e.send([c.event]);
    await caughtUp(e, s);
    expect(s.stats().gaps).toBe(1);
    // Cleared, then only what came after the gap: a subset of the truth, never more.
    expect(target.keys(URL)).toEqual(new Set(e.held.get(c.hashes[0]!)!.keys));
  });

  it('with a replay socket, a gap is filled from the engine’s buffer', async () => {
    const e = await engine({ replay: true });
    const target = new RecordingTarget();
    const s = await subscribe(e, target);
    await joined(e, s);
    const before = s.stats();
    const a = e.stored(range(48, 1));
    await e.send([a.event]);
    e.lose([e.removed([a.hashes[2]!])]);
    const b = e.stored(range(16, 700), a.hashes[1]);
    e.lose([b.event]);
    const c = e.stored(range(16, 900));
    await e.send([c.event]);
    await caughtUp(e, s);
    expect(s.stats()).toMatchObject({ gaps: 1, replays: before.replays + 1, clears: 0 });
    expect(target.keys(URL)).toEqual(e.truth());
  });

  it('an engine restarted on the same ports: the lost connection clears, then the new truth', async () => {
    const first = await FakeEngine.start({ replay: true });
    const target = new RecordingTarget();
    const s = await subscribe(first, target);
    await joined(first, s);
    const old = first.stored(range(64, 1));
    await first.send([old.event]);
    // Enough batches that the new process's first ones read as going backwards.
    for (let i = 0; i < 200; i++) await first.send([]);
    await caughtUp(first, s);
    expect(target.keys(URL).size).toBe(4);
    await first.close();
    await until(() => s.stats().state === 'disconnected');

    // The old process's blocks are gone with its connection.
    expect(target.keys(URL).size).toBe(0);
    const second = await engine({ replay: true, port: first.port, replayPort: first.replayPort! });
    await joined(second, s);
    const fresh = second.stored(range(32, 2_000));
    await second.send([fresh.event]);
    await caughtUp(second, s);
    expect(s.stats()).toMatchObject({ disconnects: 1, state: 'connected' });
    expect(s.stats().clears).toBeGreaterThanOrEqual(1);
    expect(target.keys(URL)).toEqual(second.truth());
    expect(target.keys(URL).size).toBe(2);
  });

  // A new process whose seq has passed the old one's by the time the subscriber reconnects would
  // read as a gap that the new buffer "fills": the lost connection clears instead.
  it('an engine restarted past the old seq before the reconnect: never a block of the old process', async () => {
    const first = await FakeEngine.start({ replay: true });
    const target = new RecordingTarget();
    const s = await subscribe(first, target);
    await joined(first, s);
    const old = first.stored(range(64, 1));
    await first.send([old.event]);
    await caughtUp(first, s);
    const last = first.seq - 1n;
    await first.close();
    await until(() => s.stats().state === 'disconnected');

    const second = await engine({ replay: true, port: first.port, replayPort: first.replayPort! });
    // Published before the subscriber came back: buffered, never received live.
    const fresh = second.stored(range(32, 2_000));
    second.lose([fresh.event]);
    while (second.seq <= last + 5n) second.lose([]);
    await joined(second, s);
    const truth = second.truth();
    expect([...target.keys(URL)].filter((k) => !truth.has(k))).toEqual([]);
  });

  // After a replay, live batches up to the last replayed seq are duplicates — but not a new
  // process's, which must never read as the old one's next.
  it('an engine restarted right after a replay: a restart, never a block of the old process', async () => {
    const first = await FakeEngine.start({ replay: true });
    const target = new RecordingTarget();
    const s = await subscribe(first, target);
    await joined(first, s);
    const before = s.stats().replays; // a warm-up, when the first batches were missed
    const old = first.stored(range(64, 1));
    first.lose([old.event]);
    await first.send([]); // a gap, filled by a replay ending at this very batch
    await caughtUp(first, s);
    expect(s.stats().replays).toBe(before + 1);
    expect(target.keys(URL)).toEqual(first.truth());
    await first.close();
    await until(() => s.stats().state === 'disconnected');

    const second = await engine({ replay: true, port: first.port, replayPort: first.replayPort! });
    await joined(second, s);
    const fresh = second.stored(range(32, 2_000));
    await second.send([fresh.event]);
    await caughtUp(second, s);
    const truth = second.truth();
    expect([...target.keys(URL)].filter((k) => !truth.has(k))).toEqual([]);
    expect(s.stats().disconnects).toBe(1);
  });

  it('a publisher that binds after the subscriber opened is followed once it comes', async () => {
    const port = await freePort();
    const target = new RecordingTarget();
    const s = await subscribe(undefined, target, { endpoint: `tcp://127.0.0.1:${port}` });
    expect(s.stats().state).toBe('connecting');
    const e = await engine({ port });
    await joined(e, s);
    const a = e.stored(range(32, 1));
    await e.send([a.event]);
    await caughtUp(e, s);
    expect(s.stats().state).toBe('connected');
    expect(target.keys(URL)).toEqual(e.truth());
  });

  it('a publisher that dies leaves the subscriber disconnected, nothing thrown, close clean', async () => {
    const e = await FakeEngine.start();
    const target = new RecordingTarget();
    const s = await KvEventSubscriber.open({
      workerUrl: URL,
      endpoint: e.endpoint,
      target,
      reconnectIntervalMs: 20,
      reconnectMaxIntervalMs: 50,
    });
    await joined(e, s);
    const a = e.stored(range(32, 1));
    await e.send([a.event]);
    await caughtUp(e, s);
    await e.close();
    await until(() => s.stats().state === 'disconnected');
    // The engine may be gone, its cache with it: cleared, never stale.
    expect(target.keys(URL).size).toBe(0);
    expect(s.stats().disconnects).toBe(1);
    await s.close();
    await s.close();
    expect(s.stats().state).toBe('closed');
  });

  it('a gap the engine’s buffer no longer holds: cleared, a subset of the truth, a failure counted', async () => {
    const e = await engine({ replay: true, bufferSteps: 2 });
    const target = new RecordingTarget();
    const s = await subscribe(e, target);
    await joined(e, s);
    const before = s.stats();
    const a = e.stored(range(64, 1));
    await e.send([a.event]);
    e.lose([e.removed([a.hashes[0]!])]);
    const b = e.stored(range(32, 300));
    e.lose([b.event]);
    // A child of a block stored before the gap: its parent is unknown after the clear.
    const child = e.stored(range(16, 700), a.hashes[3]);
    e.lose([child.event]);
    const c = e.stored(range(16, 900));
    await e.send([c.event]);
    await caughtUp(e, s);
    const after = s.stats();
    expect(after.gaps).toBe(before.gaps + 1);
    expect(after.replayFailures).toBe(before.replayFailures + 1);
    expect(after.clears).toBe(before.clears + 1);
    const view = target.keys(URL);
    expect(isSubset(view, e.truth())).toBe(true);
    // a's blocks (before the gap) are gone with the clear; c's arrived after it.
    for (const k of e.held.get(a.hashes[1]!)!.keys) expect(view.has(k)).toBe(false);
    for (const k of e.held.get(c.hashes[0]!)!.keys) expect(view.has(k)).toBe(true);
    expect(after.translator.orphans).toBeGreaterThanOrEqual(1);
  });

  // A replay whose start the buffer no longer held is a failure, not a replay that filled a gap.
  it('a replay that could not fill the gap is not counted as one that did', async () => {
    const e = await engine({ replay: true, bufferSteps: 1 });
    const target = new RecordingTarget();
    const s = await subscribe(e, target);
    await joined(e, s);
    const before = s.stats();
    e.lose([]);
    e.lose([]);
    await e.send([]);
    await caughtUp(e, s);
    expect(s.stats()).toMatchObject({
      replayFailures: before.replayFailures + 1,
      replays: before.replays,
    });
  });

  // A target that throws must not end the receive loop (nor reject it unhandled).
  it('a target that throws once does not stop the subscriber', async () => {
    const e = await engine();
    let calls = 0;
    class Flaky extends RecordingTarget {
      override applyKvKeys(...args: Parameters<RecordingTarget['applyKvKeys']>) {
        if (calls++ === 0) throw new Error('target failed');
        super.applyKvKeys(...args);
      }
    }
    const target = new Flaky();
    const s = await subscribe(e, target);
    await joined(e, s);
    await e.send([e.stored(range(16, 1)).event]);
    const b = e.stored(range(16, 500));
    await e.send([b.event]);
    await caughtUp(e, s);
    expect(target.keys(URL)).toEqual(new Set(e.held.get(b.hashes[0]!)!.keys));
    await expect(s.close()).resolves.toBeUndefined();
  });

  it.each([
    ['a ROUTER that never answers', 'silent'],
    ['an endpoint nobody binds', 'unbound'],
  ] as const)(
    'a replay socket that fails (%s): the worker is cleared, live following goes on',
    async (_, kind) => {
      let replayEndpoint: string;
      if (kind === 'silent') {
        const router = new zeromq.Router({ linger: 0 });
        await router.bind('tcp://127.0.0.1:*');
        replayEndpoint = router.lastEndpoint!;
        let closed = false;
        const draining = (async () => {
          while (!closed) await router.receive().catch(() => undefined);
        })();
        open.push({
          close: async () => {
            closed = true;
            router.close();
            await draining;
          },
        });
      } else replayEndpoint = `tcp://127.0.0.1:${await freePort()}`;
      const e = await engine();
      const target = new RecordingTarget();
      const s = await subscribe(e, target, { replayEndpoint, replayTimeoutMs: 50 });
      await joined(e, s); // a warm-up replay may fail here already
      const before = s.stats();
      const a = e.stored(range(32, 1));
      await e.send([a.event]);
      e.lose([e.removed([a.hashes[1]!])]);
      const c = e.stored(range(16, 900));
      await e.send([c.event]);
      const d = e.stored(range(16, 1_200));
      await e.send([d.event]);
      await caughtUp(e, s);
      const after = s.stats();
      expect(after).toMatchObject({
        gaps: before.gaps + 1,
        replays: before.replays,
        replayFailures: before.replayFailures + 1,
        clears: before.clears + 1,
      });
      expect(target.keys(URL)).toEqual(
        new Set([...e.held.get(c.hashes[0]!)!.keys, ...e.held.get(d.hashes[0]!)!.keys]),
      );
    },
  );

  it('warm-up: a late subscriber gets the batches sent before it joined from the replay socket', async () => {
    const e = await engine({ replay: true });
    const a = e.stored(range(64, 1));
    await e.send([a.event]);
    const b = e.stored(range(32, 500), a.hashes[1]);
    await e.send([b.event, e.removed([a.hashes[3]!])]);
    for (let i = 0; i < 5; i++) await e.send([e.stored(range(16, 1_000 + 16 * i)).event]);

    const warm = new RecordingTarget();
    const s = await subscribe(e, warm);
    const cold = new RecordingTarget();
    const t = await subscribe(e, cold, { warmup: false });
    await until(() => {
      void e.send([]);
      return s.stats().batches > 0 && t.stats().batches > 0;
    });
    await caughtUp(e, s);
    await caughtUp(e, t);
    expect(s.stats().replays).toBe(1);
    expect(warm.keys(URL)).toEqual(e.truth());
    expect(e.truth().size).toBe(10);
    expect(t.stats().replays).toBe(0);
    expect(cold.keys(URL).size).toBe(0);
  });

  it.each([false, true])(
    'a flood of 20,000 small batches (replay %s) ends at the truth, or a subset after counted clears',
    async (replay) => {
      // A small high-water mark and a target that takes its time: the publisher drops.
      const e = await engine({ replay, bufferSteps: 30_000, hwm: 8 });
      const target = new SlowTarget();
      const s = await subscribe(e, target);
      await joined(e, s);
      const live: bigint[] = [];
      for (let i = 0; i < 20_000; i++) {
        if (i % 3 === 2) await e.send([e.removed([live.shift()!])]);
        else {
          const { event, hashes } = e.stored(range(16, 100_000 + 16 * i));
          live.push(hashes[0]!);
          await e.send([event]);
        }
      }
      // The last batches may be dropped too: probe until the subscriber holds the last seq.
      let polls = 0;
      await until(() => {
        if (s.stats().lastSeq === e.seq - 1n) return true;
        if (++polls % 20 === 0) void e.send([]);
        return false;
      }, 3_000);
      const stats = s.stats();
      const view = target.keys(URL);
      expect(stats.messages).toBeGreaterThan(0);
      if (replay) {
        expect(view).toEqual(e.truth());
        expect(stats.replayFailures).toBe(0);
        expect(stats.clears).toBe(0);
      } else if (stats.gaps === 0) expect(view).toEqual(e.truth());
      else {
        expect(stats.clears).toBeGreaterThanOrEqual(1);
        expect(isSubset(view, e.truth())).toBe(true);
      }
    },
  );

  it('garbage is counted and dropped, never thrown; a lost batch at a valid seq clears', async () => {
    const e = await engine();
    const target = new RecordingTarget();
    const s = await subscribe(e, target);
    await joined(e, s);
    const a = e.stored(range(32, 1));
    await e.send([a.event]);
    await caughtUp(e, s);
    const before = s.stats();
    const valid = e.encode([]);
    await e.raw(['', seqFrame(e.seq)]); // 2 frames
    await e.raw(['', seqFrame(e.seq), valid, valid]); // 4 frames
    await e.raw(['', new Uint8Array(7), valid]); // a 7-byte seq
    await e.raw(['', seqFrame(-5n), valid]); // a negative seq on the live socket
    await until(() => s.stats().messages === before.messages + 4);
    expect(s.stats()).toMatchObject({ malformed: before.malformed + 4, clears: before.clears });
    expect(target.keys(URL)).toEqual(e.truth());

    // At the next seq: a payload that is no msgpack, then one that decodes to nonsense.
    await e.raw(['', seqFrame(e.seq++), new Uint8Array([0xc1, 0xc1, 0xc1])]);
    await until(() => s.stats().messages === before.messages + 5);
    expect(s.stats()).toMatchObject({ malformed: before.malformed + 5, clears: before.clears + 1 });
    expect(target.keys(URL).size).toBe(0);
    await e.raw(['', seqFrame(e.seq++), encode([1.5, 'not events'])]);

    const c = e.stored(range(16, 900));
    await e.send([c.event]);
    await caughtUp(e, s);
    expect(s.stats()).toMatchObject({
      malformed: before.malformed + 6,
      clears: before.clears + 2,
      gaps: before.gaps,
    });
    expect(target.keys(URL)).toEqual(new Set(e.held.get(c.hashes[0]!)!.keys));
  });

  it('a topic filter ignores the publisher’s messages under another topic', async () => {
    const e = await engine({ topic: 'kv@a' });
    const elsewhere = new EngineModel({ topic: 'kv@b' });
    const target = new RecordingTarget();
    const s = await subscribe(e, target, { topic: 'kv@a' });
    await joined(e, s);
    const before = s.stats();
    const a = e.stored(range(32, 1));
    await e.send([a.event]);
    const b = elsewhere.stored(range(32, 5_000));
    const other = elsewhere.record([b.event]);
    await e.raw(['kv@b', seqFrame(e.seq + 10n), other.payload]);
    await e.raw(['kv@b', seqFrame(0n), other.payload]);
    const c = e.stored(range(16, 900));
    await e.send([c.event]);
    await caughtUp(e, s);
    expect(s.stats()).toMatchObject({
      messages: before.messages + 2,
      gaps: 0,
      restarts: 0,
      malformed: 0,
    });
    expect(target.keys(URL)).toEqual(e.truth());
  });

  it('data-parallel ranks: each subscriber follows port + rank; a batch naming another rank is dropped', async () => {
    let ranks: FakeEngine[] = [];
    for (let attempt = 0; ranks.length < 2 && attempt < 20; attempt++) {
      const port = await freePort();
      const zero = await FakeEngine.start({ port, dpRank: 0 });
      try {
        ranks = [zero, await FakeEngine.start({ port: port + 1, dpRank: 1 })];
      } catch {
        await zero.close();
      }
    }
    const [e0, e1] = ranks as [FakeEngine, FakeEngine];
    open.push(e0, e1);
    const target = new RecordingTarget();
    const url1 = 'http://127.0.0.1:8001';
    const s0 = await subscribe(e0, target, { dpRank: 0 });
    const s1 = await subscribe(e0, target, { dpRank: 1, workerUrl: url1 });
    expect(s1.endpoint).toBe(e1.endpoint);
    await joined(e0, s0);
    await joined(e1, s1);
    await e0.send([e0.stored(range(32, 1)).event]);
    await e1.send([e1.stored(range(48, 1_000)).event]);
    // Rank 1's batch on rank 0's socket, at rank 0's next seq.
    const foreign = new EngineModel({ dpRank: 1 });
    const stray = foreign.stored(range(32, 7_000));
    await e0.raw(['', seqFrame(e0.seq++), foreign.encode([stray.event])]);
    await e0.send([e0.stored(range(16, 3_000)).event]);
    await caughtUp(e0, s0);
    await caughtUp(e1, s1);
    expect(s0.stats()).toMatchObject({ malformed: 1, gaps: 0, clears: 0 });
    expect(s1.stats()).toMatchObject({ malformed: 0, gaps: 0 });
    expect(target.keys(URL)).toEqual(e0.truth());
    expect(target.keys(url1)).toEqual(e1.truth());
  });

  it.each([
    ['map events, unsigned hashes', { mapEvents: true, negativeHashes: false }],
    ['positional events, unsigned hashes', { mapEvents: false, negativeHashes: false }],
    ['map events, signed negative hashes', { mapEvents: true, negativeHashes: true }],
    ['positional events, signed negative hashes', { mapEvents: false, negativeHashes: true }],
  ] as const)('%s: stored chains and removals reach the truth', async (_, layout) => {
    const e = await engine(layout);
    const target = new RecordingTarget();
    const s = await subscribe(e, target);
    await joined(e, s);
    const a = e.stored(range(64, 1));
    await e.send([a.event]);
    const b = e.stored(range(32, 500), a.hashes[2]);
    await e.send([b.event, e.removed([a.hashes[3]!, b.hashes[1]!])]);
    const c = e.stored(range(16, 900), b.hashes[0]);
    await e.send([c.event]);
    await caughtUp(e, s);
    if (layout.negativeHashes) expect(e.hashes().every((h) => h < 0n)).toBe(true);
    expect(target.keys(URL)).toEqual(e.truth());
    expect(target.keys(URL).size).toBe(5);
    expect(s.stats().translator).toMatchObject({ orphans: 0, unknownRemoved: 0, removedBlocks: 2 });
  });

  it('close leaves no socket or timer behind, is idempotent, and resolves during a pending replay', async () => {
    const typesBefore = process.getActiveResourcesInfo().sort();
    const sockets: { readonly closed: boolean }[] = [];
    const tracked: Zmq = {
      Subscriber: class extends zeromq.Subscriber {
        constructor(options?: ConstructorParameters<typeof zeromq.Subscriber>[0]) {
          super(options);
          sockets.push(this);
        }
      },
      Dealer: class extends zeromq.Dealer {
        constructor(options?: ConstructorParameters<typeof zeromq.Dealer>[0]) {
          super(options);
          sockets.push(this);
        }
      },
    };
    const silent = new zeromq.Router({ linger: 0 });
    await silent.bind('tcp://127.0.0.1:*');
    const e = await FakeEngine.start();
    const target = new RecordingTarget();
    const s = await KvEventSubscriber.openWith(
      {
        workerUrl: URL,
        endpoint: e.endpoint,
        replayEndpoint: silent.lastEndpoint!,
        target,
        reconnectIntervalMs: 20,
        replayTimeoutMs: 600_000,
        warmup: false,
      },
      tracked,
      await loadMsgpackDecode(),
    );
    await joined(e, s);
    e.lose([]);
    await e.send([]);
    await until(() => s.stats().gaps === 1);
    expect(sockets).toHaveLength(2); // the SUB and the replay DEALER, its request unanswered
    const closing = s.close();
    await closing;
    await s.close();
    expect(s.stats()).toMatchObject({ state: 'closed', replays: 0 });
    expect(sockets.every((socket) => socket.closed)).toBe(true);
    silent.close();
    await e.close();
    await new Promise((resolve) => setImmediate(resolve));
    // Nothing left behind: no kind of resource is held more often than before the test (one
    // held before, a timer of the runner's, may have ended meanwhile).
    const after = process.getActiveResourcesInfo();
    for (const type of new Set(after)) {
      const count = (list: readonly string[]) => list.filter((t) => t === type).length;
      expect(count(after), type).toBeLessThanOrEqual(count(typesBefore));
    }
  }, 30_000);

  it('a cache_aware policy as target routes a prompt to the worker whose engine stored it', async () => {
    const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
    const a = await registry.register({ url: 'http://kv-a:8000', models: ['m'] });
    const b = await registry.register({ url: 'http://kv-b:8000', models: ['m'] });
    const workers = registry.getByModel('m');
    expect(workers.map((w) => w.url)).toEqual([a.url, b.url]);
    const policy = createPolicy('cache_aware');
    const e = await engine();
    // Events for B: with nothing known, the tie goes to A.
    const s = await subscribe(e, policy, { workerUrl: b.url, model: 'm' });
    await joined(e, s);
    const prompt = range(64, 40_000);
    const stored = e.stored(prompt);
    await e.send([stored.event]);
    await caughtUp(e, s);
    expect(policy.select(workers, { model: 'm', tokens: prompt })?.url).toBe(b.url);
    expect(policy.stats().reasons.event_overlap).toBe(1);
    await e.send([e.removed(stored.hashes.slice(0, 1))]);
    await caughtUp(e, s);
    // The prefix's first block is gone: no overlap on B any more.
    expect(policy.stats().eventModels).toEqual(['m']);
    await registry.close?.();
  });
});

describe('KvEventSubscriber logger', () => {
  it('logs a gap it cannot fill, a dropped message and a lost publisher, with the worker and endpoint', async () => {
    const e = await FakeEngine.start();
    const lines: { fields: Record<string, unknown>; message: string; level: string }[] = [];
    const at =
      (level: string) =>
      (fields: Record<string, unknown>, message: string): void =>
        void lines.push({ fields, message, level });
    const logger = { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') };
    const target = new RecordingTarget();
    const events: KvSubscriberEvent[] = [];
    const s = await KvEventSubscriber.open({
      workerUrl: URL,
      endpoint: e.endpoint,
      target,
      logger,
      onEvent: (event) => void events.push(event),
      reconnectIntervalMs: 20,
    });
    try {
      await until(() => {
        void e.send([]);
        return s.stats().batches > 0;
      });
      e.lose([]);
      await e.send([]);
      await e.raw(['kv', 'short', 'x']);
      await until(() => s.stats().malformed > 0 && s.stats().gaps > 0);
      await e.close();
      await until(() => s.stats().state === 'disconnected');
      const codes = lines.map((l) => l.fields.code);
      expect(codes).toEqual([
        'FLEETROUTE_KV_GAP',
        'FLEETROUTE_KV_DROPPED',
        'FLEETROUTE_KV_DISCONNECTED',
      ]);
      for (const l of lines) {
        expect(l.level).toBe('warn');
        expect(l.fields).toMatchObject({ workerUrl: URL, endpoint: e.endpoint });
      }
      // The same story as events (the connection's coming is reported on its own schedule).
      const types = events.map((x) => x.type);
      expect(types).toContain('connected');
      expect(types.filter((t) => t !== 'connected')).toEqual(['gap', 'dropped', 'disconnected']);
      expect(events[1]).toMatchObject({ workerUrl: URL, endpoint: e.endpoint, filled: false });
    } finally {
      await s.close();
    }
  });
});

describe('page sizes that must agree', () => {
  it('a subscriber whose pageSize differs from its cache_aware target is refused before it opens', async () => {
    const target = createPolicy('cache_aware', { pageSize: 16 });
    const opening = KvEventSubscriber.open({
      workerUrl: 'http://127.0.0.1:8001',
      endpoint: 'tcp://127.0.0.1:1',
      target,
      pageSize: 32,
    });
    await expect(opening).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining("differs from the target's pageSize 16"),
    });
  });
});
