/**
 * The options of a `DnsDiscovery`, declared once: their documentation, their table (name,
 * default, reader) and the one function that resolves them.
 *
 * @module
 */
import { invalidArgument } from '../core/errors.js';
import {
  custom,
  duration,
  integer,
  OptionTable,
  oneOf,
  type Resolved,
  required,
} from '../core/option-table.js';
import { fail, readString } from '../core/options.js';
import { type Clock, monotonicClock } from '../resilience/clock.js';
import {
  RUNTIME_TYPES,
  type RuntimeType,
  resolveWorkerSpec,
  WORKER_STATUSES,
  WORKER_TYPES,
  type WorkerStatus,
  type WorkerType,
} from '../workers/worker-spec.js';
import { isDnsName } from './dns-answer.js';

/** Which records a {@link DnsDiscovery} asks for. @public */
export type DnsRecordKind = 'auto' | 'a' | 'aaaa' | 'a+aaaa' | 'srv';
/** The scheme of the worker URLs a {@link DnsDiscovery} builds. @public */
export type DnsWorkerScheme = 'http' | 'https' | 'grpc' | 'grpcs';

const RECORD_KINDS: readonly DnsRecordKind[] = Object.freeze([
  'auto',
  'a',
  'aaaa',
  'a+aaaa',
  'srv',
]);
const SCHEMES: readonly DnsWorkerScheme[] = Object.freeze(['http', 'https', 'grpc', 'grpcs']);
/** Most resolver servers accepted. */
const MAX_SERVERS = 16;
/** Most addresses one answer may bring, whatever `maxWorkers` says. */
const MAX_WORKERS_CAP = 65_536;

/**
 * Options of a {@link DnsDiscovery}.
 *
 * @public
 */
export interface DnsDiscoveryOptions {
  /**
   * The DNS name followed: a Kubernetes headless Service (`vllm.llm.svc.cluster.local`), read as
   * A and AAAA records, or a name starting with `_` (`_http._tcp.vllm.llm.svc.cluster.local`),
   * read as SRV records with their ports. At most 253 characters of letters, digits, `-`, `_`
   * and `.`.
   */
  readonly name: string;
  /**
   * Which records: `'auto'` (SRV for a name starting with `_`, else A and AAAA), `'a'`,
   * `'aaaa'`, `'a+aaaa'` or `'srv'`. @defaultValue 'auto'
   */
  readonly record?: DnsRecordKind;
  /** The workers' port, for A and AAAA records (required there); SRV records carry their own. @defaultValue none */
  readonly port?: number;
  /** The scheme of the worker URLs built (`http://10.0.0.5:8000`). @defaultValue 'http' */
  readonly scheme?: DnsWorkerScheme;
  /** The engine behind every worker found (`WorkerSpec.runtime`). @defaultValue 'unspecified' */
  readonly runtime?: RuntimeType;
  /** The models every worker found serves (`WorkerSpec.models`). @defaultValue none (wildcard workers) */
  readonly models?: readonly string[];
  /** The role of every worker found (`WorkerSpec.type`). @defaultValue 'regular' */
  readonly type?: WorkerType;
  /** Labels given to every worker found (`WorkerSpec.labels`). @defaultValue none */
  readonly labels?: Readonly<Record<string, string>>;
  /**
   * The status a new worker is registered with (`WorkerSpec.status`). A router's health loop
   * promotes `pending` workers once they answer. @defaultValue the registry's `defaultStatus`
   */
  readonly status?: WorkerStatus;
  /**
   * Longest wait between two lookups (ms). The next lookup comes at the earlier of this and the
   * answer's smallest TTL, but never sooner than `minIntervalMs`. Cost: one lookup (two for A and
   * AAAA; one plus two per target for SRV) per interval. @defaultValue 10000
   */
  readonly intervalMs?: number;
  /** Shortest wait between two lookups (ms), whatever the TTLs say. @defaultValue 1000 */
  readonly minIntervalMs?: number;
  /**
   * The DNS servers asked, `'ip'` or `'ip:port'` (`['127.0.0.1:5353']`, `['[::1]:53']`), at most
   * 16. @defaultValue the system's (`/etc/resolv.conf`)
   */
  readonly servers?: readonly string[];
  /**
   * Longest one lookup may take (ms), all its queries included (the SRV targets' too); past it
   * the lookup has failed (`lookup_failed` with code `ETIMEOUT`). @defaultValue 5000
   */
  readonly timeoutMs?: number;
  /**
   * How long a worker whose address left the answer stays `draining` before it is removed (ms);
   * it is removed sooner once it has no request in flight. 0: removed at once. @defaultValue 30000
   */
  readonly drainMs?: number;
  /**
   * Most addresses taken from one answer (and most SRV targets looked up); the rest are ignored
   * and counted (`ignored` in the `updated` event). @defaultValue 1024
   */
  readonly maxWorkers?: number;
  /** Time source of the drain deadlines, in ms. @defaultValue `performance.now` */
  readonly clock?: Clock;
}

function readModels(field: string, value: unknown): readonly string[] {
  if (!Array.isArray(value)) fail(field, 'an array of model ids', value);
  checkSpec(field, { models: value });
  return Object.freeze([...(value as string[])]);
}

function readLabels(field: string, value: unknown): Readonly<Record<string, string>> {
  checkSpec(field, { labels: value });
  return Object.freeze({ ...(value as Record<string, string>) });
}

/** Runs the registry's own spec rules on one field, so a bad value fails here, not per worker. */
function checkSpec(field: string, part: Record<string, unknown>): void {
  try {
    resolveWorkerSpec({ url: 'http://127.0.0.1:1', ...part });
  } catch (error) {
    throw invalidArgument(`${field}: ${(error as Error).message}`);
  }
}

function readServers(field: string, value: unknown): readonly string[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > MAX_SERVERS)
    fail(field, `an array of 1 to ${MAX_SERVERS} server addresses`, value);
  return Object.freeze(value.map((server, i) => readString(`${field}[${i}]`, server, 64)));
}

/** @internal The options of a {@link DnsDiscovery}, declared once. */
export const DNS_DISCOVERY_OPTIONS = new OptionTable('dnsDiscovery', 'DnsDiscoveryOptions', {
  name: required('a DNS name of at most 253 characters', (field, value) => {
    const name = readString(field, value, 254);
    if (!isDnsName(name.endsWith('.') ? name.slice(0, -1) : name))
      fail(field, 'a DNS name of at most 253 characters', value);
    return name;
  }),
  record: oneOf(RECORD_KINDS, 'auto'),
  port: custom<number | undefined>(
    undefined,
    (field, value) => {
      if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65_535)
        fail(field, 'an integer between 1 and 65535', value);
      return value;
    },
    'none',
  ),
  scheme: oneOf(SCHEMES, 'http'),
  runtime: oneOf(RUNTIME_TYPES, 'unspecified'),
  models: custom<readonly string[] | undefined>(undefined, readModels, 'none'),
  type: oneOf(WORKER_TYPES, 'regular'),
  labels: custom<Readonly<Record<string, string>> | undefined>(undefined, readLabels, 'none'),
  status: custom<WorkerStatus | undefined>(
    undefined,
    (field, value) => {
      if (!(WORKER_STATUSES as readonly unknown[]).includes(value))
        fail(field, `one of ${WORKER_STATUSES.map((s) => `'${s}'`).join(', ')}`, value);
      return value as WorkerStatus;
    },
    "the registry's `defaultStatus`",
  ),
  intervalMs: duration(10_000),
  minIntervalMs: duration(1_000),
  servers: custom<readonly string[] | undefined>(undefined, readServers, "the system's"),
  timeoutMs: duration(5_000),
  drainMs: duration(30_000, 0),
  maxWorkers: integer(1_024, 1, MAX_WORKERS_CAP),
  clock: custom<Clock | undefined>(
    undefined,
    (field, value) => {
      if (typeof value !== 'function') fail(field, 'a function', value);
      return value as Clock;
    },
    '`performance.now`',
  ),
});

/** @internal A discovery's options, resolved: the record kind decided, the clock filled in. */
export type ResolvedDnsDiscoveryOptions = Omit<
  Resolved<typeof DNS_DISCOVERY_OPTIONS.specs>,
  'record' | 'clock'
> & {
  readonly record: Exclude<DnsRecordKind, 'auto'>;
  readonly clock: Clock;
  /** The name without a trailing dot. */
  readonly name: string;
};

/**
 * @internal Validates a discovery's options and resolves them: every default filled, `'auto'`
 * decided from the name, unknown keys refused.
 * @throws {@link FleetRouteError} `INVALID_ARGUMENT` naming the first bad option.
 */
export function resolveDnsDiscoveryOptions(input: unknown): ResolvedDnsDiscoveryOptions {
  const field = DNS_DISCOVERY_OPTIONS.component;
  if (input === undefined) fail(field, 'an options object', input);
  const o = DNS_DISCOVERY_OPTIONS.read(input);
  const name = o.name.endsWith('.') ? o.name.slice(0, -1) : o.name;
  const record = o.record === 'auto' ? (name.startsWith('_') ? 'srv' : 'a+aaaa') : o.record;
  if (record !== 'srv' && o.port === undefined)
    fail(`${field}.port`, `an integer between 1 and 65535 for ${record} records`, o.port);
  if (o.minIntervalMs > o.intervalMs)
    throw invalidArgument(
      `${field}.minIntervalMs (${o.minIntervalMs}) must not exceed ${field}.intervalMs (${o.intervalMs})`,
    );
  return Object.freeze({ ...o, name, record, clock: o.clock ?? monotonicClock });
}
