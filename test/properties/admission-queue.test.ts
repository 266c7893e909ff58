/**
 * The admission queue against a plain model: strict bands, FIFO within a tenant, bounds in count
 * and size, shedding the lowest band's newest, every entry ending exactly once; and fairness
 * between tenants that keep requests waiting in one band.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { AdmissionQueue, QueueEntry } from '../../src/admission/admission-queue.js';
import { runs } from '../helpers/fc-settings.js';

type Op =
  | {
      readonly kind: 'push';
      readonly priority: number;
      readonly tenant: string;
      readonly size: number;
    }
  | { readonly kind: 'pop' }
  | { readonly kind: 'remove'; readonly pick: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('push' as const),
      priority: fc.integer({ min: -2, max: 2 }),
      tenant: fc.constantFrom('a', 'b', 'c'),
      size: fc.integer({ min: 0, max: 20 }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('pop' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }) },
);

describe('AdmissionQueue (properties)', () => {
  it('serves the highest band first, each tenant in arrival order, within its bounds, and ends every entry exactly once', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 60 }),
        fc.array(op, { maxLength: 120 }),
        (maxCount, maxSize, ops) => {
          const queue = new AdmissionQueue<number>(maxCount, maxSize);
          /** The model: what is queued, in arrival order. */
          let model: QueueEntry<number>[] = [];
          const ends = new Map<number, number>();
          const end = (e: QueueEntry<number>): void => {
            ends.set(e.value, (ends.get(e.value) ?? 0) + 1);
          };
          let id = 0;
          const checkPop = (popped: QueueEntry<number> | undefined): void => {
            if (model.length === 0) {
              expect(popped).toBeUndefined();
              return;
            }
            expect(popped).toBeDefined();
            const top = Math.max(...model.map((e) => e.priority));
            expect(popped!.priority).toBe(top);
            const sameLine = model.filter((e) => e.priority === top && e.tenant === popped!.tenant);
            expect(sameLine[0]).toBe(popped);
            model = model.filter((e) => e !== popped);
            end(popped!);
          };
          for (const o of ops) {
            if (o.kind === 'push') {
              const e = new QueueEntry(id++, o.priority, o.tenant, o.size, 0, 0);
              const lowestBefore = Math.min(...model.map((m) => m.priority));
              const result = queue.push(e);
              if (!result.queued) {
                // Refused: its band is the lowest, or the lower bands could not free enough.
                expect(result.shed).toHaveLength(0);
                end(e);
              } else {
                for (const shed of result.shed) {
                  // The lowest band's newest, each time.
                  const lowest = Math.min(...model.map((m) => m.priority));
                  expect(shed.priority).toBe(lowest);
                  expect(shed.priority).toBeLessThan(o.priority);
                  expect(shed.priority).toBeGreaterThanOrEqual(lowestBefore);
                  const band = model.filter((m) => m.priority === lowest);
                  expect(band.at(-1)).toBe(shed);
                  model = model.filter((m) => m !== shed);
                  end(shed);
                }
                model.push(e);
              }
              const fits =
                model.length <= maxCount && model.reduce((s, m) => s + m.size, 0) <= maxSize;
              expect(fits).toBe(true);
              if (!result.queued) {
                // It would have fitted only by pushing out its own band or a higher one.
                expect(
                  e.size > maxSize ||
                    model.some((m) => m.priority >= o.priority) ||
                    model.length < maxCount,
                ).toBe(true);
              }
            } else if (o.kind === 'pop') {
              checkPop(queue.pop());
            } else if (model.length > 0) {
              const victim = model[o.pick % model.length]!;
              expect(queue.remove(victim)).toBe(true);
              expect(queue.remove(victim)).toBe(false);
              model = model.filter((m) => m !== victim);
              end(victim);
            }
            expect(queue.count).toBe(model.length);
            expect(queue.size).toBe(model.reduce((s, m) => s + m.size, 0));
            expect(queue.peekOldest()).toBe(model[0]);
          }
          while (model.length > 0) checkPop(queue.pop());
          expect(queue.pop()).toBeUndefined();
          expect(ends.size).toBe(id);
          for (const count of ends.values()) expect(count).toBe(1);
        },
      ),
      runs(300, 2000),
    );
  });

  it('gives tenants that keep requests waiting in one band shares of served size within one request of each other', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 2, max: 4 }),
        fc.array(fc.integer({ min: 1, max: 50 }), { minLength: 40, maxLength: 200 }),
        fc.integer({ min: 1, max: 10 }),
        (tenants, sizes, heavy) => {
          const queue = new AdmissionQueue<number>(1_000_000, 1_000_000_000);
          // Tenant 0 sends `heavy` times as many requests; all are queued before any is served.
          let id = 0;
          for (let i = 0; i < sizes.length; i++) {
            const tenant = i % (tenants + heavy - 1);
            const t = tenant < heavy ? 0 : tenant - heavy + 1;
            queue.push(new QueueEntry(id++, 0, `t${t}`, sizes[i]!, 0, 0));
          }
          const maxEntry = Math.max(...sizes);
          const served = new Map<string, number>();
          const left = new Map<string, number>();
          for (const e of queueEntries(queue)) left.set(e.tenant, (left.get(e.tenant) ?? 0) + 1);
          while (left.size === tenants && [...left.values()].every((n) => n > 0)) {
            const e = queue.pop()!;
            served.set(e.tenant, (served.get(e.tenant) ?? 0) + e.size);
            left.set(e.tenant, left.get(e.tenant)! - 1);
            if (left.get(e.tenant) === 0) break;
            const values = [...served.values()];
            if (served.size === tenants)
              expect(Math.max(...values) - Math.min(...values)).toBeLessThanOrEqual(maxEntry);
          }
        },
      ),
      runs(300, 2000),
    );
  });
});

function queueEntries(queue: AdmissionQueue<number>): QueueEntry<number>[] {
  return queue.entries();
}
