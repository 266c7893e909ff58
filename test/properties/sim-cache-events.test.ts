/**
 * The events of a simulated engine's cache describe it exactly: replaying every stored and
 * removed block (and forgetting everything at a restart, as a router told `cleared` does) gives
 * the blocks the cache holds, after any sequence of submits, steps and restarts.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { blockKeys } from '../../src/sim/block-keys.js';
import { Engine } from '../../src/sim/engine.js';
import { EventQueue } from '../../src/sim/event-queue.js';
import { DEFAULT_FLEET_MODEL } from '../../src/sim/fleet-model.js';
import type { SimRequest } from '../../src/sim/workload.js';
import { runs } from '../helpers/fc-settings.js';

const BLOCK = 4;
/** Tags per block: the block's key, then its negation (two pages per block). */
const PER = 2;

type Op =
  | {
      readonly kind: 'submit';
      readonly prefix: number;
      readonly own: number;
      readonly answer: number;
    }
  | { readonly kind: 'step' }
  | { readonly kind: 'restart' };

const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    kind: fc.constant('submit' as const),
    prefix: fc.integer({ min: 0, max: 3 }),
    own: fc.integer({ min: 1, max: 12 }),
    answer: fc.integer({ min: 0, max: 9 }),
  }),
  fc.constant({ kind: 'step' as const }),
  fc.constant({ kind: 'restart' as const }),
);

function tokens(prefix: number, length: number, salt: number): Uint32Array {
  const t = new Uint32Array(length);
  for (let i = 0; i < length; i++) t[i] = i < 8 ? prefix * 100 + i : salt * 1_000 + i;
  return t;
}

describe('simulated cache events', () => {
  it('replayed, they equal the cache after every operation', () => {
    fc.assert(
      fc.property(
        fc.array(op, { maxLength: 80 }),
        fc.integer({ min: 4, max: 40 }),
        (ops, blocks) => {
          const model = {
            ...DEFAULT_FLEET_MODEL,
            blockSize: BLOCK,
            cacheTokens: blocks * BLOCK,
            maxRunning: 4,
          };
          const queue = new EventQueue();
          let now = 0;
          const engine = new Engine(0, model, {
            wakeAt: (time) => queue.push(time, 0, 0),
            completed: () => undefined,
          });
          const replayed = new Set<number>();
          engine.cache.observe(PER, {
            stored: (tags, from, count) => {
              for (let i = from; i < from + count; i++) replayed.add(tags[i]!);
            },
            removed: (tags, from, count) => {
              for (let i = from; i < from + count; i++)
                expect(replayed.delete(tags[i]!)).toBe(true);
            },
          });
          const held = (): number[] => {
            const keys: number[] = [];
            engine.cache.forEachTagged((tags, from, count) => {
              for (let i = from; i < from + count; i++) keys.push(tags[i]!);
            });
            return keys.sort((a, b) => a - b);
          };
          let id = 0;
          const check = () => expect([...replayed].sort((a, b) => a - b)).toEqual(held());
          for (const o of ops) {
            if (o.kind === 'submit') {
              const prompt = tokens(o.prefix, 8 + o.own, id + 1);
              const answer = o.answer > 0 ? tokens(9, o.answer, 500 + id) : undefined;
              const request: SimRequest = {
                id,
                promptLength: prompt.length,
                tokens: () => prompt,
                outputLength: Math.max(1, o.answer),
                ...(answer === undefined ? {} : { outputTokens: answer }),
              };
              id++;
              const keys = blockKeys(prompt, BLOCK, answer);
              const tags = new Float64Array(keys.length * PER);
              keys.forEach((k, i) => {
                tags[i * PER] = k;
                tags[i * PER + 1] = -k - 1;
              });
              engine.submit(request, keys, undefined, now, tags);
            } else if (o.kind === 'step') {
              const next = queue.pop();
              if (next !== undefined) {
                now = next.time;
                engine.step(now);
              }
            } else {
              engine.restart();
              replayed.clear();
              expect(held()).toEqual([]);
            }
            check();
            expect(engine.cache.used).toBeGreaterThanOrEqual(held().length / PER);
          }
          for (let next = queue.pop(); next !== undefined; next = queue.pop()) {
            now = next.time;
            engine.step(now);
            check();
          }
          // Every request done: nothing is pinned or private any more.
          expect(engine.inFlight).toBe(0);
          expect(engine.cache.used).toBe(held().length / PER);
        },
      ),
      runs(200, 1_000),
    );
  });
});
