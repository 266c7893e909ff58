/**
 * `fleetroute/kv-events`: the engines' own KV-cache events, read the way vLLM and SGLang publish
 * them — ZMQ frames, msgpack batches — and translated into the block keys of `cache_aware`'s
 * event mode (`policy.applyKvEvents`). `@msgpack/msgpack` is an optional peer dependency, loaded
 * by {@link loadMsgpackDecode} when first asked for.
 *
 * @packageDocumentation
 */

export type {
  EngineEvent,
  EngineEventBatch,
  KvDecodeLimits,
} from './batch-decoder.js';
export { decodeKvEventBatch } from './batch-decoder.js';
export type { KvEventFeedOptions, KvEventSource } from './feed.js';
export { defaultKvEventSource, KV_EVENTS_DEFAULT_PORT, KvEventFeed } from './feed.js';
export type { KvEventMessage } from './frames.js';
export { KV_EVENT_END_SEQ, readKvEventFrames } from './frames.js';
export type { MsgpackDecode } from './msgpack.js';
export { loadMsgpackDecode } from './msgpack.js';
export { KvEventSubscriber } from './subscriber.js';
export type {
  KvEventSubscriberState,
  KvEventSubscriberStats,
  KvEventTarget,
  KvSubscriberEvent,
} from './subscriber-events.js';
export type { KvEventSubscriberOptions, KvPerWorkerOption } from './subscriber-options.js';
export { kvEventEndpointOfRank } from './subscriber-options.js';
export type { KvEventTranslatorOptions, KvEventTranslatorStats } from './translator.js';
export { KvEventTranslator } from './translator.js';
