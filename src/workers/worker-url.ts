/**
 * Worker URL validation and normalisation.
 *
 * @module
 */
import { FleetRouteError } from '../core/errors.js';
import { describe, isWellFormed } from '../core/options.js';

/** Longest URL accepted, in UTF-16 code units. @public */
export const MAX_URL_LENGTH = 2048;

/** How a worker is reached. @public */
export type ConnectionMode = 'http' | 'grpc';

/** A parsed, normalised worker URL. @public */
export interface ParsedWorkerUrl {
  /** The normalised URL including the `@rank` suffix when there is one: the worker's identity. */
  readonly url: string;
  /** The normalised URL without the `@rank` suffix: where requests are sent. */
  readonly baseUrl: string;
  /** `http` for http(s), `grpc` for grpc(s). */
  readonly connection: ConnectionMode;
  /** The data-parallel rank written as `url@rank`, if any. */
  readonly dpRank: number | undefined;
}

const SCHEMES: Readonly<Record<string, ConnectionMode>> = {
  http: 'http',
  https: 'http',
  grpc: 'grpc',
  grpcs: 'grpc',
};
const BARE_HOST_PORT = /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?|\[[0-9A-Fa-f:.]+\]):\d{1,5}$/;
const SCHEME = /^([A-Za-z][A-Za-z0-9+.-]*):\/\//;
const RANK_SUFFIX = /@(\d{1,6})$/;

function invalid(input: unknown, why: string): FleetRouteError {
  return new FleetRouteError('INVALID_URL', `invalid worker URL ${describe(input)}: ${why}`);
}

/**
 * Validates and normalises a worker URL.
 *
 * Accepted: `http(s)://host[:port][/path]`, `grpc(s)://host:port`, and a bare `host:port`
 * (read as `http://host:port`), each optionally followed by `@rank` for a data-parallel rank.
 * Normalisation lower-cases scheme and host, drops a default port (80 for http, 443 for https)
 * and a trailing slash, so `HTTP://Host:80/` and `http://host` are the same worker.
 * Rejected: other schemes, credentials, query strings, fragments, a port out of 1–65535,
 * a gRPC URL without a port or with a path, lone surrogates, more than 2,048 characters.
 *
 * Cost: O(length). Cold path (registration only).
 *
 * @throws {@link FleetRouteError} `INVALID_URL` saying what is wrong.
 * @public
 */
export function parseWorkerUrl(input: unknown): ParsedWorkerUrl {
  if (typeof input !== 'string') throw invalid(input, 'expected a string');
  if (input.length > MAX_URL_LENGTH)
    throw invalid(input, `longer than ${MAX_URL_LENGTH} characters`);
  let text = input.trim();
  if (text.length === 0) throw invalid(input, 'empty');
  if (!isWellFormed(text)) throw invalid(input, 'contains an unpaired surrogate');
  if (/\s/.test(text)) throw invalid(input, 'contains whitespace');

  let dpRank: number | undefined;
  const rank = RANK_SUFFIX.exec(text);
  if (rank !== null) {
    dpRank = Number(rank[1]);
    text = text.slice(0, rank.index);
  }

  if (!SCHEME.test(text)) {
    if (!BARE_HOST_PORT.test(text))
      throw invalid(input, 'expected scheme://host:port or host:port');
    text = `http://${text}`;
  }
  const scheme = SCHEME.exec(text)![1]!.toLowerCase();
  const connection = SCHEMES[scheme];
  if (connection === undefined)
    throw invalid(input, `unsupported scheme '${scheme}' (use http, https, grpc or grpcs)`);

  let parsed: URL;
  try {
    parsed = new URL(text);
  } catch {
    throw invalid(input, 'not a valid URL');
  }
  if (parsed.username !== '' || parsed.password !== '')
    throw invalid(input, 'credentials are not allowed in the URL (use apiKey)');
  if (parsed.search !== '' || text.includes('?'))
    throw invalid(input, 'query strings are not allowed');
  if (parsed.hash !== '' || text.includes('#')) throw invalid(input, 'fragments are not allowed');
  if (parsed.port === '0') throw invalid(input, 'port must be between 1 and 65535');

  let baseUrl: string;
  if (connection === 'grpc') {
    if (parsed.port === '') throw invalid(input, 'a gRPC URL needs a port');
    if (parsed.pathname !== '' && parsed.pathname !== '/')
      throw invalid(input, 'a gRPC URL cannot have a path');
    const host = normaliseHost(parsed.hostname, input);
    baseUrl = `${scheme}://${host}:${parsed.port}`;
  } else {
    if (parsed.hostname === '') throw invalid(input, 'missing host');
    const path = parsed.pathname.replace(/\/+$/, '');
    baseUrl = `${scheme}://${parsed.host}${path}`;
  }
  return Object.freeze({
    url: dpRank === undefined ? baseUrl : `${baseUrl}@${dpRank}`,
    baseUrl,
    connection,
    dpRank,
  });
}

/** Lower-cases and IDNA-normalises a host the way the WHATWG parser does for http. */
function normaliseHost(hostname: string, input: unknown): string {
  try {
    const host = new URL(`http://${hostname}:1`).hostname;
    if (host === '') throw new Error('empty');
    return host;
  } catch {
    throw invalid(input, 'invalid host');
  }
}

/** @internal The normalised form of `url`, or `undefined` when it is not a worker URL (lookups). */
export function normalisedUrlOrUndefined(url: string): string | undefined {
  try {
    return parseWorkerUrl(url).url;
  } catch {
    return undefined;
  }
}
