/**
 * Why `passthrough` is not among the default policies, and that every description of it says
 * what it does: the first available worker in list order, whatever the request carries.
 */
import { readFile } from 'node:fs/promises';
import { describe, expect, it } from 'vitest';
import { SIMULATE_HELP } from '../../src/cli/simulate-options.js';
import { DEFAULT_POLICIES, generatedSharedPrefix, simulate } from '../../src/sim/index.js';

const read = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('passthrough in the simulator', () => {
  it('sends every request to the first worker, whatever its routing key', async () => {
    const run = await simulate({
      workload: generatedSharedPrefix({ groups: 4, promptsPerGroup: 4 }),
      policy: 'passthrough',
      fleet: { workers: 4 },
    });
    expect(run.load.perWorker).toEqual([16, 0, 0, 0]);
    expect(DEFAULT_POLICIES).not.toContain('passthrough');
  });

  it('is described as that everywhere, never as following an explicit target', async () => {
    const texts = {
      'docs/simulator.md': await read('docs/simulator.md'),
      'src/sim/compare.ts': await read('src/sim/compare.ts'),
      help: SIMULATE_HELP,
    };
    for (const [where, text] of Object.entries(texts)) {
      expect(text, where).not.toMatch(/explicit\s+target/);
      const flat = text.replace(/\s*\n\s*(\* )?/g, ' ');
      expect(flat, where).toMatch(/passthrough`?, which always picks the first available worker/);
    }
  });
});
