/**
 * The sticky key of a request, as the affinity policies (`consistent_hashing`, `manual`) read it.
 *
 * @module
 * @internal
 */
import { readHeader } from '../../core/headers.js';
import { ROUTING_KEY_HEADER, type SelectRequest } from '../policy.js';

/** Identity headers a key may come from when nothing more explicit is given, in order. */
const IDENTITY_HEADERS = ['authorization', 'x-forwarded-for', 'cookie'] as const;

/**
 * @internal The request's explicit key: `request.routingKey`, else the routing-key header;
 * namespaced by leg (`prefill:` / `decode:`). `undefined` when there is none.
 */
export function explicitKey(request: SelectRequest | undefined): string | undefined {
  if (typeof request !== 'object' || request === null) return undefined;
  const given = request.routingKey;
  const key =
    typeof given === 'string' && given !== ''
      ? given
      : readHeader(request.headers, ROUTING_KEY_HEADER);
  return key === undefined ? undefined : namespaced(request, key);
}

/**
 * @internal The request's routing key: the explicit key, else the first non-empty identity header
 * (authorization, x-forwarded-for, cookie); namespaced by leg. `undefined` when there is none.
 */
export function routingKey(request: SelectRequest | undefined): string | undefined {
  if (typeof request !== 'object' || request === null) return undefined;
  const explicit = explicitKey(request);
  if (explicit !== undefined) return explicit;
  for (let i = 0; i < IDENTITY_HEADERS.length; i++) {
    const key = readHeader(request.headers, IDENTITY_HEADERS[i]!);
    if (key !== undefined) return namespaced(request, key);
  }
  return undefined;
}

function namespaced(request: SelectRequest, key: string): string {
  const leg = request.leg;
  return leg === 'prefill' || leg === 'decode' ? `${leg}:${key}` : key;
}
