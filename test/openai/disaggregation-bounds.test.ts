/**
 * The bounds of a disaggregated request's hand-off, over real HTTP with stand-in engines: a
 * decode leg kept after its client left is let go `handoffTimeoutMs` later at most, and an SGLang
 * prefill leg's answer is read at most `maxPrefillAnswerBytes` and until `handoffTimeoutMs` after
 * the call ended — never cut while its decode leg waits for the KV cache.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { all, cleanUp, gate, MODEL, post, settle, startFleet } from './support/pd-fleet.js';

afterEach(cleanUp);

describe('a client that goes away during the hand-off', () => {
  it.each(['vllm', 'sglang'] as const)(
    '%s: a decode engine that never answers is let go handoffTimeoutMs after the client left',
    async (engine) => {
      const fleet = await startFleet({
        engine,
        decode: () => ({ hold: () => new Promise<void>(() => {}) }),
        handler: { disaggregation: { handoffTimeoutMs: 50 } },
      });
      const client = new AbortController();
      const sent = post(
        fleet,
        '/v1/completions',
        { model: MODEL, prompt: 'p', stream: true },
        client.signal,
      );
      const decodeLeg = await fleet.decode[0]!.next();
      client.abort();
      await expect(sent).rejects.toThrow();
      await fleet.clientGone();
      // Without the bound the decode leg would wait for a first byte that never comes.
      for (let i = 0; i < 100 && !decodeLeg.aborted; i++) await settle();
      expect(decodeLeg.aborted).toBe(true);
      expect(decodeLeg.abortedBeforeFirstByte).toBe(true);
      expect(fleet.ledger.failures).toEqual([]);
    },
  );
});

describe("SGLang: the prefill leg's answer, which nobody uses, is read within bounds", () => {
  const MiB = 1_048_576;

  it('past maxPrefillAnswerBytes it is cut once the hand-off is done, never before', async () => {
    const held = gate();
    const fleet = await startFleet({
      engine: 'sglang',
      prefill: () => ({ padding: 128 * MiB }),
      decode: () => ({ hold: held.wait }),
      handler: { disaggregation: { maxPrefillAnswerBytes: 65_536 } },
    });
    const prefillArrived = fleet.prefill[0]!.next();
    const decodeArrived = fleet.decode[0]!.next();
    const sent = post(fleet, '/v1/completions', { model: MODEL, prompt: 'p', stream: true });
    const prefillLeg = await prefillArrived;
    await decodeArrived;
    for (let i = 0; i < 100 && prefillLeg.written <= 65_536; i++) await settle();
    await settle();
    // Far past the bound, while its decode leg still waits for the KV cache: kept.
    expect(prefillLeg.written).toBeGreaterThan(65_536);
    expect(prefillLeg.aborted).toBe(false);
    held.open();
    const response = await sent;
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('decode2');
    for (let i = 0; i < 100 && !prefillLeg.aborted; i++) await settle();
    // Cut, not read to its end (which an unbounded reader would have done by now).
    expect(prefillLeg.aborted).toBe(true);
    expect(prefillLeg.written).toBeLessThan(128 * MiB);
    expect(fleet.ledger.failures).toEqual([]);
  });

  it('an answer that never ends is cut handoffTimeoutMs after the call ended', async () => {
    const fleet = await startFleet({
      engine: 'sglang',
      prefill: () => ({ stallAfterFirst: true }),
      handler: { disaggregation: { handoffTimeoutMs: 50 } },
    });
    const response = await post(fleet, '/v1/completions', {
      model: MODEL,
      prompt: 'p',
      stream: true,
    });
    expect(response.status).toBe(200);
    expect(await response.text()).toContain('decode2');
    const [prefillLeg] = all(fleet.prefill);
    for (let i = 0; i < 100 && !prefillLeg!.aborted; i++) await settle();
    expect(prefillLeg!.aborted).toBe(true);
    expect(prefillLeg!.abortedBeforeFirstByte).toBe(false);
    expect(fleet.ledger.failures).toEqual([]);
  });
});
