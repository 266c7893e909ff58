/**
 * Which headers cross the front: the client's to the worker, and the worker's back to the client.
 *
 * @module
 * @internal
 */
import { DATA_PARALLEL_RANK_HEADER } from '../workers/data-parallel.js';

/**
 * Never forwarded either way: headers of one connection (RFC 9110 §7.6.1), framing that the
 * front redoes, and the encodings `fetch` undoes.
 */
const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'host',
  'content-length',
  'content-encoding',
  'accept-encoding',
  'expect',
  'http2-settings',
]);

/**
 * Client headers that `forwardHeaders: 'all'` still keeps back: credentials meant for the front
 * (the worker gets its own key), and the header a framework sets for its own routing.
 */
const KEPT_BACK: ReadonlySet<string> = new Set([
  'authorization',
  'cookie',
  // The rank is the router's choice (set per rank worker), never the client's.
  DATA_PARALLEL_RANK_HEADER,
]);

/** Header names longer than this, or values longer than this, are not forwarded. */
const MAX_NAME = 256;
const MAX_VALUE = 16 * 1024;
/** At most this many client headers are forwarded. */
const MAX_HEADERS = 128;

/** @internal Headers for `fetch`: lower-case names, repeated headers joined with `, `. */
export type HeaderRecord = Readonly<Record<string, string>>;

/**
 * @internal The client's headers a worker gets: every one but hop-by-hop and kept-back headers
 * (`'all'`), or only those listed — never hop-by-hop ones, never more than 128, none over 16 KiB.
 * `Content-Type` is always `application/json` (the front parsed the body), never the client's.
 * Cost: one object per request, shared by its attempts.
 */
export function forwardedHeaders(
  headers: Headers | Readonly<Record<string, string | readonly string[] | undefined>>,
  allowed: 'all' | ReadonlySet<string>,
): HeaderRecord {
  const out: Record<string, string> = Object.create(null);
  let count = 0;
  const add = (rawName: string, value: string): void => {
    const name = rawName.toLowerCase();
    if (count >= MAX_HEADERS || name.length > MAX_NAME || value.length > MAX_VALUE) return;
    if (HOP_BY_HOP.has(name) || name === 'content-type') return;
    if (allowed === 'all' ? KEPT_BACK.has(name) : !allowed.has(name)) return;
    const before = out[name];
    out[name] = before === undefined ? value : `${before}, ${value}`;
    count++;
  };
  const perConnection = connectionTokens(headers);
  if (headers instanceof Headers) {
    headers.forEach((value, name) => {
      if (!perConnection.has(name)) add(name, value);
    });
  } else {
    for (const name of Object.keys(headers)) {
      const value = headers[name];
      if (value === undefined || perConnection.has(name.toLowerCase())) continue;
      if (typeof value === 'string') add(name, value);
      else if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') add(name, v);
    }
  }
  out['content-type'] = 'application/json';
  return out;
}

/** @internal A worker's response headers as the client gets them: all but hop-by-hop ones. */
export function relayedHeaders(upstream: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  upstream.forEach((value, name) => {
    if (!HOP_BY_HOP.has(name)) out[name] = value;
  });
  return out;
}

/** The header names listed in `Connection` (they belong to that connection only). */
function connectionTokens(
  headers: Headers | Readonly<Record<string, string | readonly string[] | undefined>>,
): ReadonlySet<string> {
  const raw =
    headers instanceof Headers
      ? headers.get('connection')
      : (headers.connection ?? headers.Connection);
  const text = typeof raw === 'string' ? raw : Array.isArray(raw) ? raw.join(',') : '';
  if (text === '') return EMPTY;
  return new Set(
    text
      .slice(0, 1024)
      .split(',')
      .map((token) => token.trim().toLowerCase())
      .filter((token) => token !== ''),
  );
}

const EMPTY: ReadonlySet<string> = new Set();
