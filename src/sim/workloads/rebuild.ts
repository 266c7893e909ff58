/**
 * `rebuildWorkload`: a workload built again from its recipe, in another thread.
 *
 * @module
 * @internal
 */
import type { Workload, WorkloadRecipe } from '../workload.js';
import { type AgentConversationsOptions, agentConversations } from './agent-conversations.js';
import { type HotPrefixOptions, singleHotPrefix } from './hot-prefix.js';
import { type LoraAdaptersOptions, loraAdapters } from './lora-adapters.js';
import {
  type MooncakeTraceOptions,
  parseMooncakeTrace,
  readMooncakeTrace,
} from './mooncake-trace.js';
import { type MultiTurnChatOptions, multiTurnChat } from './multi-turn-chat.js';
import { generatedSharedPrefix, type SharedPrefixOptions } from './shared-prefix.js';
import { type ZeroReuseOptions, zeroReuse } from './zero-reuse.js';

/**
 * @internal The workload `recipe` describes, built the way it was first built: equal options
 * give an identical workload. A trace read from a path is read again.
 *
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` as the generator or reader throws (a trace
 *   file that has gone or changed). Cost: that of the generator or reader.
 */
export async function rebuildWorkload(recipe: WorkloadRecipe): Promise<Workload> {
  switch (recipe.generator) {
    case 'shared-prefix':
      return generatedSharedPrefix(recipe.options as SharedPrefixOptions);
    case 'chat':
      return multiTurnChat(recipe.options as MultiTurnChatOptions);
    case 'hot-prefix':
      return singleHotPrefix(recipe.options as HotPrefixOptions);
    case 'zero-reuse':
      return zeroReuse(recipe.options as ZeroReuseOptions);
    case 'lora':
      return loraAdapters(recipe.options as LoraAdaptersOptions);
    case 'agent':
      return agentConversations(recipe.options as AgentConversationsOptions);
    case 'mooncake': {
      const options = recipe.options as MooncakeTraceOptions;
      return 'text' in recipe.source
        ? parseMooncakeTrace(recipe.source.text, options)
        : readMooncakeTrace(recipe.source.path, options);
    }
  }
}
