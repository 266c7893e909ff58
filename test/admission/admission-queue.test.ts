/**
 * `AdmissionQueue` scenarios: the exact order a queue serves, what a full queue sheds, removals
 * from anywhere, and the deadline order.
 */
import { describe, expect, it } from 'vitest';
import { AdmissionQueue, QueueEntry } from '../../src/admission/admission-queue.js';

type Spec = readonly [id: string, priority: number, tenant: string, size?: number];

function filled(specs: readonly Spec[], maxCount = 100, maxSize = 10_000) {
  const queue = new AdmissionQueue<string>(maxCount, maxSize);
  const entries = new Map<string, QueueEntry<string>>();
  specs.forEach(([id, priority, tenant, size = 1], i) => {
    const entry = new QueueEntry(id, priority, tenant, size, i, i + 100);
    entries.set(id, entry);
    queue.push(entry);
  });
  return { queue, entries };
}

function drain(queue: AdmissionQueue<string>): string[] {
  const out: string[] = [];
  for (let e = queue.pop(); e !== undefined; e = queue.pop()) out.push(e.value);
  return out;
}

describe('AdmissionQueue order', () => {
  const cases: readonly { name: string; specs: readonly Spec[]; order: string }[] = [
    {
      name: 'one tenant, one band: arrival order',
      specs: [
        ['a1', 0, 'a'],
        ['a2', 0, 'a'],
        ['a3', 0, 'a'],
      ],
      order: 'a1 a2 a3',
    },
    {
      name: 'a higher band first, whatever arrived before it',
      specs: [
        ['low1', 0, 'a'],
        ['low2', 0, 'b'],
        ['high', 3, 'c'],
        ['mid', 1, 'a'],
      ],
      order: 'high mid low1 low2',
    },
    {
      name: 'tenants of equal sizes in turn, a heavy tenant no more often than the others',
      specs: [
        ['h1', 0, 'heavy'],
        ['h2', 0, 'heavy'],
        ['h3', 0, 'heavy'],
        ['h4', 0, 'heavy'],
        ['l1', 0, 'light'],
        ['l2', 0, 'light'],
      ],
      order: 'h1 l1 h2 l2 h3 h4',
    },
    {
      name: 'by size served: one long request is worth several short ones',
      specs: [
        ['long1', 0, 'a', 30],
        ['long2', 0, 'a', 30],
        ['s1', 0, 'b', 10],
        ['s2', 0, 'b', 10],
        ['s3', 0, 'b', 10],
        ['s4', 0, 'b', 10],
      ],
      order: 'long1 s1 s2 s3 long2 s4',
    },
    {
      name: 'negative priorities below zero',
      specs: [
        ['neg', -5, 'a'],
        ['zero', 0, 'a'],
      ],
      order: 'zero neg',
    },
  ];
  it.each(cases)('$name', ({ specs, order }) => {
    expect(drain(filled(specs).queue).join(' ')).toBe(order);
  });

  it('a tenant that starts waiting later starts at the band’s current service, not at zero', () => {
    const { queue } = filled([
      ['a1', 0, 'a'],
      ['a2', 0, 'a'],
      ['a3', 0, 'a'],
      ['a4', 0, 'a'],
    ]);
    expect(queue.pop()!.value).toBe('a1');
    expect(queue.pop()!.value).toBe('a2');
    // b has been idle: it gets its turn next, then they alternate (b does not get three in a row).
    for (const id of ['b1', 'b2', 'b3']) queue.push(new QueueEntry(id, 0, 'b', 1, 10, 110));
    expect(drain(queue).join(' ')).toBe('b1 a3 b2 a4 b3');
  });
});

describe('AdmissionQueue bounds', () => {
  it('refuses the newest of the lowest band when the new entry is in it, changing nothing', () => {
    const { queue } = filled(
      [
        ['a', 1, 't'],
        ['b', 0, 't'],
      ],
      2,
    );
    const refused = new QueueEntry('c', 0, 't', 1, 9, 109);
    expect(queue.push(refused)).toEqual({ queued: false, shed: [] });
    expect(refused.queued).toBe(false);
    expect(drain(queue)).toEqual(['a', 'b']);
  });

  it('sheds lower bands’ newest entries, as many as it takes, for a higher one', () => {
    const { queue } = filled(
      [
        ['low1', 0, 't', 10],
        ['low2', 0, 'u', 10],
        ['mid', 1, 't', 10],
      ],
      10,
      30,
    );
    const result = queue.push(new QueueEntry('high', 2, 't', 20, 9, 109));
    expect(result.queued).toBe(true);
    expect(result.shed.map((e) => e.value)).toEqual(['low2', 'low1']);
    expect(drain(queue)).toEqual(['high', 'mid']);
  });

  it('refuses an entry the lower bands cannot make room for, shedding nothing', () => {
    const { queue } = filled(
      [
        ['low', 0, 't', 3],
        ['same', 2, 't', 10],
      ],
      10,
      25,
    );
    expect(queue.push(new QueueEntry('big', 2, 't', 16, 9, 109))).toEqual({
      queued: false,
      shed: [],
    });
    expect(queue.push(new QueueEntry('huge', 9, 't', 26, 9, 109))).toEqual({
      queued: false,
      shed: [],
    });
    expect(queue.count).toBe(2);
  });

  it('removes from anywhere, keeps the oldest for deadlines, and forgets emptied tenants and bands', () => {
    const { queue, entries } = filled([
      ['a', 0, 't'],
      ['b', 1, 'u'],
      ['c', 0, 't'],
    ]);
    expect(queue.peekOldest()!.value).toBe('a');
    expect(queue.nextDeadline).toBe(100);
    expect(queue.remove(entries.get('a')!)).toBe(true);
    expect(queue.remove(entries.get('a')!)).toBe(false);
    expect(queue.peekOldest()!.value).toBe('b');
    expect(queue.remove(entries.get('b')!)).toBe(true);
    expect(queue.highestPriority).toBe(0);
    expect(drain(queue)).toEqual(['c']);
    expect(queue.nextDeadline).toBe(Number.POSITIVE_INFINITY);
    expect(queue.highestPriority).toBe(Number.NEGATIVE_INFINITY);
  });
});
