/**
 * `CounterSeries` counts a counter's series itself and writes them into prom-client at each
 * scrape: after any sequence of adds and drops, the counter prom-client serves is exactly the
 * model's.
 */
import fc from 'fast-check';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { CounterSeries } from '../../src/prometheus/counter-series.js';
import { runs } from '../helpers/fc-settings.js';

const NAMES = ['worker', 'model', 'outcome'];
const value = fc.constantFrom('', 'a', 'b', 'c', 'a\u0000b');

describe('CounterSeries', () => {
  it('property: the flushed counter equals a model of adds and drops', async () => {
    const step = fc.oneof(
      fc.record({
        op: fc.constant('add' as const),
        by: fc.integer({ min: 1, max: 5 }),
        v: fc.tuple(value, value, value),
      }),
      fc.record({
        op: fc.constant('drop' as const),
        label: fc.constantFrom(...NAMES, 'absent'),
        v: value,
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
        const registry = new Registry();
        const series = new CounterSeries(NAMES);
        const counter: Counter = new Counter({
          name: 'c_total',
          help: 'h',
          labelNames: NAMES,
          registers: [registry],
          collect: () => series.flush(counter),
        });
        const model = new Map<string, number>();
        for (const s of steps) {
          if (s.op === 'add') {
            series.add(s.by, ...s.v);
            const key = JSON.stringify(s.v);
            model.set(key, (model.get(key) ?? 0) + s.by);
          } else {
            series.dropWhere(s.label, (v) => v === s.v);
            const i = NAMES.indexOf(s.label);
            if (i >= 0)
              for (const key of [...model.keys()])
                if ((JSON.parse(key) as string[])[i] === s.v) model.delete(key);
          }
        }
        const served = (await counter.get()).values.map((v) => [
          JSON.stringify(NAMES.map((n) => v.labels[n])),
          v.value,
        ]);
        expect(new Map(served as [string, number][])).toEqual(model);
        expect(series.size).toBe(model.size);
      }),
      runs(100, 1_000),
    );
  });
});
