/**
 * The report in a real browser: a report of a real comparison, rendered by chromium at desktop
 * and phone widths, has no errors, draws every chart with its axes and legend, does not overflow
 * the viewport and keeps its text readable. Skipped when no chromium executable is found,
 * unless `CI` is set: there it must run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { comparePolicies } from '../../../src/sim/compare.js';
import { renderHtmlReport } from '../../../src/sim/report/index.js';
import type { Comparison } from '../../../src/sim/result.js';
import { multiTurnChat } from '../../../src/sim/workloads/index.js';

/** The chromium to drive: `CHROMIUM_PATH`, else `chromium` on the PATH; `undefined` when none. */
function findChromium(): string | undefined {
  const given = process.env.CHROMIUM_PATH;
  if (given !== undefined && given !== '') return existsSync(given) ? given : undefined;
  for (const name of ['chromium', 'chromium-browser']) {
    try {
      const path = execFileSync('which', [name], { encoding: 'utf8' }).trim();
      if (path !== '') return path;
    } catch {
      // not on the PATH
    }
  }
  return undefined;
}

const executable = findChromium();
const required = (process.env.CI ?? '') !== '';
if (executable === undefined && !required) {
  console.warn(
    'test/sim/report/browser.test.ts skipped: no chromium executable found (set CHROMIUM_PATH or ' +
      'install it: apt-get install -y chromium). With CI set, this test fails instead.',
  );
}

/** What a page check found wrong, one sentence each; empty when all is well. */
interface PageFindings {
  readonly overflow: string[];
  readonly smallText: string[];
  readonly charts: string[];
  readonly visibleCharts: number;
}

/** The source of the in-page checks (a function expression), evaluated in the browser. */
const INSPECT = readFileSync(new URL('./page-checks.js', import.meta.url), 'utf8').replace(
  /^[\s\S]*?(?=function inspect)/,
  '',
);

const VIEWPORTS = [
  { name: 'desktop', width: 1280, height: 800 },
  { name: 'phone', width: 390, height: 844 },
] as const;

/** The pages checked: a plain comparison, and one at 130 % load with admission, tenants and priorities. */
const PAGES = ['plain', 'with admission'] as const;

describe.skipIf(executable === undefined && !required)('the HTML report in chromium', () => {
  let browser: Browser | undefined;
  const comparisons = new Map<(typeof PAGES)[number], Comparison>();
  const pages = new Map<(typeof PAGES)[number], string>();

  beforeAll(async () => {
    if (executable === undefined) {
      throw new Error(
        'CI is set but no chromium executable was found: install it (apt-get install -y chromium) or set CHROMIUM_PATH',
      );
    }
    browser = await chromium.launch({ executablePath: executable, args: ['--no-sandbox'] });
    const common = {
      workload: multiTurnChat({ users: 24, rounds: 4 }),
      fleet: { workers: 4 },
      seed: 7,
    } as const;
    comparisons.set('plain', await comparePolicies(common));
    comparisons.set(
      'with admission',
      await comparePolicies({
        ...common,
        policies: ['round_robin', 'cache_aware'],
        load: 1.3,
        admission: { maxPrefilling: 1, maxWaitMs: 300 },
        tenants: 3,
        heavyTenantFactor: 6,
        lowPriorityShare: 0.3,
      }),
    );
    for (const [name, comparison] of comparisons) {
      pages.set(name, renderHtmlReport(comparison, { generatedAt: new Date(0) }));
    }
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
  });

  async function open(
    html: string,
    width: number,
    height: number,
  ): Promise<{ page: Page; errors: string[] }> {
    const page = await browser!.newPage({ viewport: { width, height } });
    const errors: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(`console: ${m.text()}`);
    });
    page.on('pageerror', (e) => errors.push(`page: ${e.message}`));
    await page.setContent(html, { waitUntil: 'load' });
    return { page, errors };
  }

  for (const [name, viewport] of PAGES.flatMap((p) => VIEWPORTS.map((v) => [p, v] as const))) {
    describe(`${name}, at ${viewport.name} width (${viewport.width} × ${viewport.height})`, () => {
      let findings: PageFindings;
      let errors: string[];

      beforeAll(async () => {
        const opened = await open(pages.get(name)!, viewport.width, viewport.height);
        errors = opened.errors;
        findings = (await opened.page.evaluate(`(${INSPECT})(10)`)) as PageFindings;
        await opened.page.close();
      });

      it('logs no console error and throws no page error', () => {
        expect(errors).toEqual([]);
      });

      it('draws every chart, each with tick labels, a legend for its series and non-empty lines', () => {
        const runs = comparisons.get(name)!.runs.length;
        const admission = name === 'with admission' ? 2 : 0; // outcomes, priority bands
        expect(pages.get(name)!.includes('aria-label="Time to first token p99 by priority')).toBe(
          admission > 0,
        );
        expect(findings.visibleCharts).toBeGreaterThanOrEqual(4 + runs + admission);
        expect(findings.charts).toEqual([]);
      });

      it('nothing overflows the viewport except inside a scrolling element', () => {
        expect(findings.overflow).toEqual([]);
      });

      it('body text is at least 12 px and chart text is drawn at 10 px or more', () => {
        expect(findings.smallText).toEqual([]);
      });
    });
  }
});
