/**
 * Whatever sequence of answers, empty answers, failed lookups, requests in flight and time, a
 * `DnsDiscovery` keeps the registry at: the last non-empty answer (registered, `ready`), plus
 * the workers of earlier answers still draining (`draining`, with a request in flight, inside
 * `drainMs`), plus the worker registered by hand, untouched. After a first good answer the
 * registry is never emptied.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { DnsResolverLike, TtlAddress } from '../../src/dns/dns-answer.js';
import { createDnsDiscoveryWithResolver } from '../../src/dns/dns-discovery.js';
import { type WorkerLease, WorkerRegistry } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';

const POOL = ['10.0.0.1', '10.0.0.2', '10.0.0.3', '10.0.0.4'];
const url = (ip: string): string => `http://${ip}:8000`;
/** Registered by hand before the discovery starts; some answers name it too. */
const HAND = url(POOL[3]!);
const DRAIN_MS = 1_000_000_000;
const FAILURES = ['ESERVFAIL', 'ETIMEOUT', 'ECONNREFUSED', 'EREFUSED'];

type Step =
  | { readonly kind: 'answer'; readonly ips: readonly string[] }
  | { readonly kind: 'empty'; readonly code: 'ENOTFOUND' | 'ENODATA' }
  | { readonly kind: 'fail'; readonly code: string }
  | { readonly kind: 'advance'; readonly halves: number }
  | { readonly kind: 'lease'; readonly ip: string };

const step: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.subarray(POOL, { minLength: 1 }).map((ips) => ({ kind: 'answer' as const, ips })),
  },
  fc
    .constantFrom('ENOTFOUND' as const, 'ENODATA' as const)
    .map((code) => ({ kind: 'empty' as const, code })),
  fc.constantFrom(...FAILURES).map((code) => ({ kind: 'fail' as const, code })),
  {
    weight: 2,
    arbitrary: fc
      .integer({ min: 0, max: 2 })
      .map((halves) => ({ kind: 'advance' as const, halves })),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(...POOL.slice(0, 3)).map((ip) => ({ kind: 'lease' as const, ip })),
  },
);

/** Answers what the step set: addresses, or the error code of an empty or failed lookup. */
class ScriptedResolver implements DnsResolverLike {
  reply: readonly string[] | string = 'ENOTFOUND';
  resolve4(): Promise<TtlAddress[]> {
    const reply = this.reply;
    if (typeof reply === 'string')
      return Promise.reject(Object.assign(new Error(reply), { code: reply }));
    return Promise.resolve(reply.map((address) => ({ address, ttl: 30 })));
  }
  resolve6(): Promise<TtlAddress[]> {
    return typeof this.reply === 'string'
      ? this.resolve4()
      : Promise.reject(Object.assign(new Error('ENODATA'), { code: 'ENODATA' }));
  }
  resolveSrv(): Promise<never> {
    return Promise.reject(new Error('not asked'));
  }
  cancel(): void {}
}

/** What the registry must hold: the same rules, written plainly. */
class Model {
  readonly active = new Set<string>();
  readonly draining = new Map<string, number>();
  readonly busy = new Map<string, WorkerLease>();
  now = 0;
  hadGood = false;

  answer(urls: readonly string[]): void {
    this.hadGood = true;
    const mine = urls.filter((u) => u !== HAND);
    for (const u of mine) {
      this.draining.delete(u);
      this.active.add(u);
    }
    for (const u of [...this.active]) {
      if (mine.includes(u)) continue;
      this.active.delete(u);
      if (this.busy.has(u)) this.draining.set(u, this.now);
    }
  }

  sweep(): void {
    for (const [u, since] of this.draining) {
      if (this.now - since >= DRAIN_MS || !this.busy.has(u)) this.draining.delete(u);
    }
    for (const u of [...this.busy.keys()]) {
      if (!this.active.has(u) && !this.draining.has(u)) this.busy.delete(u);
    }
  }
}

describe('DnsDiscovery over any sequence of lookups', () => {
  it('keeps the last good answer plus the workers still draining, and never touches the hand-registered one', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 30 }), async (steps) => {
        const registry = await WorkerRegistry.create({ defaultStatus: 'ready' });
        const hand = await registry.register({ url: HAND, status: 'not_ready' });
        const resolver = new ScriptedResolver();
        const model = new Model();
        const discovery = createDnsDiscoveryWithResolver(
          registry,
          {
            name: 'w.test',
            port: 8000,
            drainMs: DRAIN_MS,
            intervalMs: 2_000_000_000,
            minIntervalMs: 2_000_000_000,
            clock: () => model.now,
          },
          resolver,
        );
        try {
          for (const s of steps) {
            if (s.kind === 'advance') {
              model.now += (s.halves * DRAIN_MS) / 2;
              continue;
            }
            if (s.kind === 'lease') {
              const u = url(s.ip);
              const held = model.busy.get(u);
              if (held !== undefined) {
                held.release({ ok: true, status: 200 });
                model.busy.delete(u);
              } else if (model.active.has(u) || model.draining.has(u)) {
                model.busy.set(u, registry.getByUrl(u)!.acquire());
              }
              continue;
            }
            resolver.reply = s.kind === 'answer' ? s.ips : s.code;
            const result = await discovery.refresh();
            if (s.kind === 'answer') model.answer(s.ips.map(url));
            model.sweep();
            expect(result.type).toBe(
              s.kind === 'answer' ? 'updated' : s.kind === 'empty' ? 'empty' : 'lookup_failed',
            );
            const owned = discovery.ownedUrls();
            expect(owned).toEqual([...model.active, ...model.draining.keys()].sort());
            expect(
              registry
                .getAll()
                .map((w) => w.url)
                .sort(),
            ).toEqual([...owned, HAND].sort());
            for (const u of model.active) expect(registry.getByUrl(u)!.status).toBe('ready');
            for (const u of model.draining.keys())
              expect(registry.getByUrl(u)!.status).toBe('draining');
            if (model.hadGood) expect(registry.size).toBeGreaterThan(0);
            const still = registry.getByUrl(HAND)!;
            expect([still.id, still.revision, still.status]).toEqual([
              hand.id,
              hand.revision,
              'not_ready',
            ]);
          }
        } finally {
          await discovery.close();
          registry.close();
        }
      }),
      {
        ...runs(300, 1_000),
        // A busy worker drained, then its deadline passed: always tried first.
        examples: [
          [
            [
              { kind: 'answer', ips: ['10.0.0.1', '10.0.0.2'] },
              { kind: 'lease', ip: '10.0.0.2' },
              { kind: 'answer', ips: ['10.0.0.1'] },
              { kind: 'advance', halves: 1 },
              { kind: 'fail', code: 'ETIMEOUT' },
              { kind: 'advance', halves: 1 },
              { kind: 'empty', code: 'ENOTFOUND' },
            ],
          ],
        ],
      },
    );
  });
});
