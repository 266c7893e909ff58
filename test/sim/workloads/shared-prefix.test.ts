import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { generatedSharedPrefix } from '../../../src/sim/workloads/index.js';
import { runs } from '../../helpers/fc-settings.js';
import { throwsCode } from '../../support/fixtures.js';
import { commonPrefix, sameRequests, unboundedCacheHits } from './blocks.js';

describe('generatedSharedPrefix: shape', () => {
  it('builds 64 groups × 16 prompts of 2,048 + 128 tokens with the documented defaults', () => {
    const workload = generatedSharedPrefix();

    expect(workload.name).toBe('shared-prefix');
    expect(workload.description).toBe(
      '64 groups × 16 prompts, 2,048-token system prompt + 128-token question, 256 output tokens',
    );
    expect(workload.parameters).toEqual({
      groups: 64,
      promptsPerGroup: 16,
      systemPromptLength: 2048,
      questionLength: 128,
      outputLength: 256,
      seed: 1,
      shuffle: 'true',
    });
    expect(workload.requests).toHaveLength(1024);
    workload.requests.forEach((request, i) => {
      expect(request.id).toBe(i);
      expect(request.promptLength).toBe(2176);
      expect(request.tokens()).toHaveLength(2176);
      expect(request.outputLength).toBe(256);
      expect('outputTokens' in request).toBe(false);
      expect('after' in request).toBe(false);
      expect('timestamp' in request).toBe(false);
      expect(request.tokens().every((t) => t < 128_000)).toBe(true);
    });
    const perGroup = new Map<string, number>();
    for (const r of workload.requests)
      perGroup.set(r.routingKey!, (perGroup.get(r.routingKey!) ?? 0) + 1);
    expect([...perGroup.keys()].sort()).toEqual(
      Array.from({ length: 64 }, (_, g) => `group-${g}`).sort(),
    );
    expect(new Set(perGroup.values())).toEqual(new Set([16]));
  });

  it('gives each prompt its group system prompt followed by a question of its own', () => {
    const { requests } = generatedSharedPrefix({ groups: 6, promptsPerGroup: 5 });
    const systems = new Map<string, Uint32Array>();
    for (const request of requests) {
      const prompt = request.tokens();
      const system = systems.get(request.routingKey!);
      if (system === undefined) systems.set(request.routingKey!, prompt.subarray(0, 2048));
      else expect(commonPrefix(system, prompt)).toBeGreaterThanOrEqual(2048);
    }
    const firsts = [...systems.values()].map((s) => s[0]);
    expect(new Set(firsts).size).toBe(6);
    const questions = new Set(requests.map((r) => r.tokens().subarray(2048).join(',')));
    expect(questions.size).toBe(30);
  });

  it('returns the same stored array from every tokens() call and freezes the workload', () => {
    const workload = generatedSharedPrefix({ groups: 2, promptsPerGroup: 2 });
    const request = workload.requests[0]!;

    expect(request.tokens()).toBe(request.tokens());
    expect(Object.isFrozen(workload)).toBe(true);
    expect(Object.isFrozen(workload.requests)).toBe(true);
    expect(Object.isFrozen(request)).toBe(true);
    expect(Object.isFrozen(workload.parameters)).toBe(true);
  });

  it('keeps group order without shuffle, with the same prompts as the shuffled order', () => {
    const ordered = generatedSharedPrefix({ groups: 4, promptsPerGroup: 3, shuffle: false });
    const shuffled = generatedSharedPrefix({ groups: 4, promptsPerGroup: 3 });

    expect(ordered.requests.map((r) => r.routingKey)).toEqual(
      [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3].map((g) => `group-${g}`),
    );
    expect(ordered.description.endsWith(', in group order')).toBe(true);
    expect(shuffled.requests.map((r) => r.id)).toEqual(ordered.requests.map((r) => r.id));
    const asSet = (w: typeof ordered) =>
      new Set(w.requests.map((r) => `${r.routingKey}:${r.tokens().join(',')}`));
    expect(asSet(shuffled)).toEqual(asSet(ordered));
    expect(shuffled.requests.map((r) => r.routingKey)).not.toEqual(
      ordered.requests.map((r) => r.routingKey),
    );
  });
});

describe('generatedSharedPrefix: the cache ceiling', () => {
  it('lets one unbounded cache of 16-token blocks serve exactly 64·15·2048 / (1024·2176) ≈ 88.235 % of the prompt tokens', () => {
    const { hit, total } = unboundedCacheHits(generatedSharedPrefix().requests, 16);

    expect(hit).toBe(64 * 15 * 2048);
    expect(total).toBe(1024 * 2176);
    expect(hit / total).toBeCloseTo(0.882_35, 5);
  });
});

describe('generatedSharedPrefix: determinism', () => {
  it('gives an identical workload for the same options and a different one for another seed', () => {
    const options = { groups: 8, promptsPerGroup: 4, systemPromptLength: 100, questionLength: 20 };
    const a = generatedSharedPrefix({ ...options, seed: 7 });
    const b = generatedSharedPrefix({ ...options, seed: 7 });
    const c = generatedSharedPrefix({ ...options, seed: 8 });

    expect(sameRequests(a.requests, b.requests)).toBe(true);
    expect(a.description).toBe(b.description);
    expect(sameRequests(a.requests, c.requests)).toBe(false);
    expect(a.requests[0]!.tokens()).not.toEqual(c.requests[0]!.tokens());
  });

  it('holds its shape for any valid options (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          groups: fc.integer({ min: 1, max: 12 }),
          promptsPerGroup: fc.integer({ min: 1, max: 6 }),
          systemPromptLength: fc.integer({ min: 1, max: 80 }),
          questionLength: fc.integer({ min: 1, max: 40 }),
          outputLength: fc.integer({ min: 1, max: 1000 }),
          seed: fc.integer({ min: 0, max: 0xffff_ffff }),
          shuffle: fc.boolean(),
        }),
        (options) => {
          const { requests } = generatedSharedPrefix(options);
          const length = options.systemPromptLength + options.questionLength;
          expect(requests).toHaveLength(options.groups * options.promptsPerGroup);
          const systems = new Map<string, string>();
          requests.forEach((r, i) => {
            expect(r.id).toBe(i);
            expect(r.promptLength).toBe(length);
            expect(r.tokens()).toHaveLength(length);
            expect(r.outputLength).toBe(options.outputLength);
            const system = r.tokens().subarray(0, options.systemPromptLength).join(',');
            expect(systems.get(r.routingKey!) ?? system).toBe(system);
            systems.set(r.routingKey!, system);
          });
          expect(new Set(systems.values()).size).toBe(options.groups);
        },
      ),
      runs(50, 300),
    );
  });
});

describe('generatedSharedPrefix: options', () => {
  it.each([
    ['sharedPrefix.groups', { groups: 0 }],
    ['sharedPrefix.groups', { groups: 1.5 }],
    ['sharedPrefix.groups', { groups: '4' }],
    ['sharedPrefix.groups', { groups: 128_001 }],
    ['sharedPrefix.promptsPerGroup', { promptsPerGroup: -1 }],
    [
      'sharedPrefix.promptsPerGroup',
      { groups: 1000, promptsPerGroup: 1001, systemPromptLength: 1, questionLength: 1 },
    ],
    ['sharedPrefix.promptsPerGroup', { groups: 1000, promptsPerGroup: 200 }],
    ['sharedPrefix.systemPromptLength', { systemPromptLength: 1_000_001 }],
    ['sharedPrefix.questionLength', { systemPromptLength: 999_999, questionLength: 2 }],
    ['sharedPrefix.questionLength', { questionLength: Number.NaN }],
    ['sharedPrefix.outputLength', { outputLength: 0 }],
    ['sharedPrefix.seed', { seed: -1 }],
    ['sharedPrefix.seed', { seed: 2 ** 32 }],
    ['sharedPrefix.shuffle', { shuffle: 1 }],
    ['sharedPrefix.group', { group: 4 }],
    ['sharedPrefix', []],
    ['sharedPrefix', null],
  ])('rejects a bad %s naming it', (field, options) => {
    const error = throwsCode(
      () => generatedSharedPrefix(options as Parameters<typeof generatedSharedPrefix>[0]),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(`${field} `)).toBe(true);
  });
});
