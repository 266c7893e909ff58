import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { SimRequest } from '../../../src/sim/workload.js';
import { multiTurnChat } from '../../../src/sim/workloads/index.js';
import { runs } from '../../helpers/fc-settings.js';
import { throwsCode } from '../../support/fixtures.js';
import { sameRequests, sameTokens } from './blocks.js';

/** Each user's requests, round by round. */
function byUser(requests: readonly SimRequest[]): Map<string, SimRequest[]> {
  const users = new Map<string, SimRequest[]>();
  for (const r of requests) {
    const list = users.get(r.routingKey!) ?? [];
    list.push(r);
    users.set(r.routingKey!, list);
  }
  return users;
}

/** Checks every documented invariant of a chat workload built with `o`. */
function expectChatShape(
  requests: readonly SimRequest[],
  o: { users: number; rounds: number; system: number; question: number; answer: number },
): void {
  expect(requests).toHaveLength(o.users * o.rounds);
  requests.forEach((r, i) => {
    expect(r.id).toBe(i);
    const round = Math.floor(i / o.users);
    const length = o.system + round * (o.question + o.answer) + o.question;
    expect(r.promptLength).toBe(length);
    expect(r.tokens()).toHaveLength(length);
    expect(r.outputLength).toBe(o.answer);
    expect(r.outputTokens).toHaveLength(o.answer);
  });
  for (let round = 0; round < o.rounds; round++) {
    const keys = requests.slice(round * o.users, (round + 1) * o.users).map((r) => r.routingKey);
    expect(new Set(keys).size).toBe(o.users);
  }
  const users = byUser(requests);
  expect(users.size).toBe(o.users);
  const system = requests[0]!.tokens().subarray(0, o.system);
  for (const turns of users.values()) {
    expect('after' in turns[0]!).toBe(false);
    expect(sameTokens(turns[0]!.tokens().subarray(0, o.system), system)).toBe(true);
    for (let r = 1; r < turns.length; r++) {
      const previous = turns[r - 1]!;
      const current = turns[r]!;
      expect(current.after).toBe(previous.id);
      expect(previous.id).toBeLessThan(current.id);
      const history = [...previous.tokens(), ...previous.outputTokens!];
      expect(
        sameTokens(current.tokens().subarray(0, history.length), Uint32Array.from(history)),
      ).toBe(true);
    }
  }
}

describe('multiTurnChat: shape', () => {
  it('builds 32 users × 8 rounds over a 1,024-token system prompt with the documented defaults', () => {
    const workload = multiTurnChat();

    expect(workload.name).toBe('chat');
    expect(workload.description).toBe(
      '32 users × 8 rounds, 1,024-token shared system prompt, 96-token questions, 192-token answers',
    );
    expect(workload.parameters).toEqual({
      users: 32,
      rounds: 8,
      systemPromptLength: 1024,
      questionLength: 96,
      answerLength: 192,
      seed: 1,
    });
    expectChatShape(workload.requests, {
      users: 32,
      rounds: 8,
      system: 1024,
      question: 96,
      answer: 192,
    });
  });

  it('starts prompt r + 1 with prompt r followed by its answer, for every user and round', () => {
    const { requests } = multiTurnChat({
      users: 3,
      rounds: 4,
      systemPromptLength: 10,
      questionLength: 3,
      answerLength: 5,
    });
    const turns = byUser(requests).get('user-1')!;

    expect(turns.map((t) => t.promptLength)).toEqual([13, 21, 29, 37]);
    for (let r = 0; r + 1 < turns.length; r++) {
      const next = turns[r + 1]!.tokens();
      expect([...next.subarray(0, 18 + 8 * r)]).toEqual([
        ...turns[r]!.tokens(),
        ...turns[r]!.outputTokens!,
      ]);
    }
  });

  it('shuffles the users of each round with the seed, not the same order every round', () => {
    const { requests } = multiTurnChat({ users: 16, rounds: 3 });
    const order = (round: number) =>
      requests.slice(round * 16, round * 16 + 16).map((r) => r.routingKey);

    expect(order(0)).not.toEqual(order(1));
    expect(order(0)).not.toEqual(Array.from({ length: 16 }, (_, u) => `user-${u}`));
  });

  it('gives every user a distinct conversation right after the shared system prompt', () => {
    const { requests } = multiTurnChat({ users: 50, rounds: 1, systemPromptLength: 16 });

    expect(new Set(requests.map((r) => r.tokens()[16])).size).toBe(50);
    expect(new Set(requests.map((r) => r.tokens().subarray(0, 16).join(','))).size).toBe(1);
  });

  it('returns the same array from every tokens() call', () => {
    const request = multiTurnChat({ users: 2, rounds: 2 }).requests[3]!;
    expect(request.tokens()).toBe(request.tokens());
  });
});

describe('multiTurnChat: determinism', () => {
  it('gives an identical workload for the same options and a different one for another seed', () => {
    const a = multiTurnChat({ users: 5, rounds: 3, seed: 11 });
    const b = multiTurnChat({ users: 5, rounds: 3, seed: 11 });
    const c = multiTurnChat({ users: 5, rounds: 3, seed: 12 });

    expect(sameRequests(a.requests, b.requests)).toBe(true);
    expect(sameRequests(a.requests, c.requests)).toBe(false);
    expect(a.requests[0]!.tokens()).not.toEqual(c.requests[0]!.tokens());
  });

  it('holds its shape for any valid options (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          users: fc.integer({ min: 1, max: 8 }),
          rounds: fc.integer({ min: 1, max: 6 }),
          systemPromptLength: fc.integer({ min: 1, max: 40 }),
          questionLength: fc.integer({ min: 1, max: 12 }),
          answerLength: fc.integer({ min: 1, max: 12 }),
          seed: fc.integer({ min: 0, max: 0xffff_ffff }),
        }),
        (options) => {
          expectChatShape(multiTurnChat(options).requests, {
            users: options.users,
            rounds: options.rounds,
            system: options.systemPromptLength,
            question: options.questionLength,
            answer: options.answerLength,
          });
        },
      ),
      runs(50, 300),
    );
  });
});

describe('multiTurnChat: options', () => {
  it.each([
    ['chat.users', { users: 0 }],
    ['chat.users', { users: 128_001 }],
    ['chat.users', { users: 1000, systemPromptLength: 500_000 }],
    ['chat.rounds', { rounds: 2.5 }],
    [
      'chat.rounds',
      { users: 1000, rounds: 1001, systemPromptLength: 1, questionLength: 1, answerLength: 1 },
    ],
    [
      'chat.rounds',
      {
        users: 1,
        rounds: 3,
        systemPromptLength: 500_000,
        questionLength: 1,
        answerLength: 300_000,
      },
    ],
    ['chat.rounds', { users: 100, rounds: 1000, questionLength: 1000, answerLength: 2000 }],
    ['chat.systemPromptLength', { systemPromptLength: '1024' }],
    ['chat.questionLength', { systemPromptLength: 1_000_000, questionLength: 1 }],
    ['chat.answerLength', { answerLength: 0 }],
    ['chat.seed', { seed: 0.5 }],
    ['chat.turns', { turns: 3 }],
    ['chat', 'chat'],
  ])('rejects a bad %s naming it', (field, options) => {
    const error = throwsCode(
      () => multiTurnChat(options as Parameters<typeof multiTurnChat>[0]),
      'INVALID_ARGUMENT',
    );
    expect(error.message.startsWith(`${field} `)).toBe(true);
  });
});
