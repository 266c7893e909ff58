/**
 * One KV-event message cannot exhaust a router's memory: a payload is walked, within bounds and
 * without recursion, before anything is built from it, and refused when it nests too deep, when
 * it declares more than it holds, when its batch lists more than `maxEvents` events, or when the
 * values it holds would take far more memory than its own bytes. The hostile payloads run in a
 * child process with a 128 MB heap, which an unbounded decode of any of them kills or nearly
 * kills.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { decode, encode } from '@msgpack/msgpack';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { FleetRouteError } from '../../src/core/errors.js';
import { decodeKvEventBatch, KV_DECODE_LIMITS } from '../../src/kv-events/batch-decoder.js';
import { scanKvPayload } from '../../src/kv-events/payload-scan.js';
import { runs } from '../helpers/fc-settings.js';
import { throwsCode } from '../support/fixtures.js';
import {
  HOSTILE_PAYLOADS,
  type HostilePayload,
  millionEvents,
} from './support/hostile-payloads.js';

const msgpack = (bytes: Uint8Array): unknown => decode(bytes, { useBigInt64: true });
const root = fileURLToPath(new URL('../..', import.meta.url));
const script = fileURLToPath(new URL('./fixtures/hostile-child.ts', import.meta.url));

/** Runs the child script with a 128 MB heap; its exit code, signal and last JSON line. */
function child(
  mode: 'decode' | 'subscriber',
  name: HostilePayload,
): Promise<{ code: number | null; signal: string | null; result: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const args = ['--max-old-space-size=128', '--import', 'tsx', script, mode, name];
    const p = spawn(process.execPath, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d: Buffer) => {
      stdout += d;
    });
    p.stderr.on('data', (d: Buffer) => {
      stderr += d;
    });
    const timer = setTimeout(() => p.kill('SIGKILL'), 90_000);
    p.on('error', reject);
    p.on('close', (code, signal) => {
      clearTimeout(timer);
      const last = stdout.trim().split('\n').at(-1) ?? '';
      let result: Record<string, unknown> = { stderr: stderr.slice(-400) };
      try {
        result = JSON.parse(last) as Record<string, unknown>;
      } catch {
        // no JSON: the child died (out of memory) before printing
      }
      resolve({ code, signal, result });
    });
  });
}

describe('a hostile payload, in a process with a 128 MB heap', () => {
  it.each(Object.keys(HOSTILE_PAYLOADS) as HostilePayload[])(
    '%s: decodeKvEventBatch refuses it, and the process lives',
    async (name) => {
      const { code, signal, result } = await child('decode', name);
      expect({ code, signal }, JSON.stringify(result)).toEqual({ code: 0, signal: null });
      expect(result).toMatchObject({ code: 'INVALID_ARGUMENT' });
      // Refused before it was built: the heap holds nothing of it (the payload's bytes live
      // outside the heap). A decode refused after building leaves 100 MB and more behind.
      expect(result.heapMb).toBeLessThan(48);
    },
  );

  it('over a real socket, a subscriber drops nested arrays at a valid seq as a lost batch, and goes on', async () => {
    const { code, signal, result } = await child('subscriber', 'nested declared-large arrays');
    expect({ code, signal }, JSON.stringify(result)).toEqual({ code: 0, signal: null });
    // Counted malformed, the worker cleared; the next batch applied, the view equal to the engine.
    expect(result).toMatchObject({ malformed: 1, clears: 1, heldTruth: true });
  });
});

describe('refused before anything is built', () => {
  it('a million-event batch over maxEvents: decode is never called', () => {
    const payload = millionEvents(1_000_000);
    let decoded = false;
    const spy = (bytes: Uint8Array) => {
      decoded = true;
      return msgpack(bytes);
    };
    const error = throwsCode(() => decodeKvEventBatch(payload, spy), 'INVALID_ARGUMENT');
    expect(error.message).toContain('1000000 events, over maxEvents (65536)');
    expect(decoded).toBe(false);
  });

  it('a batch within maxEvents, and its map layout, still decode', () => {
    const events = Array.from({ length: 1_000 }, () => ['AllBlocksCleared']);
    expect(decodeKvEventBatch(encode([1.5, events]), msgpack).events).toHaveLength(1_000);
    const map = encode({ ts: 1.5, events, data_parallel_rank: 0 });
    expect(decodeKvEventBatch(map, msgpack, { maxEvents: 1_000 }).events).toHaveLength(1_000);
    throwsCode(() => decodeKvEventBatch(map, msgpack, { maxEvents: 999 }), 'INVALID_ARGUMENT');
  });

  it('each hostile payload is refused by the walk alone', () => {
    const limits = KV_DECODE_LIMITS.read(undefined);
    for (const [name, build] of Object.entries(HOSTILE_PAYLOADS)) {
      expect(scanKvPayload(build(), limits.maxEvents), name).not.toBeUndefined();
    }
  });

  it('a decoder that throws on bytes the walk accepts: INVALID_ARGUMENT with its error as the cause', () => {
    // A `__proto__` key is well-formed msgpack that `@msgpack/msgpack` refuses.
    const proto = new Uint8Array([0x81, 0xa9, ...new TextEncoder().encode('__proto__'), 0x01]);
    expect(scanKvPayload(proto, 10)).toBeUndefined();
    const error = throwsCode(() => decodeKvEventBatch(proto, msgpack), 'INVALID_ARGUMENT');
    expect(error.cause).toBeInstanceOf(Error);
  });
});

// ---------------------------------------------------------------------------------------------
// Properties: bytes built from msgpack's own headers (containers declaring any count up to
// 2^32 − 1, strings and byte strings declaring any length, scalars of every width, reserved
// bytes), so the walk meets every shape of truncation, nesting and excess.
// ---------------------------------------------------------------------------------------------

const u32 = fc.oneof(fc.nat({ max: 20 }), fc.nat({ max: 0xffff_ffff }));
const be = (n: number, width: number) =>
  Array.from({ length: width }, (_, i) => Math.floor(n / 256 ** (width - 1 - i)) % 256);
const header: fc.Arbitrary<number[]> = fc.oneof(
  fc.nat({ max: 15 }).map((n) => [0x90 | n]), // fixarray
  fc.nat({ max: 15 }).map((n) => [0x80 | n]), // fixmap
  u32.map((n) => [0xdc, ...be(n % 65_536, 2)]),
  u32.map((n) => [0xdd, ...be(n, 4)]),
  u32.map((n) => [0xde, ...be(n % 65_536, 2)]),
  u32.map((n) => [0xdf, ...be(n, 4)]),
  fc.nat({ max: 31 }).map((n) => [0xa0 | n]), // fixstr, its bytes to follow (or not)
  fc.constantFrom(0xd9, 0xc4, 0xc7).chain((h) => fc.nat({ max: 255 }).map((n) => [h, n])),
  fc.constantFrom(0xda, 0xc5, 0xc8).chain((h) => u32.map((n) => [h, ...be(n % 65_536, 2)])),
  fc.constantFrom(0xdb, 0xc6, 0xc9).chain((h) => u32.map((n) => [h, ...be(n, 4)])),
  fc.constantFrom(0xd4, 0xd5, 0xd6, 0xd7, 0xd8).map((h) => [h]), // fixext
  fc.constantFrom(0xca, 0xcb, 0xcc, 0xcd, 0xce, 0xcf, 0xd0, 0xd1, 0xd2, 0xd3).map((h) => [h]),
  fc.constantFrom(0xc0, 0xc2, 0xc3, 0xc1, 0x00, 0x7f, 0xe0, 0xff).map((h) => [h]),
  fc.uint8Array({ maxLength: 8 }).map((b) => [...b]), // raw bytes
);
/** Header soup, sometimes after a valid batch prefix (`[ts, [` …) so it lands among events. */
const soup = fc
  .tuple(fc.boolean(), fc.array(header, { maxLength: 40 }))
  .map(([prefixed, parts]) => {
    const prefix = prefixed ? [0x92, 0xcb, 0x41, 0xda, 0x4e, 0x5a, 0xd9, 0x00, 0x00, 0x00] : [];
    return new Uint8Array([...prefix, ...parts.flat()]);
  });

/** Anything but an INVALID_ARGUMENT FleetRouteError fails the property. */
function expectOnlyInvalidArgument(run: () => unknown): void {
  try {
    run();
  } catch (error) {
    expect(FleetRouteError.is(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
  }
}

describe('properties', () => {
  it('any bytes made of msgpack headers return a batch or throw INVALID_ARGUMENT, nothing else', () => {
    fc.assert(
      fc.property(soup, (bytes) => {
        expectOnlyInvalidArgument(() => decodeKvEventBatch(bytes, msgpack));
      }),
      runs(2_000, 20_000),
    );
  });

  it('the walk refuses as malformed exactly what the decoder cannot read whole', () => {
    // Either the decoder reads the bytes, or it throws: a truncated value, trailing bytes, a
    // reserved byte. The walk agrees on the framing; it may refuse more, over its bounds, and the
    // decoder may refuse a key the walk lets through (`__proto__`, a key that is not a string).
    fc.assert(
      fc.property(soup, (bytes) => {
        const refusal = scanKvPayload(bytes, Number.MAX_SAFE_INTEGER);
        let decoderError: unknown;
        try {
          msgpack(bytes);
        } catch (error) {
          decoderError = error;
        }
        if (refusal?.malformed === true) expect(decoderError).toBeDefined();
        if (refusal === undefined && decoderError !== undefined)
          expect(String(decoderError)).toMatch(/key|__proto__|timestamp|Unrecognized ext/i);
      }),
      runs(2_000, 20_000),
    );
  });

  it('any encoded value within the bounds is accepted by the walk', () => {
    fc.assert(
      fc.property(fc.anything({ withBigInt: true, withTypedArray: true, maxDepth: 6 }), (v) => {
        let bytes: Uint8Array;
        try {
          bytes = encode(v, { useBigInt64: true });
        } catch {
          return; // a value msgpack cannot write
        }
        expect(scanKvPayload(bytes, Number.MAX_SAFE_INTEGER)).toBeUndefined();
      }),
      runs(500, 5_000),
    );
  });
});
