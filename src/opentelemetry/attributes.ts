/**
 * Attribute values of spans and metric points: the worker's address, a response's status, and
 * `error.type` — each from registry data or a fixed set.
 *
 * @module
 * @internal
 */
import { ERROR_MESSAGES, FleetRouteError } from '../core/errors.js';
import type { Worker } from '../workers/worker.js';

/** @internal A worker's `server.address` and `server.port`. */
export interface ServerAddress {
  readonly address: string;
  readonly port: number;
}

const DEFAULT_PORTS: Readonly<Record<string, number>> = { 'http:': 80, 'https:': 443 };

/** Parsed once per worker object (a replaced worker is a new object). */
const servers = new WeakMap<Worker, ServerAddress | null>();

/**
 * @internal The host and port of `worker.baseUrl` (an IPv6 address without its brackets; the
 * scheme's port when the URL names none); `undefined` when it has neither.
 * Cost: one URL parse per worker, then a WeakMap lookup.
 */
export function serverOf(worker: Worker): ServerAddress | undefined {
  let server = servers.get(worker);
  if (server === undefined) {
    server = parseServer(worker.baseUrl);
    servers.set(worker, server);
  }
  return server ?? undefined;
}

function parseServer(baseUrl: string): ServerAddress | null {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    return null;
  }
  const address = url.hostname.replace(/^\[(.*)\]$/, '$1');
  const port = url.port === '' ? DEFAULT_PORTS[url.protocol] : Number(url.port);
  return address === '' || port === undefined ? null : { address, port };
}

/** @internal A response's numeric `status`, if it has one (the router reads it the same way). */
export function statusOf(value: unknown): number | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const status = (value as { status?: unknown }).status;
  return typeof status === 'number' && Number.isFinite(status) ? status : undefined;
}

/**
 * @internal The `error.type` of a thrown value: a {@link FleetRouteError}'s code (`NO_WORKER`,
 * `CLOSED`…), else the error's `name` (`AbortError`, `TimeoutError`, `TypeError`, a class of the
 * caller's), else `_OTHER`.
 */
export function errorType(error: unknown): string {
  if (error instanceof FleetRouteError) return error.code;
  if (typeof error === 'object' && error !== null) {
    const name = (error as { name?: unknown }).name;
    if (typeof name === 'string' && name.length > 0 && name.length <= 64) return name;
  }
  return '_OTHER';
}

/** @internal The `error.type` of a failure status: the status as a string. */
export function statusErrorType(status: number): string {
  return String(status);
}

const ERROR_NAMES: ReadonlySet<string> = new Set([
  'AbortError',
  'TimeoutError',
  'Error',
  'TypeError',
  'RangeError',
  'SyntaxError',
]);

/**
 * @internal An `error.type` fit for a metric attribute: the value itself when it belongs to a
 * fixed set (fleetroute's codes, the standard error names, a status from 100 to 599), else
 * `_OTHER`, so a caller's error classes cannot grow the series.
 */
export function boundedErrorType(type: string): string {
  if (Object.hasOwn(ERROR_MESSAGES, type) || ERROR_NAMES.has(type)) return type;
  return /^[1-5]\d\d$/.test(type) ? type : '_OTHER';
}
