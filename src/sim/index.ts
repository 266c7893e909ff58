/**
 * `fleetroute/sim`: a routing-quality simulator. Workload generators and a trace reader, a model
 * of a fleet of model servers with prefix caches, and `simulate` / `comparePolicies`, which drive
 * the library's own `Router` and policies through their public API and report cache hit rate,
 * time to first token, balance and routing cost.
 *
 * @packageDocumentation
 */

export type { ArrivalProcess } from './arrivals.js';
export { describeArrivals } from './arrivals.js';
export { fleetCapacity } from './capacity.js';
export { ceilingHitRate } from './ceiling.js';
export type { CompareDisaggregation, CompareOptions } from './compare.js';
export { comparePolicies, DEFAULT_POLICIES } from './compare.js';
export type {
  DisaggregationMode,
  DisaggregationRun,
  SimDisaggregation,
} from './disaggregation.js';
export type { FleetModel, FleetModelOptions } from './fleet-model.js';
export { DEFAULT_FLEET_MODEL } from './fleet-model.js';
export { SeededRandom } from './random.js';
export type { HtmlReportOptions } from './report/index.js';
export { renderHtmlReport } from './report/index.js';
export type {
  AdapterLoads,
  AdmissionRun,
  Comparison,
  Percentiles,
  PolicyRun,
  RunInfo,
} from './result.js';
export { simulate } from './simulation.js';
export type { SimulationOptions } from './simulation-options.js';
export { resolveFleetModel } from './simulation-options.js';
export { formatComparison } from './text-table.js';
export type { SimRequest, Workload } from './workload.js';
export type {
  AgentConversationsOptions,
  HotPrefixOptions,
  LoraAdaptersOptions,
  MooncakeTraceOptions,
  MultiTurnChatOptions,
  SharedPrefixOptions,
  ZeroReuseOptions,
} from './workloads/index.js';
export {
  agentConversations,
  generatedSharedPrefix,
  loraAdapters,
  multiTurnChat,
  parseMooncakeTrace,
  readMooncakeTrace,
  singleHotPrefix,
  zeroReuse,
} from './workloads/index.js';
