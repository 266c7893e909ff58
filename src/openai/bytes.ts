/**
 * Bytes and paths as the OpenAI front handles them: joining chunks, reading a body to a bound,
 * the path of a request URL.
 *
 * @module
 * @internal
 */

/** @internal `parts` in one array (the part itself when there is one). */
export function joinBytes(parts: readonly Uint8Array[]): Uint8Array {
  if (parts.length === 1) return parts[0]!;
  let size = 0;
  for (const part of parts) size += part.length;
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/**
 * @internal Reads `body` to at most `limit` bytes; the rest is cancelled, so its connection is
 * freed. `'refuse'`: `undefined` when the body is longer; `'cut'`: its first `limit` bytes.
 */
export async function readBounded(
  body: ReadableStream<Uint8Array> | null,
  limit: number,
  over: 'refuse' | 'cut',
): Promise<Uint8Array | undefined> {
  if (body === null) return new Uint8Array(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return joinBytes(chunks);
      if (size + value.length > limit) {
        if (over === 'refuse') return undefined;
        chunks.push(value.subarray(0, limit - size));
        return joinBytes(chunks);
      }
      chunks.push(value);
      size += value.length;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/**
 * @internal The path of a request URL — absolute (`http://host/v1/models?x`) or as a server reads
 * it (`/v1/models?x`) — without its query or fragment.
 */
export function pathOf(url: string | undefined): string {
  if (url === undefined || url === '') return '/';
  const scheme = url.indexOf('://');
  const start = scheme < 0 ? 0 : url.indexOf('/', scheme + 3);
  if (start < 0) return '/';
  let end = url.length;
  for (const mark of ['?', '#']) {
    const at = url.indexOf(mark, start);
    if (at >= 0 && at < end) end = at;
  }
  return url.slice(start, end);
}
