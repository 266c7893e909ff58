/**
 * `readKvEventFrames`: splits one ZMQ message of a vLLM or SGLang KV-event publisher into its
 * topic, sequence number and payload.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import { describe as describeValue } from '../core/options.js';
import { type KvDecodeLimits, resolveKvDecodeLimits } from './batch-decoder.js';

/**
 * One ZMQ message of an engine's KV-event publisher: 3 frames.
 *
 * @public
 */
export interface KvEventMessage {
  /** The publisher's topic (vLLM and SGLang `KVEventsConfig.topic`; empty by default). */
  readonly topic: string;
  /**
   * The batch's sequence number: counts from 0 per publisher process (so it restarts with the
   * engine); {@link KV_EVENT_END_SEQ} (−1) marks the end of a replay.
   */
  readonly seq: bigint;
  /** The msgpack batch; see `decodeKvEventBatch`. The third frame itself, not a copy. */
  readonly payload: Uint8Array;
}

/**
 * The sequence number a publisher's replay socket sends, with an empty payload, after the last
 * replayed batch.
 *
 * @public
 */
export const KV_EVENT_END_SEQ = -1n;

const SEQ_BYTES = 8;
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Splits the frames of one message: `[topic, seq, payload]`, where `seq` is 8 bytes, big-endian,
 * read as a signed integer (so the replay end marker reads as −1).
 *
 * Cost: O(topic length) to decode the topic; the payload is neither copied nor read.
 *
 * @param frames - the message's frames, as a ZMQ socket receives them.
 * @param limits - `maxPayloadBytes` bounds the payload frame; see {@link KvDecodeLimits}.
 * @returns the topic, the sequence number and the payload frame.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` when `frames` is not an array of exactly 3
 *   `Uint8Array`s, the sequence frame is not 8 bytes, the topic is not valid UTF-8, the payload
 *   is over `maxPayloadBytes`, or a limit is invalid.
 *
 * @example
 * ```ts
 * for await (const frames of subscriber) {
 *   const { topic, seq, payload } = readKvEventFrames(frames);
 * }
 * ```
 * @public
 */
export function readKvEventFrames(
  frames: readonly Uint8Array[],
  limits?: Partial<KvDecodeLimits>,
): KvEventMessage {
  const { maxPayloadBytes } = resolveKvDecodeLimits(limits);
  if (!Array.isArray(frames) || frames.length !== 3) {
    const got = Array.isArray(frames) ? `${frames.length} frames` : describeValue(frames);
    throw invalidArgument(`a kv event message must have 3 frames, got ${got}`);
  }
  const topicBytes = asBytes('topic', frames[0]);
  const seqBytes = asBytes('seq', frames[1]);
  const body = asBytes('payload', frames[2]);
  if (seqBytes.byteLength !== SEQ_BYTES) {
    throw invalidArgument(
      `kv event seq frame must have ${SEQ_BYTES} bytes, got ${seqBytes.byteLength}`,
    );
  }
  if (body.byteLength > maxPayloadBytes) {
    throw invalidArgument(
      `kv event payload has ${body.byteLength} bytes, over maxPayloadBytes (${maxPayloadBytes})`,
    );
  }
  let topic: string;
  try {
    topic = utf8.decode(topicBytes);
  } catch {
    throw invalidArgument('kv event topic frame is not valid UTF-8');
  }
  const seq = new DataView(seqBytes.buffer, seqBytes.byteOffset, SEQ_BYTES).getBigInt64(0, false);
  return { topic, seq, payload: body };
}

function asBytes(name: string, frame: unknown): Uint8Array {
  if (frame instanceof Uint8Array) return frame;
  throw invalidArgument(`kv event ${name} frame must be a Uint8Array, got ${describeValue(frame)}`);
}
