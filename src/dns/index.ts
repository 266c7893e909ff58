/**
 * `fleetroute/dns`: keeps a `WorkerRegistry` in step with a DNS name — the A and AAAA records of
 * a Kubernetes headless Service, or SRV records with their ports — through Node's own resolver.
 *
 * @example
 * ```ts
 * import { WorkerRegistry } from 'fleetroute';
 * import { DnsDiscovery } from 'fleetroute/dns';
 *
 * const registry = await WorkerRegistry.create();
 * const discovery = new DnsDiscovery(registry, { name: 'vllm.llm.svc.cluster.local', port: 8000 });
 * await discovery.start();
 * ```
 * @packageDocumentation
 */
export { DnsDiscovery } from './dns-discovery.js';
export type {
  DnsDiscoveryOptions,
  DnsRecordKind,
  DnsWorkerScheme,
} from './dns-discovery-options.js';
export type {
  DnsDiscoveryEvent,
  DnsDiscoveryEventMap,
  DnsDiscoveryStats,
  DnsEmptyEvent,
  DnsLookupFailedEvent,
  DnsRefresh,
  DnsUpdatedEvent,
} from './dns-events.js';
