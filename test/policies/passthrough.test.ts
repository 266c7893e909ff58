import { describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const down = { status: 'failed', open: false, removed: false, load: 0 } as const;
const broken = { status: 'ready', open: true, removed: false, load: 0 } as const;

describe('passthrough', () => {
  it.each([
    ['the first worker when it is available', [ready, ready], 0],
    ['the next one when the first is down', [down, ready, ready], 1],
    ['past a circuit-broken worker', [broken, down, ready], 2],
  ] as const)('picks %s', async (_label, shapes, expected) => {
    const { workers } = await buildFleet(shapes);

    expect(createPolicy('passthrough').select(workers)).toBe(workers[expected]);
  });

  it('returns undefined when no worker is available', async () => {
    const { workers } = await buildFleet([down, broken]);

    expect(createPolicy('passthrough').select(workers)).toBeUndefined();
  });
});
