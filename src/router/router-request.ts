/**
 * How the router reads the request its callers hand it.
 *
 * @module
 * @internal
 */
import { fail } from '../core/options.js';
import type { SelectRequest } from '../policies/policy.js';

/** @internal `request` as a request object: `undefined` and `null` route like `{}`. */
export function readRequest(request: unknown): SelectRequest {
  if (request === undefined || request === null) return EMPTY_REQUEST;
  if (typeof request !== 'object') fail('request', 'an object', request);
  return request as SelectRequest;
}

const EMPTY_REQUEST: SelectRequest = Object.freeze({});
