import { describe, expect, it } from 'vitest';
import { createPolicy, FleetRouteError, selectPair } from '../../src/index.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const down = { status: 'not_ready', open: false, removed: false, load: 0 } as const;

describe('selectPair', () => {
  it('picks one prefill and one decode worker, each leg by its own policy', async () => {
    const prefill = (await buildFleet([ready, ready])).workers;
    const decode = (await buildFleet([ready, ready, ready])).workers;
    const policies = { prefill: createPolicy('round_robin'), decode: createPolicy('round_robin') };

    const pairs = Array.from({ length: 4 }, () => selectPair(prefill, decode, {}, policies)!);

    const p0 = prefill.indexOf(pairs[0]!.prefill);
    const d0 = decode.indexOf(pairs[0]!.decode);
    expect(pairs.map((p) => prefill.indexOf(p.prefill))).toEqual(
      [0, 1, 2, 3].map((i) => (p0 + i) % 2),
    );
    expect(pairs.map((p) => decode.indexOf(p.decode))).toEqual(
      [0, 1, 2, 3].map((i) => (d0 + i) % 3),
    );
  });

  it('never returns half a pair: no available decode worker means undefined and no prefill pick', async () => {
    const prefill = (await buildFleet([ready])).workers;
    const decode = (await buildFleet([down, down])).workers;

    const pair = selectPair(
      prefill,
      decode,
      {},
      { prefill: createPolicy('random'), decode: createPolicy('random') },
    );

    expect(pair).toBeUndefined();
    expect(prefill[0]!.processed).toBe(0);
    expect(
      selectPair(
        [],
        decode,
        {},
        { prefill: createPolicy('random'), decode: createPolicy('random') },
      ),
    ).toBeUndefined();
  });

  it('sets the leg on each request, so routing keys are namespaced per leg', async () => {
    const prefill = (await buildFleet(Array.from({ length: 8 }, () => ready))).workers;
    const decode = (await buildFleet(Array.from({ length: 8 }, () => ready))).workers;
    const policies = {
      prefill: createPolicy('consistent_hashing'),
      decode: createPolicy('consistent_hashing'),
    };
    const reference = createPolicy('consistent_hashing');

    for (let k = 0; k < 20; k++) {
      const pair = selectPair(prefill, decode, { routingKey: `s${k}` }, policies)!;
      expect(pair.prefill).toBe(reference.select(prefill, { routingKey: `prefill:s${k}` }));
      expect(pair.decode).toBe(reference.select(decode, { routingKey: `decode:s${k}` }));
    }
  });

  it('does not pass request.ring to the legs (it covers one list only)', async () => {
    const prefill = (await buildFleet(Array.from({ length: 4 }, () => ready))).workers;
    const decode = (await buildFleet(Array.from({ length: 4 }, () => ready))).workers;
    const { registry } = await buildFleet([ready]);
    const policies = {
      prefill: createPolicy('consistent_hashing'),
      decode: createPolicy('consistent_hashing'),
    };

    const pair = selectPair(
      prefill,
      decode,
      { routingKey: 'k', ring: registry.getHashRing() },
      policies,
    );

    expect(pair).toBeDefined();
  });

  it('rejects the same instance for both legs, and missing policies', async () => {
    const workers = (await buildFleet([ready])).workers;
    const shared = createPolicy('round_robin');

    expect(() => selectPair(workers, workers, {}, { prefill: shared, decode: shared })).toThrow(
      FleetRouteError,
    );
    expect(() => selectPair(workers, workers, {}, {} as never)).toThrow(FleetRouteError);
  });
});
