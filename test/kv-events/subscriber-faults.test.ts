/**
 * `KvEventSubscriber` against faulty and hostile peers over real sockets on 127.0.0.1: a port
 * taken by a program that closes every connection at once, an engine that dies right after the
 * ZMTP handshake, a TCP listener that never speaks ZMTP, a replay socket that trickles stale
 * batches and never ends, a replay buffer that no longer holds the gap, and no options at all.
 */
import { createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import * as zeromq from 'zeromq';
import {
  KvEventSubscriber,
  type KvEventSubscriberOptions,
  type KvSubscriberEvent,
} from '../../src/kv-events/index.js';
import { rejectsCode } from '../support/fixtures.js';
import { FakeEngine, RecordingTarget, seqFrame, until } from './support/fake-engine.js';

const URL = 'http://127.0.0.1:8000';
const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const o of open.splice(0).reverse()) await o.close();
});

/** A TCP server on 127.0.0.1 that hands each accepted connection to `onConnection`. */
async function tcpPeer(onConnection: (socket: Socket) => void): Promise<{
  readonly endpoint: string;
  readonly connections: () => number;
}> {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    connections++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  open.push({
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return { endpoint: `tcp://127.0.0.1:${port}`, connections: () => connections };
}

/**
 * What a ZMQ PUB socket says first over ZMTP 3.0 with the NULL mechanism: its greeting, then a
 * READY command naming its socket type. A peer that sends it and closes is an engine that dies
 * right after the handshake.
 */
function zmtpPublisherHello(): Buffer {
  const greeting = Buffer.alloc(64);
  greeting[0] = 0xff;
  greeting[9] = 0x7f;
  greeting[10] = 3;
  greeting.write('NULL', 12, 'ascii');
  const name = Buffer.from('Socket-Type');
  const value = Buffer.from('PUB');
  const size = Buffer.alloc(4);
  size.writeUInt32BE(value.length);
  const body = Buffer.concat([
    Buffer.from([5]),
    Buffer.from('READY'),
    Buffer.from([name.length]),
    name,
    size,
    value,
  ]);
  return Buffer.concat([greeting, Buffer.from([0x04, body.length]), body]);
}

function recorder() {
  const events: KvSubscriberEvent[] = [];
  const lines: { code: unknown; level: string; message: string }[] = [];
  const at =
    (level: string) =>
    (fields: Readonly<Record<string, unknown>>, message: string): void =>
      void lines.push({ code: fields.code, level, message });
  return {
    events,
    lines,
    onEvent: (event: KvSubscriberEvent) => void events.push(event),
    logger: { debug: at('debug'), info: at('info'), warn: at('warn'), error: at('error') },
  };
}

async function subscribe(options: Partial<KvEventSubscriberOptions> & { endpoint: string }) {
  const s = await KvEventSubscriber.open({
    workerUrl: URL,
    target: new RecordingTarget(),
    reconnectIntervalMs: 20,
    reconnectMaxIntervalMs: 160,
    ...options,
  });
  open.push(s);
  return s;
}

describe('KvEventSubscriber against a peer that is not a publisher', () => {
  // Backoff from 20 ms doubling to 160 ms: at most 4 + (window − 300 ms) / 160 ms connections
  // in the window (about 9 in one second). Without it, thousands, each clearing the worker.
  const WINDOW_MS = 1_000;
  const MOST = 20;

  it.each([
    ['a port taken by another program: each connection closed at once', false],
    ['an engine that dies right after the ZMTP handshake', true],
  ] as const)('%s: reconnects with backoff, never in a storm', async (_, handshake) => {
    const hello = zmtpPublisherHello();
    const peer = await tcpPeer((socket) => {
      if (!handshake) socket.destroy();
      else socket.end(hello);
    });
    const seen = recorder();
    const s = await subscribe({ endpoint: peer.endpoint, onEvent: seen.onEvent });
    await until(() => peer.connections() >= 2);
    await pause(WINDOW_MS);
    const connections = peer.connections();
    const stats = s.stats();
    expect(connections).toBeLessThanOrEqual(MOST);
    expect(stats.clears).toBeLessThanOrEqual(connections);
    expect(stats.disconnects).toBeLessThanOrEqual(connections);
    if (!handshake) {
      // Nothing was ever learned from such a peer: nothing to clear, no publisher lost.
      expect(stats).toMatchObject({ clears: 0, disconnects: 0 });
      expect(stats.state).not.toBe('connected');
      expect(seen.events.map((e) => e.type)).toEqual([]);
    }
  });

  it('a TCP listener that never speaks ZMTP is not reported connected', async () => {
    const peer = await tcpPeer(() => undefined);
    const seen = recorder();
    const s = await subscribe({ endpoint: peer.endpoint, onEvent: seen.onEvent });
    await until(() => peer.connections() === 1);
    // The socket has had the time to report the TCP connection: nothing must say "connected".
    await pause(300);
    expect(s.stats().state).toBe('connecting');
    expect(seen.events.map((e) => e.type)).toEqual([]);
  });

  it('a real publisher is reported connected once its handshake is done', async () => {
    const e = await FakeEngine.start();
    open.push(e);
    const seen = recorder();
    const s = await subscribe({ endpoint: e.endpoint, onEvent: seen.onEvent });
    await until(() => s.stats().state === 'connected');
    expect(seen.events.map((x) => x.type)).toEqual(['connected']);
  });
});

/** A replay ROUTER that answers each request with `seq` again every 100 ms, and never ends. */
async function tricklingReplay(seq: bigint, payload: Uint8Array) {
  const router = new zeromq.Router({ linger: 0 });
  await router.bind('tcp://127.0.0.1:*');
  let closed = false;
  const timers: ReturnType<typeof setInterval>[] = [];
  let requests = 0;
  const serving = (async () => {
    while (!closed) {
      let frames: Buffer[];
      try {
        frames = await router.receive();
      } catch {
        return;
      }
      requests++;
      const id = frames[0]!;
      timers.push(
        setInterval(() => {
          if (!closed) void router.send([id, '', seqFrame(seq), payload]).catch(() => undefined);
        }, 100),
      );
    }
  })();
  open.push({
    close: async () => {
      closed = true;
      for (const t of timers) clearInterval(t);
      router.close();
      await serving;
    },
  });
  return { endpoint: router.lastEndpoint!, requests: () => requests };
}

describe('KvEventSubscriber replays that cannot fill a gap', () => {
  it('a replay that trickles stale batches and never ends: past its deadline, live again and the gap reported unfilled', async () => {
    const e = await FakeEngine.start();
    open.push(e);
    const replay = await tricklingReplay(0n, e.encode([]));
    const seen = recorder();
    const target = new RecordingTarget();
    const s = await subscribe({
      endpoint: e.endpoint,
      replayEndpoint: replay.endpoint,
      target,
      warmup: false,
      replayDeadlineMs: 500,
      onEvent: seen.onEvent,
      logger: seen.logger,
    });
    await until(() => {
      void e.send([]);
      return s.stats().batches > 0;
    });
    await until(() => s.stats().lastSeq === e.seq - 1n);
    const before = s.stats();
    e.lose([e.stored(range(32, 1)).event]);
    const after = e.stored(range(16, 900));
    await e.send([after.event]);
    await until(() => replay.requests() === 1);
    // Live batches keep coming while the replay trickles.
    for (let i = 0; i < 5; i++) await e.send([]);
    await until(() => s.stats().lastSeq === e.seq - 1n, 1_000);
    expect(s.stats()).toMatchObject({
      gaps: before.gaps + 1,
      replays: before.replays,
      replayFailures: before.replayFailures + 1,
      clears: before.clears + 1,
    });
    const gap = seen.events.find((x) => x.type === 'gap');
    expect(gap).toMatchObject({ type: 'gap', filled: false });
    expect(seen.lines.map((l) => l.code)).toContain('FLEETROUTE_KV_GAP');
    expect(target.keys(URL)).toEqual(new Set(e.held.get(after.hashes[0]!)!.keys));
  });

  it('a gap the engine’s buffer no longer holds is reported unfilled, with the warning', async () => {
    const e = await FakeEngine.start({ replay: true, bufferSteps: 1 });
    open.push(e);
    const seen = recorder();
    const target = new RecordingTarget();
    const s = await subscribe({
      endpoint: e.endpoint,
      replayEndpoint: e.replayEndpoint!,
      target,
      warmup: false,
      onEvent: seen.onEvent,
      logger: seen.logger,
    });
    await until(() => {
      void e.send([]);
      return s.stats().batches > 0;
    });
    await until(() => s.stats().lastSeq === e.seq - 1n);
    const before = s.stats();
    const first = e.stored(range(32, 1));
    await e.send([first.event]);
    e.lose([e.removed([first.hashes[0]!])]);
    e.lose([]);
    await e.send([]);
    await until(() => s.stats().lastSeq === e.seq - 1n);
    expect(s.stats()).toMatchObject({
      gaps: before.gaps + 1,
      replays: before.replays,
      replayFailures: before.replayFailures + 1,
      clears: before.clears + 1,
    });
    const gaps = seen.events.filter((x) => x.type === 'gap');
    expect(gaps).toHaveLength(1);
    expect(gaps[0]).toMatchObject({ filled: false, from: e.seq - 3n, to: e.seq - 2n });
    expect(seen.lines.filter((l) => l.code === 'FLEETROUTE_KV_GAP')).toHaveLength(1);
    // The block removed in the lost batch is not in the view: it was cleared.
    expect(target.keys(URL).size).toBe(0);
  });
});

describe('KvEventSubscriber.open arguments', () => {
  it('no options at all: INVALID_ARGUMENT, not a TypeError', async () => {
    const openWith = KvEventSubscriber.open as (options?: unknown) => Promise<KvEventSubscriber>;
    expect((await rejectsCode(openWith(), 'INVALID_ARGUMENT')).message).toMatch(
      /^kvEventSubscriber must be an options object/,
    );
    await rejectsCode(openWith(null), 'INVALID_ARGUMENT');
    // A required option left out is named, as any bad option is.
    expect((await rejectsCode(openWith({}), 'INVALID_ARGUMENT')).message).toMatch(
      /^kvEventSubscriber\.workerUrl must be a worker URL, got undefined/,
    );
    expect(
      (
        await rejectsCode(
          openWith({ workerUrl: URL, target: new RecordingTarget() }),
          'INVALID_ARGUMENT',
        )
      ).message,
    ).toMatch(/^kvEventSubscriber\.endpoint must be/);
  });
});
