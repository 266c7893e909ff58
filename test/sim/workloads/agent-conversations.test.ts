import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../../src/sim/index.js';
import type { SimRequest } from '../../../src/sim/workload.js';
import { readWorkload } from '../../../src/sim/workload-check.js';
import { AGENT_CONVERSATIONS_OPTIONS } from '../../../src/sim/workloads/agent-conversations.js';
import {
  type AgentConversationsOptions,
  agentConversations,
} from '../../../src/sim/workloads/index.js';
import { runs } from '../../helpers/fc-settings.js';
import { throwsCode } from '../../support/fixtures.js';
import { commonPrefix, sameRequests, sameTokens } from './blocks.js';

/** A small workload, quick to build and check. */
const SMALL: AgentConversationsOptions = {
  conversations: 40,
  systemPrompts: 3,
  systemPromptMinLength: 64,
  systemPromptMaxLength: 512,
  medianUserMessageLength: 24,
  maxUserMessageLength: 200,
  medianOutputLength: 32,
  maxOutputLength: 150,
  contextWindow: 4096,
};

/** Each session's requests in turn order (the chains `after` forms). */
function sessions(requests: readonly SimRequest[]): SimRequest[][] {
  const chains: SimRequest[][] = [];
  const chainOf = new Map<number, SimRequest[]>();
  for (const r of requests) {
    const chain = r.after === undefined ? [] : chainOf.get(r.after)!;
    if (r.after === undefined) chains.push(chain);
    chain.push(r);
    chainOf.set(r.id, chain);
  }
  return chains;
}

/** The system prompt lengths `o` asks for: log-uniform over [min, max]. */
function systemLengths(o: Required<AgentConversationsOptions>): number[] {
  const n = o.systemPrompts;
  return Array.from({ length: n }, (_, k) =>
    Math.round(
      o.systemPromptMinLength *
        (o.systemPromptMaxLength / o.systemPromptMinLength) ** (n === 1 ? 0 : k / (n - 1)),
    ),
  );
}

/**
 * The system prompt length of each first turn: sessions that start with the same token share a
 * system prompt, exactly (their first user messages differ from their first token on).
 */
function systemOf(
  firsts: readonly SimRequest[],
  o: Required<AgentConversationsOptions>,
): Map<SimRequest, number> {
  const groups = new Map<number, SimRequest[]>();
  for (const r of firsts) {
    const head = r.tokens()[0]!;
    groups.set(head, [...(groups.get(head) ?? []), r]);
  }
  expect(groups.size).toBeLessThanOrEqual(o.systemPrompts);
  const allowed = systemLengths(o);
  const out = new Map<SimRequest, number>();
  for (const group of groups.values()) {
    const shared = group.map((r) => commonPrefix(r.tokens(), group[0]!.tokens()));
    // With one session, its system prompt is one of the allowed lengths below its prompt.
    const length =
      group.length === 1
        ? Math.max(...allowed.filter((n) => n < group[0]!.promptLength))
        : Math.min(...shared.slice(1));
    expect(allowed).toContain(length);
    for (const r of group) out.set(r, length);
  }
  return out;
}

/** Checks every documented invariant of a workload built with `o`. */
function expectAgentShape(requests: readonly SimRequest[], o: Required<AgentConversationsOptions>) {
  const keys = new Set<string>();
  const followers = new Set<number>();
  requests.forEach((r, i) => {
    expect(r.id).toBe(i);
    expect(r.tokens()).toHaveLength(r.promptLength);
    expect(r.outputTokens).toHaveLength(r.outputLength);
    expect(r.outputLength).toBeGreaterThanOrEqual(1);
    expect(r.outputLength).toBeLessThanOrEqual(o.maxOutputLength);
    expect(r.promptLength + r.outputLength).toBeLessThanOrEqual(o.contextWindow);
    if (r.after === undefined) {
      // A first turn: a start time, no think time, a session key of its own.
      expect(r.timestamp).toBeGreaterThanOrEqual(0);
      expect(r.delayMs).toBeUndefined();
      expect(keys.has(r.routingKey!)).toBe(false);
      keys.add(r.routingKey!);
    } else {
      // A later turn: after an earlier request, which no other turn follows.
      expect(r.after).toBeLessThan(i);
      expect(followers.has(r.after)).toBe(false);
      followers.add(r.after);
      expect(r.timestamp).toBeUndefined();
      expect(r.delayMs).toBeGreaterThanOrEqual(0);
    }
  });
  const chains = sessions(requests);
  expect(chains).toHaveLength(o.conversations);
  const system = systemOf(
    chains.map((chain) => chain[0]!),
    o,
  );
  for (const chain of chains) {
    expect(chain.length).toBeLessThanOrEqual(o.maxTurns);
    const key = chain[0]!.routingKey!;
    expect(key).toMatch(/^session-\d+$/);
    for (let t = 0; t < chain.length; t++) {
      const r = chain[t]!;
      expect(r.routingKey).toBe(key);
      const before = chain[t - 1];
      const user =
        before === undefined
          ? r.promptLength - system.get(r)!
          : r.promptLength - before.promptLength - before.outputLength;
      expect(user).toBeGreaterThanOrEqual(1);
      expect(user).toBeLessThanOrEqual(o.maxUserMessageLength);
      if (before === undefined) continue;
      // Turn t's prompt is turn t − 1's prompt, then its answer, then the new user message.
      const tokens = r.tokens();
      expect(sameTokens(tokens.subarray(0, before.promptLength), before.tokens())).toBe(true);
      expect(
        sameTokens(
          tokens.subarray(before.promptLength, before.promptLength + before.outputLength),
          before.outputTokens!,
        ),
      ).toBe(true);
    }
  }
}

describe('agentConversations', () => {
  it('builds the documented default: a few thousand requests, 8 K-token prompts in later turns', () => {
    const workload = agentConversations();
    expect(workload.name).toBe('agent');
    const n = workload.requests.length;
    expect(n).toBeGreaterThan(2000);
    expect(n).toBeLessThan(6000);
    expect(workload.parameters.requests).toBe(n);
    const later = workload.requests.filter((r) => r.after !== undefined).map((r) => r.promptLength);
    later.sort((a, b) => a - b);
    expect(later[later.length >> 1]).toBeGreaterThan(6000);
    readWorkload(workload);
  });

  it('is deterministic per seed, and the seed matters', () => {
    const a = agentConversations({ ...SMALL, seed: 7 });
    const b = agentConversations({ ...SMALL, seed: 7 });
    const c = agentConversations({ ...SMALL, seed: 8 });
    expect(sameRequests(a.requests, b.requests)).toBe(true);
    expect(a.description).toBe(b.description);
    expect(sameRequests(a.requests, c.requests)).toBe(false);
  });
});

describe('agentConversations: shape', () => {
  it('every turn extends the previous one of its session, keyed by session, within the caps', () => {
    const o = AGENT_CONVERSATIONS_OPTIONS.read(SMALL);
    const workload = agentConversations(SMALL);
    expectAgentShape(workload.requests, o);
    expect(readWorkload(workload)).toBe(workload);
  });

  it('starts sessions over time, so they interleave', () => {
    const { requests } = agentConversations({ ...SMALL, conversationsPerSecond: 2 });
    const starts = requests.filter((r) => r.after === undefined).map((r) => r.timestamp!);
    expect(starts[0]).toBe(0);
    for (let i = 1; i < starts.length; i++)
      expect(starts[i]).toBeGreaterThanOrEqual(starts[i - 1]!);
    // 40 sessions at 2 per second span about 20 s (far more than 1 s, far less than 200 s).
    expect(starts.at(-1)!).toBeGreaterThan(5_000);
    expect(starts.at(-1)!).toBeLessThan(60_000);
    // A later turn of some session comes before the first turn of a later session.
    const firstLater = requests.findIndex((r) => r.after !== undefined);
    expect(requests.slice(firstLater).some((r) => r.after === undefined)).toBe(true);
  });

  it('skews the system prompts by popularity', () => {
    const share = (skew: number) => {
      const { requests } = agentConversations({
        ...SMALL,
        conversations: 400,
        systemPrompts: 4,
        systemPromptSkew: skew,
        medianTurns: 1,
        turnsSigma: 0,
      });
      const counts = new Map<number, number>();
      for (const r of requests) counts.set(r.tokens()[0]!, (counts.get(r.tokens()[0]!) ?? 0) + 1);
      return Math.max(...counts.values()) / requests.length;
    };
    expect(share(0)).toBeLessThan(0.4); // uniform: about 1/4
    expect(share(4)).toBeGreaterThan(0.8); // 1 : 1/16 : 1/81 : 1/256
  });

  it('heavy tails: some sessions run far longer than the median, some messages hit the cap', () => {
    const o = { ...SMALL, conversations: 300, maxTurns: 40 };
    const { requests } = agentConversations(o);
    const lengths = sessions(requests).map((c) => c.length);
    lengths.sort((a, b) => a - b);
    expect(lengths[lengths.length >> 1]).toBeLessThanOrEqual(6);
    expect(lengths.at(-1)!).toBeGreaterThanOrEqual(20);
    expect(requests.some((r) => r.outputLength === o.maxOutputLength)).toBe(true);
  });

  it('turnsSigma 0 gives every session medianTurns turns; a small context window ends them early', () => {
    const fixed = agentConversations({ ...SMALL, medianTurns: 3, turnsSigma: 0 });
    expect(sessions(fixed.requests).every((c) => c.length === 3)).toBe(true);
    const tight = agentConversations({
      ...SMALL,
      medianTurns: 30,
      turnsSigma: 0,
      maxTurns: 30,
      contextWindow: 512 + 200 + 150,
    });
    const lengths = sessions(tight.requests).map((c) => c.length);
    expect(Math.max(...lengths)).toBeLessThan(30);
    for (const r of tight.requests)
      expect(r.promptLength + r.outputLength).toBeLessThanOrEqual(862);
  });

  it('holds its invariants for any options (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          conversations: fc.integer({ min: 1, max: 12 }),
          conversationsPerSecond: fc.double({ min: 0.01, max: 100, noNaN: true }),
          systemPrompts: fc.integer({ min: 1, max: 5 }),
          systemPromptMinLength: fc.integer({ min: 1, max: 64 }),
          extraSystem: fc.integer({ min: 0, max: 200 }),
          systemPromptSkew: fc.double({ min: 0, max: 5, noNaN: true }),
          medianTurns: fc.double({ min: 1, max: 8, noNaN: true }),
          turnsSigma: fc.double({ min: 0, max: 2, noNaN: true }),
          maxTurns: fc.integer({ min: 1, max: 12 }),
          medianUserMessageLength: fc.double({ min: 1, max: 100, noNaN: true }),
          maxUserMessageLength: fc.integer({ min: 1, max: 100 }),
          medianOutputLength: fc.double({ min: 1, max: 100, noNaN: true }),
          maxOutputLength: fc.integer({ min: 1, max: 100 }),
          lengthSigma: fc.double({ min: 0, max: 2, noNaN: true }),
          spareContext: fc.integer({ min: 0, max: 2000 }),
          meanThinkTimeMs: fc.double({ min: 0, max: 10_000, noNaN: true }),
          seed: fc.integer({ min: 0, max: 0xffff_ffff }),
        }),
        ({ extraSystem, spareContext, ...rest }) => {
          const options = {
            ...rest,
            systemPromptMaxLength: rest.systemPromptMinLength + extraSystem,
            contextWindow:
              rest.systemPromptMinLength +
              extraSystem +
              rest.maxUserMessageLength +
              rest.maxOutputLength +
              spareContext,
          };
          const workload = agentConversations(options);
          expectAgentShape(workload.requests, AGENT_CONVERSATIONS_OPTIONS.read(options));
          readWorkload(workload);
          expect(sameRequests(agentConversations(options).requests, workload.requests)).toBe(true);
        },
      ),
      runs(60, 300),
    );
  });
});

describe('agentConversations: replayed', () => {
  it('sends each turn only after the previous turn completed plus its think time', async () => {
    const think = 4_000;
    const workload = agentConversations({
      ...SMALL,
      conversations: 1,
      medianTurns: 4,
      turnsSigma: 0,
      meanThinkTimeMs: think,
    });
    const delays = workload.requests.reduce((sum, r) => sum + (r.delayMs ?? 0), 0);
    expect(delays).toBeGreaterThan(0);
    const run = await simulate({
      workload,
      policy: 'round_robin',
      fleet: { workers: 2 },
      arrivals: { kind: 'trace' },
      loadPollIntervalMs: 0,
      precision: false,
    });
    expect(run.completed).toBe(4);
    // One session: its turns run one after another, separated by the think times.
    expect(run.makespanMs).toBeGreaterThan(delays);
    // The same session with no think time finishes sooner by about those think times.
    const eager = await simulate({
      workload: { ...workload, requests: workload.requests.map(withoutDelay) },
      policy: 'round_robin',
      fleet: { workers: 2 },
      arrivals: { kind: 'trace' },
      loadPollIntervalMs: 0,
      precision: false,
    });
    expect(run.makespanMs - eager.makespanMs).toBeGreaterThan(delays * 0.99);
  });

  it('a delay also holds back a turn whose predecessor completed before it arrived', async () => {
    // A closed loop of one sends turn 1 as soon as turn 0 completes: it still waits 10 s.
    const workload = agentConversations({
      ...SMALL,
      conversations: 1,
      medianTurns: 2,
      turnsSigma: 0,
    });
    const requests = workload.requests.map((r) =>
      r.after === undefined ? r : { ...r, tokens: r.tokens, delayMs: 10_000 },
    );
    const run = await simulate({
      workload: { ...workload, requests },
      policy: 'round_robin',
      fleet: { workers: 1 },
      arrivals: { kind: 'closed_loop', concurrency: 1 },
      loadPollIntervalMs: 0,
      precision: false,
    });
    expect(run.makespanMs).toBeGreaterThan(10_000);
  });
});

describe('agentConversations: bad options', () => {
  it.each([
    [{ conversations: 0 }, 'agent.conversations'],
    [{ systemPromptMinLength: 2000, systemPromptMaxLength: 1000 }, 'agent.systemPromptMaxLength'],
    [{ contextWindow: 4000 }, 'agent.contextWindow'],
    [{ conversationsPerSecond: 0 }, 'agent.conversationsPerSecond'],
    [{ lengthSigma: -1 }, 'agent.lengthSigma'],
    [{ colour: 'red' } as AgentConversationsOptions, 'colour'],
  ])('rejects %o naming %s', (options, name) => {
    const error = throwsCode(() => agentConversations(options), 'INVALID_ARGUMENT');
    expect(error.message).toContain(name);
  });
});

function withoutDelay(r: SimRequest): SimRequest {
  if (r.delayMs === undefined) return r;
  const { delayMs: _, ...rest } = r;
  return rest;
}

describe('the workload check and delayMs', () => {
  const workload = agentConversations({
    ...SMALL,
    conversations: 2,
    medianTurns: 2,
    turnsSigma: 0,
  });
  const withRequest = (i: number, change: Record<string, unknown>) => ({
    ...workload,
    requests: workload.requests.map((r, j) => (j === i ? { ...r, ...change } : r)),
  });
  const later = workload.requests.findIndex((r) => r.after !== undefined);

  it('accepts a finite delayMs ≥ 0 after an earlier request', () => {
    expect(() => readWorkload(withRequest(later, { delayMs: 0 }))).not.toThrow();
    expect(() => readWorkload(withRequest(later, { delayMs: 12.5 }))).not.toThrow();
  });

  it.each([
    ['negative', -1],
    ['not finite', Number.POSITIVE_INFINITY],
    ['NaN', Number.NaN],
    ['a string', '5'],
  ])('rejects a delayMs that is %s', (_, delayMs) => {
    const error = throwsCode(
      () => readWorkload(withRequest(later, { delayMs })),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toContain(`workload.requests[${later}].delayMs must be a finite number`);
  });

  it('rejects a delayMs without after', () => {
    const error = throwsCode(
      () => readWorkload(withRequest(0, { delayMs: 5 })),
      'INVALID_ARGUMENT',
    );
    expect(error.message).toContain('workload.requests[0].delayMs must be absent without after');
  });
});
