/**
 * HTTP headers as requests carry them (a `Headers` object or a plain record), and
 * case-insensitive reads over both.
 *
 * @module
 */

/** HTTP headers as a `Headers` object or a plain record (case-insensitive either way). @public */
export type RequestHeaders =
  | Headers
  | Readonly<Record<string, string | readonly string[] | undefined>>;

/**
 * The first non-empty value of header `name` (given in lower case), or `undefined`. Arrays give
 * their first non-empty element; anything that is not a string is ignored. O(1) for `Headers` and
 * for a record whose key is already lower case; otherwise one scan of the record's keys.
 *
 * @internal
 */
export function readHeader(headers: RequestHeaders | undefined, name: string): string | undefined {
  if (headers === undefined || headers === null || typeof headers !== 'object') return undefined;
  if (typeof (headers as Headers).get === 'function' && headers instanceof Headers) {
    const value = headers.get(name);
    return value === null || value === '' ? undefined : value;
  }
  const record = headers as Readonly<Record<string, unknown>>;
  let value = Object.hasOwn(record, name) ? record[name] : undefined;
  if (value === undefined) {
    for (const key in record) {
      if (Object.hasOwn(record, key) && key.length === name.length && key.toLowerCase() === name) {
        value = record[key];
        break;
      }
    }
  }
  return firstNonEmpty(value);
}

function firstNonEmpty(value: unknown): string | undefined {
  if (typeof value === 'string') return value === '' ? undefined : value;
  if (Array.isArray(value)) {
    for (const item of value) if (typeof item === 'string' && item !== '') return item;
  }
  return undefined;
}
