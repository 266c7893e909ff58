/**
 * Reading the OpenAI-format model list (`GET /v1/models`) that vLLM, SGLang and
 * `trtllm-serve` serve.
 *
 * @module
 * @internal
 */

/**
 * @internal The ids of an OpenAI-format model list, `{ "data": [{ "id": "…" }, …] }`, in order
 * and without repeats. vLLM lists LoRA adapters as models of their own; they are kept.
 *
 * @returns the ids, or a string saying what is wrong with the shape.
 */
export function readModelIds(body: unknown): string[] | string {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return 'the body is not a JSON object';
  const data = (body as { data?: unknown }).data;
  if (!Array.isArray(data)) return "the body has no 'data' array";
  const ids: string[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < data.length; i++) {
    const entry: unknown = data[i];
    const id =
      typeof entry === 'object' && entry !== null ? (entry as { id?: unknown }).id : undefined;
    if (typeof id !== 'string' || id.length === 0) return `data[${i}].id is not a non-empty string`;
    if (seen.has(id)) continue;
    seen.add(id);
    ids.push(id);
  }
  return ids;
}
