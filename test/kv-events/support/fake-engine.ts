/**
 * A stand-in for a vLLM / SGLang engine's KV-event publisher over real ZMQ sockets on
 * 127.0.0.1: a PUB socket sending `[topic, seq (8 bytes, big-endian), msgpack batch]`, and, when
 * asked for, a ROUTER replay socket answering `[id, '', start seq]` with every buffered
 * `[id, '', seq, payload]` from there, then the end marker (seq −1, empty payload) — the engines'
 * layout. It keeps the ground truth: the blocks it holds, as fleetroute's index keys.
 */
import { encode } from '@msgpack/msgpack';
import { Publisher, Router } from 'zeromq';
import { blockHashHalves, blockKey } from '../../../src/cache/block-hashes.js';
import { loadHasher } from '../../../src/core/hash.js';

export interface FakeEngineOptions {
  /** Serve a replay socket. */
  readonly replay?: boolean;
  /** Batches kept for replay (vLLM's `buffer_steps`). */
  readonly bufferSteps?: number;
  readonly topic?: string;
  /** Engine block size (tokens per engine block). */
  readonly blockSize?: number;
  /** fleetroute page size the ground truth is computed with. */
  readonly pageSize?: number;
  /** Events as `type`-tagged maps (vLLM since mid-2026) instead of positional arrays. */
  readonly mapEvents?: boolean;
  /** `data_parallel_rank` written into each batch. */
  readonly dpRank?: number;
  /** Bind these ports instead of ephemeral ones (a restart on the same endpoint). */
  readonly port?: number;
  readonly replayPort?: number;
  /**
   * Block hashes as signed int64 values below zero (SGLang's `hash_str_to_int64` of a SHA-256)
   * instead of vLLM's unsigned low 64 bits.
   */
  readonly negativeHashes?: boolean;
  /** The PUB socket's send high-water mark: messages past it are dropped (vLLM's `hwm`). */
  readonly hwm?: number;
}

interface Held {
  readonly parent: bigint | undefined;
  readonly tokens: readonly number[];
  /** fleetroute keys of this engine block (blockSize / pageSize of them). */
  readonly keys: readonly number[];
  /** Last key's halves: the chain seed of a child. */
  readonly hi: number;
  readonly lo: number;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * An engine's KV cache and event stream without sockets: the blocks it holds (the ground truth),
 * its sequence counter and its replay buffer. {@link FakeEngine} serves it over real sockets,
 * `memory-zmq.ts` over in-memory ones. Call `loadHasher()` before `stored`.
 */
export class EngineModel {
  readonly options: Required<
    Omit<FakeEngineOptions, 'dpRank' | 'port' | 'replayPort' | 'bufferSteps' | 'hwm'>
  > & { readonly dpRank: number | undefined };
  /** Batches kept for replay (vLLM's `buffer_steps`); a smaller value applies from the next batch. */
  bufferSteps: number;
  seq = 0n;
  /** (seq, payload) kept for replay, oldest first. */
  readonly buffer: { seq: bigint; payload: Uint8Array }[] = [];
  /** Engine hash → block, what the engine holds. */
  readonly held = new Map<bigint, Held>();
  #nextHash: bigint;

  constructor(options: FakeEngineOptions = {}) {
    this.options = {
      replay: options.replay ?? false,
      topic: options.topic ?? '',
      blockSize: options.blockSize ?? 16,
      pageSize: options.pageSize ?? 16,
      mapEvents: options.mapEvents ?? true,
      negativeHashes: options.negativeHashes ?? false,
      dpRank: options.dpRank,
    };
    this.bufferSteps = options.bufferSteps ?? 10_000;
    this.#nextHash = this.options.negativeHashes ? -(1n << 62n) : 1n << 60n;
  }

  /** A new engine process: seq from 0, an empty cache, an empty replay buffer (hashes stay new). */
  restart(): void {
    this.seq = 0n;
    this.buffer.length = 0;
    this.held.clear();
  }

  /** The fleetroute index keys of every block the engine holds: the ground truth. */
  truth(): Set<number> {
    const out = new Set<number>();
    for (const block of this.held.values()) for (const k of block.keys) out.add(k);
    return out;
  }

  /** Engine hashes of the blocks held, oldest first. */
  hashes(): bigint[] {
    return [...this.held.keys()];
  }

  /**
   * Stores `floor(tokens.length / blockSize)` engine blocks of `tokens` under `parent` (an engine
   * hash held, or undefined for a prompt's start). @returns the event (send it with
   * {@link FakeEngine.send}) and the new blocks' engine hashes.
   */
  stored(tokens: readonly number[], parent?: bigint): { event: unknown; hashes: bigint[] } {
    const bs = this.options.blockSize;
    const count = Math.floor(tokens.length / bs);
    const hashes: bigint[] = [];
    let seedHi = 0;
    let seedLo = 0;
    if (parent !== undefined) {
      const p = this.held.get(parent);
      if (p === undefined) throw new Error('parent not held');
      seedHi = p.hi;
      seedLo = p.lo;
    }
    const page = this.options.pageSize;
    const perBlock = bs / page;
    const total = count * perBlock;
    const hi = new Uint32Array(total);
    const lo = new Uint32Array(total);
    blockHashHalves(tokens, page, total, hi, lo, seedHi, seedLo);
    let prev = parent;
    for (let b = 0; b < count; b++) {
      const hash = this.#nextHash++;
      const keys: number[] = [];
      for (let j = 0; j < perBlock; j++)
        keys.push(blockKey(hi[b * perBlock + j]!, lo[b * perBlock + j]!));
      const last = b * perBlock + perBlock - 1;
      this.held.set(hash, {
        parent: prev,
        tokens: tokens.slice(b * bs, (b + 1) * bs),
        keys,
        hi: hi[last]!,
        lo: lo[last]!,
      });
      hashes.push(hash);
      prev = hash;
    }
    const tokenIds = tokens.slice(0, count * bs);
    const event = this.options.mapEvents
      ? {
          type: 'BlockStored',
          block_hashes: hashes,
          parent_block_hash: parent ?? null,
          token_ids: tokenIds,
          block_size: bs,
          lora_id: null,
          medium: 'GPU',
        }
      : ['BlockStored', hashes, parent ?? null, tokenIds, bs, null, 'GPU'];
    return { event, hashes };
  }

  removed(hashes: readonly bigint[]): unknown {
    for (const h of hashes) this.held.delete(h);
    return this.options.mapEvents
      ? { type: 'BlockRemoved', block_hashes: [...hashes], medium: 'GPU' }
      : ['BlockRemoved', [...hashes], 'GPU'];
  }

  cleared(): unknown {
    this.held.clear();
    return this.options.mapEvents ? { type: 'AllBlocksCleared' } : ['AllBlocksCleared'];
  }

  /** Encodes a batch at the next seq and buffers it for replay (not sent: a lost message). */
  lose(events: readonly unknown[]): bigint {
    return this.record(events).seq;
  }

  /** Encodes a batch at the next seq and buffers it for replay. @returns the seq and payload. */
  record(events: readonly unknown[]): { seq: bigint; payload: Uint8Array } {
    const entry = { seq: this.seq++, payload: this.encode(events) };
    this.buffer.push(entry);
    while (this.buffer.length > this.bufferSteps) this.buffer.shift();
    return entry;
  }

  encode(events: readonly unknown[]): Uint8Array {
    const batch =
      this.options.dpRank === undefined
        ? [Date.now() / 1000, events]
        : [Date.now() / 1000, events, this.options.dpRank];
    return encode(batch, { useBigInt64: true });
  }

  /** What a replay socket answers a request from `from`: the buffered batches, then the end marker. */
  replayFrom(from: bigint): { seq: bigint; payload: Uint8Array }[] {
    return [...this.buffer.filter((b) => b.seq >= from), { seq: -1n, payload: new Uint8Array(0) }];
  }
}

/** {@link EngineModel} on real sockets: a PUB and, with `replay`, a ROUTER, on 127.0.0.1. */
export class FakeEngine extends EngineModel {
  readonly pub: Publisher;
  readonly router: Router | undefined;
  endpoint = '';
  replayEndpoint: string | undefined;
  #serving: Promise<void> | undefined;
  #closed = false;

  private constructor(options: FakeEngineOptions) {
    super(options);
    this.pub = new Publisher({ linger: 0, sendHighWaterMark: options.hwm ?? 100_000 });
    // A ROUTER drops what it cannot queue: room for a whole buffer, as a replay sends it at once.
    if (this.options.replay)
      this.router = new Router({ linger: 0, sendHighWaterMark: 4 * this.bufferSteps + 1_000 });
  }

  static async start(options: FakeEngineOptions = {}): Promise<FakeEngine> {
    await loadHasher();
    const engine = new FakeEngine(options);
    await engine.pub.bind(`tcp://127.0.0.1:${options.port ?? '*'}`);
    engine.endpoint = engine.pub.lastEndpoint!;
    if (engine.router !== undefined) {
      await engine.router.bind(`tcp://127.0.0.1:${options.replayPort ?? '*'}`);
      engine.replayEndpoint = engine.router.lastEndpoint!;
      engine.#serving = engine.#serve(engine.router);
    }
    return engine;
  }

  /** The port of `endpoint`. */
  get port(): number {
    return Number(this.endpoint.slice(this.endpoint.lastIndexOf(':') + 1));
  }

  get replayPort(): number | undefined {
    const e = this.replayEndpoint;
    return e === undefined ? undefined : Number(e.slice(e.lastIndexOf(':') + 1));
  }

  /** Encodes a batch of events at the next seq, buffers it for replay, sends it. */
  async send(events: readonly unknown[]): Promise<bigint> {
    const { seq, payload } = this.record(events);
    await this.pub.send([this.options.topic, seqFrame(seq), payload]);
    return seq;
  }

  /** Sends raw frames (garbage). */
  async raw(frames: (string | Uint8Array)[]): Promise<void> {
    await this.pub.send(frames);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.pub.close();
    this.router?.close();
    await this.#serving;
  }

  async #serve(router: Router): Promise<void> {
    while (!this.#closed) {
      let frames: Buffer[];
      try {
        frames = await router.receive();
      } catch {
        if (this.#closed) return;
        await pause(5);
        continue;
      }
      // The engines accept exactly [id, '', seq] and ignore anything else.
      if (frames.length !== 3 || frames[1]!.length !== 0 || frames[2]!.length !== 8) continue;
      const id = frames[0]!;
      try {
        for (const { seq, payload } of this.replayFrom(frames[2]!.readBigInt64BE(0)))
          await router.send([id, '', seqFrame(seq), payload]);
      } catch {
        if (this.#closed) return;
      }
    }
  }
}

export function seqFrame(seq: bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigInt64BE(seq);
  return b;
}

/** Polls `check` every 10 ms until it holds, at most `tries` times. */
export async function until(check: () => boolean, tries = 500): Promise<void> {
  for (let i = 0; i < tries; i++) {
    if (check()) return;
    await pause(10);
  }
  throw new Error('condition not reached');
}

/** A target recording what the subscriber applied: the keys a worker holds. */
export class RecordingTarget {
  readonly held = new Map<string, Set<number>>();
  cleared = 0;

  applyKvEvents(url: string, events: readonly { type: string }[]): void {
    for (const e of events) {
      if (e.type === 'cleared') {
        this.held.get(url)?.clear();
        this.cleared++;
      } else throw new Error('expected the key path');
    }
  }

  applyKvKeys(url: string, type: 'stored' | 'removed', _model: unknown, keys: readonly number[]) {
    let set = this.held.get(url);
    if (set === undefined) {
      set = new Set();
      this.held.set(url, set);
    }
    for (const k of keys) {
      if (type === 'stored') set.add(k);
      else set.delete(k);
    }
  }

  keys(url: string): Set<number> {
    return this.held.get(url) ?? new Set();
  }
}
