import { describe, expect, it } from 'vitest';
import {
  escapeHtml,
  formatCacheTokens,
  formatDuration,
  formatDurationTick,
  formatFixed,
  formatInteger,
  formatNumber,
  formatPercent,
  formatPercentTick,
  formatTickValue,
  truncate,
} from '../../../src/sim/report/format.js';

describe('report formatting', () => {
  it('escapes the five HTML-significant characters', () => {
    expect(escapeHtml(`<b>&"x"'`)).toBe('&lt;b&gt;&amp;&quot;x&quot;&#39;');
    expect(escapeHtml('plain')).toBe('plain');
  });

  it('groups thousands without the host locale', () => {
    expect(formatInteger(1_234_567.4)).toBe('1,234,567');
    expect(formatInteger(-12_345)).toBe('-12,345');
    expect(formatFixed(12_345.678, 2)).toBe('12,345.68');
    expect(formatFixed(-0.0001, 1)).toBe('0.0');
  });

  it('keeps about three significant figures', () => {
    expect([0.4231, 1.24, 57.34, 142.6, 12_345.2].map(formatNumber)).toEqual([
      '0.42',
      '1.24',
      '57.3',
      '143',
      '12,345',
    ]);
  });

  it('shows — for NaN and ±Infinity', () => {
    for (const f of [formatNumber, formatInteger, formatPercent, formatDuration, formatTickValue]) {
      expect(f(Number.NaN)).toBe('—');
      expect(f(Number.POSITIVE_INFINITY)).toBe('—');
      expect(f(Number.NEGATIVE_INFINITY)).toBe('—');
    }
  });

  it('writes percentages with one decimal and durations in ms or s', () => {
    expect(formatPercent(0.8619)).toBe('86.2%');
    expect(formatPercent(0)).toBe('0.0%');
    expect(formatDuration(31.42)).toBe('31.4 ms');
    expect(formatDuration(9012)).toBe('9.01 s');
    expect(formatDurationTick(500)).toBe('500 ms');
    expect(formatDurationTick(2500)).toBe('2.5 s');
    expect(formatPercentTick(0.6000000000000001)).toBe('60%');
  });

  it('calls an infinite cache unbounded', () => {
    expect(formatCacheTokens(Number.POSITIVE_INFINITY)).toBe('unbounded');
    expect(formatCacheTokens(262_144)).toBe('262,144 tokens');
  });

  it('truncates long labels with an ellipsis and leaves short ones alone', () => {
    expect(truncate('cache_aware', 200, 12)).toBe('cache_aware');
    const cut = truncate('a_very_long_policy_name_indeed', 72, 12);
    expect(cut.endsWith('…')).toBe(true);
    expect([...cut]).toHaveLength(10);
  });
});
