/**
 * The simulator's workloads: six generators and the Mooncake trace reader.
 *
 * @module
 */

export type { AgentConversationsOptions } from './agent-conversations.js';
export { agentConversations } from './agent-conversations.js';
export type { HotPrefixOptions } from './hot-prefix.js';
export { singleHotPrefix } from './hot-prefix.js';
export type { LoraAdaptersOptions } from './lora-adapters.js';
export { loraAdapters } from './lora-adapters.js';
export type { MooncakeTraceOptions } from './mooncake-trace.js';
export { parseMooncakeTrace, readMooncakeTrace } from './mooncake-trace.js';
export type { MultiTurnChatOptions } from './multi-turn-chat.js';
export { multiTurnChat } from './multi-turn-chat.js';
export type { SharedPrefixOptions } from './shared-prefix.js';
export { generatedSharedPrefix } from './shared-prefix.js';
export type { ZeroReuseOptions } from './zero-reuse.js';
export { zeroReuse } from './zero-reuse.js';
