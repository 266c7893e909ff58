/**
 * Malformed workloads, built by hand, through the public `simulate` and `comparePolicies`: each
 * fails with `INVALID_ARGUMENT` naming the field before any router exists, and a run that fails
 * later still closes every router and registry it built.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FleetRouteError, Router, WorkerRegistry } from '../../src/index.js';
import { comparePolicies, type SimRequest, simulate, type Workload } from '../../src/sim/index.js';

afterEach(() => {
  vi.restoreAllMocks();
});

/** A well-formed request `id`: 64 tokens of its own, 4 to generate. */
function request(id: number): SimRequest {
  const tokens = Uint32Array.from({ length: 64 }, (_, i) => id * 1_000 + i);
  return { id, promptLength: 64, tokens: () => tokens, outputLength: 4 };
}

/** Three good requests, the one at `at` replaced by `bad(request(at))`. */
function withRequest(at: number, bad: (good: SimRequest) => unknown): Workload {
  const requests = [0, 1, 2].map((id) => (id === at ? bad(request(id)) : request(id)));
  return { name: 'hand', description: 'built by hand', parameters: {}, requests } as Workload;
}

const good = withRequest(-1, (r) => r);
const getterThrows = (key: string) => (r: SimRequest) =>
  Object.defineProperty({ ...r }, key, {
    get() {
      throw new Error('no access');
    },
  });

/** [label, workload, the message it must match]. */
const MALFORMED: readonly (readonly [string, unknown, RegExp])[] = [
  ['a string', 'shared-prefix', /^workload must be a Workload object/],
  ['null', null, /^workload must be a Workload object/],
  ['an array of requests', [request(0)], /^workload must be a Workload object .*got an array/],
  ['no name', { ...good, name: undefined }, /^workload\.name must be a string/],
  ['a numeric description', { ...good, description: 3 }, /^workload\.description must be/],
  ['no parameters', { ...good, parameters: undefined }, /^workload\.parameters must be/],
  ['a parameter object', { ...good, parameters: { a: {} } }, /^workload\.parameters\.a must be/],
  ['requests not an array', { ...good, requests: 3 }, /^workload\.requests must be an array/],
  ['a null request', withRequest(1, () => null), /^workload\.requests\[1\] must be a request/],
  ['an array request', withRequest(1, () => []), /^workload\.requests\[1\] must be a request/],
  [
    'a wrong id',
    withRequest(2, (r) => ({ ...r, id: 7 })),
    /^workload\.requests\[2\]\.id must be 2/,
  ],
  ['a missing id', withRequest(0, (r) => ({ ...r, id: undefined })), /requests\[0\]\.id must be 0/],
  [
    'a missing promptLength',
    withRequest(1, (r) => ({ ...r, promptLength: undefined })),
    /^workload\.requests\[1\]\.promptLength is missing$/,
  ],
  ...(
    [
      ['NaN', Number.NaN],
      ['negative', -64],
      ['0', 0],
      ['fractional', 63.5],
      ['a string', '64'],
      ['infinite', Number.POSITIVE_INFINITY],
    ] as const
  ).flatMap(([what, value]) => [
    [
      `a ${what} promptLength`,
      withRequest(1, (r) => ({ ...r, promptLength: value })),
      /^workload\.requests\[1\]\.promptLength must be an integer between 1 and 1000000/,
    ] as const,
    [
      `a ${what} outputLength`,
      withRequest(2, (r) => ({ ...r, outputLength: value })),
      /^workload\.requests\[2\]\.outputLength must be an integer between 1 and 1000000/,
    ] as const,
  ]),
  [
    'a missing outputLength',
    withRequest(0, (r) => ({ ...r, outputLength: undefined })),
    /^workload\.requests\[0\]\.outputLength is missing$/,
  ],
  [
    'tokens as an array',
    withRequest(1, (r) => ({ ...r, tokens: [1, 2, 3] })),
    /^workload\.requests\[1\]\.tokens must be a function returning a Uint32Array, got an array/,
  ],
  [
    'no tokens',
    withRequest(1, (r) => ({ ...r, tokens: undefined })),
    /^workload\.requests\[1\]\.tokens must be a function/,
  ],
  [
    'tokens() returning a plain array',
    withRequest(1, (r) => ({ ...r, tokens: () => Array.from(r.tokens()) })),
    /^workload\.requests\[1\]\.tokens\(\) must return a Uint32Array, got an array/,
  ],
  [
    'tokens() returning the wrong length',
    withRequest(2, (r) => ({ ...r, promptLength: 65 })),
    /^workload\.requests\[2\]\.tokens\(\) must return promptLength \(65\) tokens, got 64/,
  ],
  [
    'tokens() that throws',
    withRequest(1, (r) => ({
      ...r,
      tokens: () => {
        throw new Error('tokenizer offline');
      },
    })),
    /^workload\.requests\[1\]\.tokens\(\) threw: tokenizer offline/,
  ],
  [
    'outputTokens as an array',
    withRequest(0, (r) => ({ ...r, outputTokens: [1, 2] })),
    /^workload\.requests\[0\]\.outputTokens must be a Uint32Array/,
  ],
  [
    'a numeric routingKey',
    withRequest(0, (r) => ({ ...r, routingKey: 42 })),
    /^workload\.requests\[0\]\.routingKey must be a string, got 42/,
  ],
  ...([-1, Number.NaN, Number.POSITIVE_INFINITY, '100'] as const).map(
    (value) =>
      [
        `a timestamp of ${String(value)}`,
        withRequest(1, (r) => ({ ...r, timestamp: value })),
        /^workload\.requests\[1\]\.timestamp must be a finite number ≥ 0/,
      ] as const,
  ),
  [
    'an after naming an unknown request',
    withRequest(2, (r) => ({ ...r, after: 7 })),
    /^workload\.requests\[2\]\.after must be the id of an earlier request \(0 … 1\), got 7/,
  ],
  [
    'an after naming the request itself',
    withRequest(1, (r) => ({ ...r, after: 1 })),
    /^workload\.requests\[1\]\.after must be the id of an earlier request \(0 … 0\), got 1/,
  ],
  [
    'an after naming a later request',
    withRequest(1, (r) => ({ ...r, after: 2 })),
    /^workload\.requests\[1\]\.after must be the id of an earlier request/,
  ],
  [
    'an after on the first request',
    withRequest(0, (r) => ({ ...r, after: 0 })),
    /^workload\.requests\[0\]\.after must be absent \(no request precedes request 0\)/,
  ],
  [
    'a fractional after',
    withRequest(2, (r) => ({ ...r, after: 0.5 })),
    /^workload\.requests\[2\]\.after must be the id of an earlier request/,
  ],
  [
    'a promptLength getter that throws',
    withRequest(1, getterThrows('promptLength')),
    /^workload\.requests\[1\]\.promptLength could not be read: no access/,
  ],
  [
    'a requests getter that throws',
    Object.defineProperty({ ...good }, 'requests', {
      get() {
        throw new Error('no access');
      },
    }),
    /^workload\.requests could not be read: no access/,
  ],
];

/** The error `promise` rejects with. */
async function rejection(promise: Promise<unknown>): Promise<FleetRouteError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(FleetRouteError.is(error, 'INVALID_ARGUMENT'), String(error)).toBe(true);
  return error as FleetRouteError;
}

describe('malformed workloads', () => {
  it.each(MALFORMED)(
    'simulate rejects %s naming the field, before building any router',
    async (_, workload, message) => {
      const create = vi.spyOn(WorkerRegistry, 'create');
      const error = await rejection(
        simulate({ workload: workload as Workload, policy: 'round_robin' }),
      );
      expect(error.message).toMatch(message);
      expect(create).not.toHaveBeenCalled();
    },
  );

  it.each(MALFORMED)('comparePolicies rejects %s the same way', async (_, workload, message) => {
    const create = vi.spyOn(WorkerRegistry, 'create');
    const error = await rejection(comparePolicies({ workload: workload as Workload }));
    expect(error.message).toMatch(message);
    expect(create).not.toHaveBeenCalled();
  });

  it('keeps what tokens() threw as the cause', async () => {
    const boom = new Error('tokenizer offline');
    const workload = withRequest(1, (r) => ({
      ...r,
      tokens: () => {
        throw boom;
      },
    }));
    const error = await rejection(simulate({ workload, policy: 'random' }));
    expect(error.cause).toBe(boom);
  });

  it('accepts the well-formed control workload', async () => {
    const run = await simulate({ workload: good, policy: 'round_robin' });
    expect(run.completed).toBe(3);
  });

  it('comparePolicies checks every policy configuration before the first run', async () => {
    const create = vi.spyOn(WorkerRegistry, 'create');
    const error = await rejection(
      comparePolicies({
        workload: good,
        policies: ['round_robin', 'cache_aware'],
        policyConfigs: { cache_aware: { cacheThreshold: 2 } },
      }),
    );
    expect(error.message).toMatch(/cacheThreshold/);
    expect(create).not.toHaveBeenCalled();
  });
});

describe('a run that fails', () => {
  /** Counts the registries and routers built and closed while `body` runs. */
  async function counting(body: () => Promise<unknown>) {
    const create = vi.spyOn(WorkerRegistry, 'create');
    const closeRegistry = vi.spyOn(WorkerRegistry.prototype, 'close');
    const start = vi.spyOn(Router.prototype, 'start');
    const closeRouter = vi.spyOn(Router.prototype, 'close');
    const error = await body().then(
      () => undefined,
      (e: unknown) => e,
    );
    return {
      error,
      registries: create.mock.calls.length,
      registriesClosed: closeRegistry.mock.calls.length,
      routers: start.mock.calls.length,
      routersClosed: closeRouter.mock.calls.length,
    };
  }

  it('closes every router and registry when onProgress throws mid-run', async () => {
    const stop = new Error('stop');
    const outcome = await counting(() =>
      simulate({
        workload: good,
        policy: 'cache_aware',
        routers: 3,
        onProgress: (done) => {
          if (done === 2) throw stop;
        },
      }),
    );
    expect(outcome).toEqual({
      error: stop,
      registries: 3,
      registriesClosed: 3,
      routers: 3,
      routersClosed: 3,
    });
  });

  it('closes them too when a tokens() that passed the check throws on a later call', async () => {
    let calls = 0;
    const workload = withRequest(2, (r) => ({
      ...r,
      tokens: () => {
        if (++calls > 1) throw new Error('changed its mind');
        return r.tokens();
      },
    }));
    const outcome = await counting(() => simulate({ workload, policy: 'round_robin', routers: 2 }));
    expect(FleetRouteError.is(outcome.error, 'INVALID_ARGUMENT')).toBe(true);
    expect((outcome.error as Error).message).toMatch(
      /^workload\.requests\[2\]\.tokens\(\) threw: changed its mind/,
    );
    expect(outcome).toMatchObject({
      registries: 2,
      registriesClosed: 2,
      routers: 2,
      routersClosed: 2,
    });
  });

  it('comparePolicies closes the failing run’s routers and runs no further policy', async () => {
    const outcome = await counting(() =>
      comparePolicies({
        workload: good,
        policies: ['round_robin', 'random', 'cache_aware'],
        onProgress: (policy, done) => {
          if (policy === 'random' && done === 1) throw new Error('enough');
        },
      }),
    );
    expect((outcome.error as Error).message).toBe('enough');
    expect(outcome).toMatchObject({
      registries: 2,
      registriesClosed: 2,
      routers: 2,
      routersClosed: 2,
    });
  });
});
