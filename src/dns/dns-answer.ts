/**
 * One DNS lookup of a discovery's name: the queries (A and AAAA, or SRV and then each target's A
 * and AAAA), what of the answer is kept (addresses checked, counts bounded, order stable), and how
 * the outcome is classed: addresses found, an empty answer, or a failed lookup.
 *
 * @module
 * @internal
 */
import { isIPv4, isIPv6 } from 'node:net';
import { parseWorkerUrl } from '../workers/worker-url.js';

/** @internal An address with its TTL in seconds, as `dns.promises.Resolver` answers `{ ttl: true }`. */
export interface TtlAddress {
  readonly address: string;
  readonly ttl: number;
}

/** @internal An SRV record, as `dns.promises.Resolver#resolveSrv` answers. */
export interface SrvRecord {
  readonly name: string;
  readonly port: number;
  readonly priority: number;
  readonly weight: number;
}

/** @internal What a lookup needs of `dns.promises.Resolver` (a test may stand in for it). */
export interface DnsResolverLike {
  resolve4(name: string, options: { ttl: true }): Promise<TtlAddress[]>;
  resolve6(name: string, options: { ttl: true }): Promise<TtlAddress[]>;
  resolveSrv(name: string): Promise<SrvRecord[]>;
  cancel(): void;
}

/** @internal What one lookup found. */
export type DnsAnswer =
  | {
      readonly kind: 'found';
      /** Normalised worker URLs, sorted, at most `maxWorkers`. */
      readonly urls: readonly string[];
      /** Addresses (or SRV targets) left out past `maxWorkers`. */
      readonly ignored: number;
      /** The smallest TTL of the addresses kept (ms), when the answer gave one. */
      readonly ttlMs: number | undefined;
    }
  | { readonly kind: 'empty'; readonly code: string }
  | { readonly kind: 'failed'; readonly code: string; readonly message: string };

/** @internal What a lookup asks for. */
export interface LookupPlan {
  readonly name: string;
  readonly record: 'a' | 'aaaa' | 'a+aaaa' | 'srv';
  readonly port: number | undefined;
  readonly scheme: string;
  readonly maxWorkers: number;
}

/** SRV targets looked up at once. */
const TARGET_CONCURRENCY = 8;
/** Most records read from one answer before anything else is done with it. */
const MAX_RECORDS = 65_536;
/** A TTL past a day is read as a day. */
const MAX_TTL_S = 86_400;

/** Error codes that mean the name has no such records (NXDOMAIN, NODATA), not a failure. */
const NO_RECORDS: ReadonlySet<string> = new Set(['ENOTFOUND', 'ENODATA']);

class LookupFailed extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/**
 * @internal Whether `name` (no trailing dot) is a DNS name: at most 253 characters, labels of 1
 * to 63 letters, digits, `-` or `_`. Linear, no regex. Never throws.
 */
export function isDnsName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false;
  let label = 0;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c === 46 /* . */) {
      if (label === 0) return false;
      label = 0;
      continue;
    }
    const ok =
      (c >= 97 && c <= 122) || (c >= 65 && c <= 90) || (c >= 48 && c <= 57) || c === 45 || c === 95;
    if (!ok || ++label > 63) return false;
  }
  return label > 0;
}

/** The URL of `address:port` (brackets around IPv6), normalised as the registry keys it. */
function urlOf(scheme: string, address: string, port: number): string {
  const host = isIPv6(address) ? `[${address}]` : address;
  return parseWorkerUrl(`${scheme}://${host}:${port}`).url;
}

/** What a lookup gathers across its queries: the smallest TTL, and why a query had no records. */
interface Gathered {
  ttl: number;
  noRecords: string | undefined;
}

/**
 * The records of one query: `[]` for NXDOMAIN / NODATA (its code noted in `gathered`); throws
 * {@link LookupFailed} for any other error.
 */
async function query<T>(ask: () => Promise<T[]>, gathered: Gathered): Promise<readonly T[]> {
  try {
    const records = await ask();
    return Array.isArray(records) ? records.slice(0, MAX_RECORDS) : [];
  } catch (error) {
    const code = String((error as { code?: unknown }).code ?? 'EUNKNOWN').slice(0, 64);
    if (NO_RECORDS.has(code)) {
      gathered.noRecords ??= code;
      return [];
    }
    throw new LookupFailed(code, String((error as Error).message ?? error).slice(0, 512));
  }
}

/** A and/or AAAA addresses of `host`, each checked; the TTLs fold into `ttl`. */
async function addressesOf(
  resolver: DnsResolverLike,
  host: string,
  families: 'a' | 'aaaa' | 'a+aaaa',
  gathered: Gathered,
): Promise<string[]> {
  if (isIPv4(host) || isIPv6(host)) return [host];
  const [v4, v6] = await Promise.all([
    families === 'aaaa' ? [] : query(() => resolver.resolve4(host, { ttl: true }), gathered),
    families === 'a' ? [] : query(() => resolver.resolve6(host, { ttl: true }), gathered),
  ]);
  const out: string[] = [];
  for (const [records, valid] of [
    [v4, isIPv4],
    [v6, isIPv6],
  ] as const) {
    for (const record of records) {
      if (typeof record?.address !== 'string' || !valid(record.address)) continue;
      out.push(record.address);
      if (typeof record.ttl === 'number' && record.ttl >= 0)
        gathered.ttl = Math.min(gathered.ttl, record.ttl, MAX_TTL_S);
    }
  }
  return out;
}

/** SRV records checked (port, target name), in priority order, duplicates dropped. */
function usableSrv(records: readonly SrvRecord[]): { target: string; port: number }[] {
  const seen = new Set<string>();
  const out: { target: string; port: number; priority: number }[] = [];
  for (const r of records) {
    const target =
      typeof r?.name === 'string' && r.name.endsWith('.') ? r.name.slice(0, -1) : r?.name;
    if (typeof target !== 'string' || !(isDnsName(target) || isIPv4(target) || isIPv6(target)))
      continue;
    if (!Number.isInteger(r.port) || r.port < 1 || r.port > 65_535) continue;
    const key = `${target.toLowerCase()} ${r.port}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const priority = Number.isInteger(r.priority) ? r.priority : 65_535;
    out.push({ target: target.toLowerCase(), port: r.port, priority });
  }
  out.sort(
    (a, b) =>
      a.priority - b.priority ||
      (a.target < b.target ? -1 : a.target > b.target ? 1 : a.port - b.port),
  );
  return out;
}

/** The addresses of every SRV target, `TARGET_CONCURRENCY` at a time, as `[address, port]` pairs. */
async function srvEndpoints(
  resolver: DnsResolverLike,
  plan: LookupPlan,
  gathered: Gathered,
  stopped: () => boolean,
): Promise<{ endpoints: [string, number][]; ignored: number }> {
  const records = usableSrv(await query(() => resolver.resolveSrv(plan.name), gathered));
  const targets = [...new Set(records.map((r) => r.target))];
  const kept = targets.slice(0, plan.maxWorkers);
  const ignoredTargets = new Set(targets.slice(plan.maxWorkers));
  const addresses = new Map<string, string[]>();
  for (let i = 0; i < kept.length; i += TARGET_CONCURRENCY) {
    if (stopped()) throw new LookupFailed('ETIMEOUT', `lookup of ${plan.name} timed out`);
    const batch = kept.slice(i, i + TARGET_CONCURRENCY);
    const found = await Promise.all(batch.map((t) => addressesOf(resolver, t, 'a+aaaa', gathered)));
    for (let j = 0; j < batch.length; j++) addresses.set(batch[j]!, found[j]!);
  }
  const endpoints: [string, number][] = [];
  let ignored = 0;
  for (const r of records) {
    if (ignoredTargets.has(r.target)) ignored++;
    for (const address of addresses.get(r.target) ?? []) endpoints.push([address, r.port]);
  }
  return { endpoints, ignored };
}

/**
 * @internal One lookup of `plan.name`, bounded by `timeoutMs`: the queries are cancelled at the
 * deadline. Never throws.
 *
 * @returns `found` with the worker URLs (sorted, so a truncated answer keeps the same ones from
 *   one lookup to the next; duplicates dropped), `empty` when the name has no usable record
 *   (NXDOMAIN, NODATA, or only records that fail the checks), `failed` otherwise (timeout,
 *   SERVFAIL, refused, unreachable server). With A and AAAA asked, either failing fails the lookup.
 */
export async function lookupWorkers(
  resolver: DnsResolverLike,
  plan: LookupPlan,
  timeoutMs: number,
): Promise<DnsAnswer> {
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  // The deadline answers by itself: a query that ignores the cancel cannot hold the lookup.
  const deadline = new Promise<DnsAnswer>((resolve) => {
    timer = setTimeout(() => {
      timedOut = true;
      resolver.cancel();
      resolve({
        kind: 'failed',
        code: 'ETIMEOUT',
        message: `lookup of ${plan.name} timed out after ${timeoutMs} ms`,
      });
    }, timeoutMs);
    timer.unref?.();
  });
  try {
    return await Promise.race([gather(resolver, plan, () => timedOut), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The lookup itself, unbounded in time; never throws. */
async function gather(
  resolver: DnsResolverLike,
  plan: LookupPlan,
  timedOut: () => boolean,
): Promise<DnsAnswer> {
  const gathered: Gathered = { ttl: Number.POSITIVE_INFINITY, noRecords: undefined };
  try {
    let endpoints: [string, number][];
    let ignored = 0;
    if (plan.record === 'srv') {
      ({ endpoints, ignored } = await srvEndpoints(resolver, plan, gathered, timedOut));
    } else {
      const port = plan.port as number;
      const addresses = await addressesOf(resolver, plan.name, plan.record, gathered);
      endpoints = addresses.map((a) => [a, port]);
    }
    const urls = [...new Set(endpoints.map(([a, p]) => urlOf(plan.scheme, a, p)))].sort();
    if (urls.length === 0) return { kind: 'empty', code: gathered.noRecords ?? 'ENODATA' };
    const kept = urls.length > plan.maxWorkers ? urls.slice(0, plan.maxWorkers) : urls;
    return {
      kind: 'found',
      urls: kept,
      ignored: ignored + urls.length - kept.length,
      ttlMs: Number.isFinite(gathered.ttl) ? gathered.ttl * 1_000 : undefined,
    };
  } catch (error) {
    if (error instanceof LookupFailed)
      return { kind: 'failed', code: error.code, message: error.message };
    return { kind: 'failed', code: 'EUNKNOWN', message: String(error).slice(0, 512) };
  }
}
