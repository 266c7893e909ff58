import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../src/sim/index.js';
import type { Workload } from '../../../src/sim/workload.js';
import { readWorkload } from '../../../src/sim/workload-check.js';
import { parseMooncakeTrace, readMooncakeTrace } from '../../../src/sim/workloads/index.js';
import { runs } from '../../helpers/fc-settings.js';
import { rejectsCode, throwsCode } from '../../support/fixtures.js';
import { commonPrefix, sameRequests, sameTokens } from './blocks.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/mooncake-sample.jsonl', import.meta.url));

/** One trace line in the public format. */
function record(timestamp: number, input: number, output: number, ids: readonly number[]): string {
  return JSON.stringify({
    timestamp,
    input_length: input,
    output_length: output,
    hash_ids: ids,
  });
}

/** Leading `size`-token blocks two prompts have in common, among the full blocks of both. */
function sharedFullBlocks(a: Uint32Array, b: Uint32Array, size: number): number {
  const full = Math.min(Math.floor(a.length / size), Math.floor(b.length / size));
  let j = 0;
  while (
    j < full &&
    sameTokens(a.subarray(j * size, (j + 1) * size), b.subarray(j * size, (j + 1) * size))
  )
    j++;
  return j;
}

function tokensOf(workload: Workload, id: number): Uint32Array {
  return workload.requests[id]!.tokens();
}

describe('readMooncakeTrace: the sample trace', () => {
  it('turns each record into a request in file order with its timestamp and lengths', async () => {
    const workload = await readMooncakeTrace(FIXTURE);

    expect(workload.name).toBe('mooncake');
    expect(workload.description).toBe(
      'Mooncake trace: 16 requests over 14.1 s, mean prompt 4,154 tokens (512-token blocks), mean output 139 tokens',
    );
    expect(workload.parameters).toEqual({ requests: 16, blockTokens: 512, path: FIXTURE });
    expect(workload.requests.map((r) => r.id)).toEqual(Array.from({ length: 16 }, (_, i) => i));
    expect(workload.requests.map((r) => r.timestamp)).toEqual([
      0, 1204, 2310, 3571, 4102, 5320, 6018, 6017, 7930, 8855, 9402, 10230, 11004, 12590, 13777,
      14100,
    ]);
    expect(workload.requests.map((r) => r.promptLength)).toEqual([
      6955, 6800, 512, 1000, 7400, 300, 2048, 2100, 9000, 1536, 4096, 4200, 700, 12345, 513, 6955,
    ]);
    expect(workload.requests.map((r) => r.outputLength)).toEqual([
      52, 380, 17, 1, 212, 96, 128, 64, 510, 44, 250, 12, 1, 333, 77, 52,
    ]);
    for (const request of workload.requests) {
      const tokens = request.tokens();
      expect(tokens).toHaveLength(request.promptLength);
      expect(tokens.every((t) => t < 128_000)).toBe(true);
      expect('routingKey' in request).toBe(false);
      expect('outputTokens' in request).toBe(false);
      expect('after' in request).toBe(false);
    }
    expect(Object.isFrozen(workload.requests)).toBe(true);
  });

  it('gives records whose hash_ids start alike the same leading blocks, and no more', async () => {
    const workload = await readMooncakeTrace(FIXTURE);
    const shared = (a: number, b: number) =>
      sharedFullBlocks(tokensOf(workload, a), tokensOf(workload, b), 512);

    expect(shared(0, 1)).toBe(10);
    expect(shared(1, 8)).toBe(13);
    expect(shared(0, 13)).toBe(10);
    expect(shared(6, 7)).toBe(4);
    expect(shared(10, 11)).toBe(8);
    expect(shared(2, 3)).toBe(1);
    expect(shared(0, 2)).toBe(0);
    expect(shared(9, 10)).toBe(0);
  });

  it('cuts the last block at input_length: a shorter prompt is a prefix of its extension', async () => {
    const workload = await readMooncakeTrace(FIXTURE);

    expect(commonPrefix(tokensOf(workload, 0), tokensOf(workload, 4))).toBe(6955);
    expect(commonPrefix(tokensOf(workload, 2), tokensOf(workload, 3))).toBe(512);
    expect(commonPrefix(tokensOf(workload, 2), tokensOf(workload, 12))).toBe(512);
    expect(tokensOf(workload, 14)).toHaveLength(513);
    expect(tokensOf(workload, 5)).toHaveLength(300);
  });

  it('builds an equal but new array on every tokens() call, equal for equal records', async () => {
    const workload = await readMooncakeTrace(FIXTURE);
    const request = workload.requests[0]!;

    expect(request.tokens()).not.toBe(request.tokens());
    expect(sameTokens(request.tokens(), request.tokens())).toBe(true);
    expect(sameTokens(tokensOf(workload, 0), tokensOf(workload, 15))).toBe(true);
  });

  it('parses the same text into an identical workload', async () => {
    const a = await readMooncakeTrace(FIXTURE);
    const b = await readMooncakeTrace(
      new URL('../fixtures/mooncake-sample.jsonl', import.meta.url),
    );
    expect(sameRequests(a.requests, b.requests)).toBe(true);
  });
});

describe('parseMooncakeTrace: lines and options', () => {
  it('skips blank lines, accepts CRLF, a byte-order mark and no final newline', () => {
    const text = `\uFEFF${record(5, 10, 3, [1])}\r\n\r\n   \n${record(9, 600, 0, [1, 2])}`;
    const workload = parseMooncakeTrace(text);

    expect(workload.requests.map((r) => [r.id, r.timestamp, r.promptLength])).toEqual([
      [0, 5, 10],
      [1, 9, 600],
    ]);
    expect(commonPrefix(tokensOf(workload, 0), tokensOf(workload, 1))).toBe(10);
  });

  it('accepts hash_ids longer than the prompt needs and ignores the extra ids', () => {
    const a = parseMooncakeTrace(record(0, 100, 1, [7, 8, 9]));
    const b = parseMooncakeTrace(record(0, 100, 1, [7]));
    expect(sameTokens(tokensOf(a, 0), tokensOf(b, 0))).toBe(true);
  });

  it('reads at most limit records and leaves the rest unparsed', () => {
    const text = [record(0, 5, 1, [1]), '', record(1, 5, 1, [2]), 'not json'].join('\n');
    const workload = parseMooncakeTrace(text, { limit: 2 });

    expect(workload.requests).toHaveLength(2);
    expect(workload.parameters).toEqual({ requests: 2, blockTokens: 512, limit: 2 });
  });

  it('uses blockTokens ids per block and the given name', () => {
    const text = [record(0, 40, 1, [1, 2, 3]), record(3, 48, 1, [1, 2, 4])].join('\n');
    const workload = parseMooncakeTrace(text, { blockTokens: 16, name: 'tiny' });

    expect(workload.name).toBe('tiny');
    expect(workload.description).toContain('(16-token blocks)');
    expect(sharedFullBlocks(tokensOf(workload, 0), tokensOf(workload, 1), 16)).toBe(2);
    expect(commonPrefix(tokensOf(workload, 0), tokensOf(workload, 1))).toBeLessThan(36);
  });

  it('keeps ids beyond 2³² apart', () => {
    const text = [
      record(0, 8, 1, [5]),
      record(0, 8, 1, [5 + 2 ** 32]),
      record(0, 8, 1, [2 ** 53 - 1]),
    ].join('\n');
    const workload = parseMooncakeTrace(text, { blockTokens: 8 });
    const prompts = workload.requests.map((r) => r.tokens().join(','));
    expect(new Set(prompts).size).toBe(3);
  });

  it.each([
    ['mooncake.blockTokens', { blockTokens: 0 }],
    ['mooncake.blockTokens', { blockTokens: 1.5 }],
    ['mooncake.limit', { limit: 0 }],
    ['mooncake.limit', { limit: 1_000_001 }],
    ['mooncake.name', { name: '' }],
    ['mooncake.name', { name: 7 }],
    ['mooncake.name', { name: 'n'.repeat(101) }],
    ['mooncake.blocks', { blocks: 512 }],
    ['mooncake', 'options'],
  ])('rejects a bad %s naming it', (field, options) => {
    const error = throwsCode(
      () =>
        parseMooncakeTrace(
          record(0, 5, 1, [1]),
          options as Parameters<typeof parseMooncakeTrace>[1],
        ),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(`${field} `)).toBe(true);
  });

  it('rejects a trace with no record, and text that is not a string', () => {
    expect(throwsCode(() => parseMooncakeTrace(''), 'INVALID_ARGUMENT').message).toContain(
      'at least one record',
    );
    expect(throwsCode(() => parseMooncakeTrace('\n  \n'), 'INVALID_ARGUMENT').message).toContain(
      'at least one record',
    );
    throwsCode(() => parseMooncakeTrace(42 as unknown as string), 'INVALID_ARGUMENT');
  });
});

describe('parseMooncakeTrace: malformed lines', () => {
  const good = record(0, 5, 1, [1]);
  const fields = { timestamp: 10, input_length: 600, output_length: 4, hash_ids: [1, 2] };
  const without = (key: keyof typeof fields) => {
    const copy: Record<string, unknown> = { ...fields };
    delete copy[key];
    return JSON.stringify(copy);
  };
  const withField = (key: keyof typeof fields, value: unknown) =>
    JSON.stringify({ ...fields, [key]: value });

  it.each([
    ['not JSON', '{"timestamp": 1,', 'mooncake line 3 must be valid JSON'],
    ['an array', '[1, 2]', 'mooncake line 3 must be a JSON object, got an array'],
    ['a number', '42', 'mooncake line 3 must be a JSON object, got 42'],
    ['null', 'null', 'mooncake line 3 must be a JSON object, got null'],
    ['a string', '"hello"', 'mooncake line 3 must be a JSON object'],
    ['a missing timestamp', without('timestamp'), 'mooncake line 3: timestamp is missing'],
    ['a negative timestamp', withField('timestamp', -1), 'mooncake line 3: timestamp must be'],
    [
      'an infinite timestamp',
      '{"timestamp": 1e400, "input_length": 600, "output_length": 4, "hash_ids": [1, 2]}',
      'mooncake line 3: timestamp must be',
    ],
    ['a string timestamp', withField('timestamp', '10'), 'mooncake line 3: timestamp must be'],
    ['a null timestamp', withField('timestamp', null), 'mooncake line 3: timestamp must be'],
    ['a missing input_length', without('input_length'), 'mooncake line 3: input_length is missing'],
    [
      'a negative input_length',
      withField('input_length', -600),
      'mooncake line 3: input_length must be',
    ],
    ['a zero input_length', withField('input_length', 0), 'mooncake line 3: input_length must be'],
    [
      'a fractional input_length',
      withField('input_length', 600.5),
      'mooncake line 3: input_length must be',
    ],
    [
      'a huge input_length',
      withField('input_length', 1_000_001),
      'mooncake line 3: input_length must be',
    ],
    [
      'a missing output_length',
      without('output_length'),
      'mooncake line 3: output_length is missing',
    ],
    [
      'a negative output_length',
      withField('output_length', -1),
      'mooncake line 3: output_length must be',
    ],
    [
      'a fractional output_length',
      withField('output_length', 0.5),
      'mooncake line 3: output_length must be',
    ],
    ['missing hash_ids', without('hash_ids'), 'mooncake line 3: hash_ids is missing'],
    [
      'hash_ids not an array',
      withField('hash_ids', '1,2'),
      'mooncake line 3: hash_ids must be an array',
    ],
    [
      'hash_ids an object',
      withField('hash_ids', { 0: 1 }),
      'mooncake line 3: hash_ids must be an array',
    ],
    ['a negative hash id', withField('hash_ids', [1, -2]), 'mooncake line 3: hash_ids[1] must be'],
    [
      'a fractional hash id',
      withField('hash_ids', [1.5, 2]),
      'mooncake line 3: hash_ids[0] must be',
    ],
    ['a string hash id', withField('hash_ids', [1, '2']), 'mooncake line 3: hash_ids[1] must be'],
    [
      'an unsafe hash id',
      withField('hash_ids', [1, 2 ** 53]),
      'mooncake line 3: hash_ids[1] must be',
    ],
    [
      'too few hash_ids',
      withField('hash_ids', [1]),
      'mooncake line 3: hash_ids must have at least 2 ids',
    ],
    [
      'no hash_ids',
      withField('hash_ids', []),
      'mooncake line 3: hash_ids must have at least 2 ids',
    ],
  ])('rejects %s naming the line and the field', (_, line, message) => {
    const error = throwsCode(
      () => parseMooncakeTrace(`${good}\n\n${line}\n${good}\n`),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(message)).toBe(true);
  });

  it('keeps the message short when the bad line is huge', () => {
    const hugeIds = `{"timestamp": 1, "input_length": 5, "output_length": 1, "hash_ids": [${'1,'.repeat(500_000)}`;
    const hugeString = JSON.stringify('x'.repeat(1_000_000));
    const hugeObjectField = withField('timestamp', 'y'.repeat(1_000_000));
    for (const line of [hugeIds, hugeString, hugeObjectField]) {
      const error = throwsCode(() => parseMooncakeTrace(line), 'INVALID_ARGUMENT');
      expect(error.message.startsWith('mooncake line 1')).toBe(true);
      expect(error.message.length).toBeLessThan(200);
    }
  });
});

describe('readMooncakeTrace: failures', () => {
  it('rejects a file it cannot read, with the cause', async () => {
    const error = await rejectsCode(
      readMooncakeTrace('/nonexistent/trace.jsonl'),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toContain('cannot read');
    expect((error.cause as NodeJS.ErrnoException).code).toBe('ENOENT');
  });

  it('checks the options before reading the file', async () => {
    const error = await rejectsCode(
      readMooncakeTrace('/nonexistent/trace.jsonl', { blockTokens: -1 }),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith('mooncake.blockTokens ')).toBe(true);
  });
});

describe('parseMooncakeTrace: shared prefixes (property)', () => {
  const id = fc.oneof(fc.nat(40), fc.maxSafeNat());
  const ids = (min: number, max: number) => fc.array(id, { minLength: min, maxLength: max });

  it('two records share exactly as many leading full 512-token blocks as leading equal hash_ids', () => {
    fc.assert(
      fc.property(
        ids(0, 5),
        ids(0, 4),
        ids(0, 4),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (common, tailA, tailB, fractionA, fractionB) => {
          const idsA = [...common, ...tailA];
          const idsB = [...common, ...tailB];
          fc.pre(idsA.length > 0 && idsB.length > 0);
          const lengthA = Math.max(1, Math.ceil(fractionA * idsA.length * 512));
          const lengthB = Math.max(1, Math.ceil(fractionB * idsB.length * 512));
          const workload = parseMooncakeTrace(
            `${record(0, lengthA, 1, idsA)}\n${record(1, lengthB, 1, idsB)}`,
          );
          const a = tokensOf(workload, 0);
          const b = tokensOf(workload, 1);
          let equalIds = 0;
          while (equalIds < Math.min(idsA.length, idsB.length) && idsA[equalIds] === idsB[equalIds])
            equalIds++;
          const fullA = Math.floor(lengthA / 512);
          const fullB = Math.floor(lengthB / 512);

          expect(sharedFullBlocks(a, b, 512)).toBe(Math.min(equalIds, fullA, fullB));
          expect(commonPrefix(a, b)).toBeGreaterThanOrEqual(
            Math.min(equalIds * 512, lengthA, lengthB),
          );
          if (equalIds * 512 + 4 <= Math.min(lengthA, lengthB)) {
            expect(commonPrefix(a, b)).toBeLessThan(equalIds * 512 + 4);
          }
        },
      ),
      runs(100, 1000),
    );
  });
});

describe('parseMooncakeTrace: richer rows', () => {
  const row = (fields: Record<string, unknown>) =>
    JSON.stringify({ input_length: 600, output_length: 4, hash_ids: [1, 2], ...fields });

  it('accepts a fractional timestamp (ms)', () => {
    const workload = parseMooncakeTrace(
      `${row({ timestamp: 12.25 })}\n${row({ timestamp: 40.5 })}`,
    );
    expect(workload.requests.map((r) => r.timestamp)).toEqual([12.25, 40.5]);
  });

  it('reads input_tokens and output_tokens as aliases, alone or agreeing', () => {
    const alias = JSON.stringify({
      timestamp: 0,
      input_tokens: 700,
      output_tokens: 9,
      hash_ids: [1, 2],
    });
    const both = row({ timestamp: 1, input_tokens: 600, output_tokens: 4 });
    const workload = parseMooncakeTrace(`${alias}\n${both}`);
    expect(workload.requests.map((r) => [r.promptLength, r.outputLength])).toEqual([
      [700, 9],
      [600, 4],
    ]);
    expect(workload.requests[0]!.tokens()).toHaveLength(700);
  });

  it('chains the rows of a session: after = the previous row of the session, delayMs = delay', () => {
    const text = [
      row({ session_id: 'a', timestamp: 100 }),
      row({ session_id: 7, timestamp: 150 }),
      row({ session_id: 'a', delay: 2500.5 }),
      row({ timestamp: 160 }),
      row({ session_id: '7', delay: 0 }),
      row({ session_id: 'a', timestamp: 5000 }),
    ].join('\n');
    const requests = parseMooncakeTrace(text).requests;
    expect(requests.map((r) => r.after)).toEqual([undefined, undefined, 0, undefined, 1, 2]);
    expect(requests.map((r) => r.delayMs)).toEqual([
      undefined,
      undefined,
      2500.5,
      undefined,
      0,
      undefined,
    ]);
    expect(requests.map((r) => r.timestamp)).toEqual([100, 150, undefined, 160, undefined, 5000]);
    // No routing key unless asked for; with routingKey: 'session', the session id as a string.
    expect(requests.every((r) => r.routingKey === undefined)).toBe(true);
    const keyed = parseMooncakeTrace(text, { routingKey: 'session' }).requests;
    expect(keyed.map((r) => r.routingKey)).toEqual(['a', '7', 'a', undefined, '7', 'a']);
  });

  it('replays a session turn after turn: each delayed row waits for the previous one plus its delay', async () => {
    const text = [
      row({ session_id: 's', timestamp: 5000 }),
      row({ session_id: 's', delay: 3000 }),
      row({ session_id: 't', timestamp: 5010 }),
    ].join('\n');
    const workload = parseMooncakeTrace(text, { routingKey: 'session' });
    const run = await simulate({
      workload,
      policy: 'round_robin',
      fleet: { workers: 1 },
      arrivals: { kind: 'trace' },
      loadPollIntervalMs: 0,
      precision: false,
    });
    expect(run.completed).toBe(3);
    // Rows without a timestamp leave the rebasing to the others: the first arrival is at 0.
    expect(run.timestampOffsetMs).toBe(5000);
    // The second turn cannot start before 3 s of think time: the run lasts longer than that.
    expect(run.makespanMs).toBeGreaterThan(3000);
    const fast = await simulate({
      workload,
      policy: 'round_robin',
      fleet: { workers: 1 },
      arrivals: { kind: 'trace', speedup: 10 },
      loadPollIntervalMs: 0,
      precision: false,
    });
    expect(fast.makespanMs).toBeLessThan(run.makespanMs);
    expect(fast.makespanMs).toBeGreaterThan(300);
  });

  it.each([
    [
      'input_length and input_tokens that disagree',
      row({ timestamp: 0, input_tokens: 601 }),
      'mooncake line 1: input_length (600) and input_tokens (601) disagree',
    ],
    [
      'output_length and output_tokens that disagree',
      row({ timestamp: 0, output_tokens: 5 }),
      'mooncake line 1: output_length (4) and output_tokens (5) disagree',
    ],
    [
      'a bad alias alone',
      JSON.stringify({ timestamp: 0, input_tokens: -3, output_length: 1, hash_ids: [1] }),
      'mooncake line 1: input_tokens must be',
    ],
    [
      'an empty session id',
      row({ timestamp: 0, session_id: '' }),
      'mooncake line 1: session_id must be',
    ],
    [
      'a session id too long',
      row({ timestamp: 0, session_id: 'x'.repeat(257) }),
      'mooncake line 1: session_id must be a string of 1 to 256 characters',
    ],
    [
      'a fractional session id',
      row({ timestamp: 0, session_id: 1.5 }),
      'mooncake line 1: session_id must be',
    ],
    [
      'an object session id',
      row({ timestamp: 0, session_id: {} }),
      'mooncake line 1: session_id must be',
    ],
    [
      'a negative delay',
      `${row({ session_id: 'a', timestamp: 0 })}\n${row({ session_id: 'a', delay: -1 })}`,
      'mooncake line 2: delay must be',
    ],
    [
      'a string delay',
      `${row({ session_id: 'a', timestamp: 0 })}\n${row({ session_id: 'a', delay: '5' })}`,
      'mooncake line 2: delay must be',
    ],
    [
      'a delay without a session',
      row({ timestamp: 0, delay: 10 }),
      'mooncake line 1: delay needs a session_id',
    ],
    [
      'a delay on the first row of a session',
      row({ session_id: 'a', delay: 10 }),
      'mooncake line 1: delay needs an earlier record of session',
    ],
    [
      'a first row of a session without timestamp',
      row({ session_id: 'a' }),
      'mooncake line 1: timestamp is missing',
    ],
  ])('rejects %s naming the line and the field', (_, text, message) => {
    const error = throwsCode(() => parseMooncakeTrace(text), 'INVALID_ARGUMENT');
    expect(error.message).toContain(message);
  });

  it('any session layout gives chains: each row after the previous row of its session', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ session: fc.integer({ min: 0, max: 5 }), delay: fc.nat(10_000) }), {
          minLength: 1,
          maxLength: 40,
        }),
        (rows) => {
          const seen = new Set<number>();
          const text = rows
            .map((r) => {
              const first = !seen.has(r.session);
              seen.add(r.session);
              return row(
                first
                  ? { session_id: r.session, timestamp: 0 }
                  : { session_id: r.session, delay: r.delay },
              );
            })
            .join('\n');
          const requests = parseMooncakeTrace(text).requests;
          const last = new Map<number, number>();
          rows.forEach((r, i) => {
            expect(requests[i]!.after).toBe(last.get(r.session));
            if (last.has(r.session)) expect(requests[i]!.delayMs).toBe(r.delay);
            last.set(r.session, i);
          });
          readWorkload(parseMooncakeTrace(text));
        },
      ),
      runs(100, 500),
    );
  });
});
