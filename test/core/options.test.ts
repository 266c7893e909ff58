import { describe, expect, it } from 'vitest';
import {
  describe as describeValue,
  fail,
  isWellFormed,
  readBoolean,
  readEnum,
  readInteger,
  readNumber,
  readObject,
  readString,
} from '../../src/core/options.js';
import { throwsCode } from '../support/fixtures.js';

describe('describe (rendering a rejected value)', () => {
  it.each([
    ['a short string', 'abc', '"abc"'],
    ['a bigint', 12n, '12n'],
    ['an array', [1, 2], 'an array'],
    ['an object', { a: 1 }, 'an object'],
    ['null', null, 'null'],
    ['undefined', undefined, 'undefined'],
    ['NaN', Number.NaN, 'NaN'],
    ['a boolean', true, 'true'],
  ])('renders %s as %s', (_label, value, expected) => {
    expect(describeValue(value)).toBe(expected);
  });

  it('bounds a long string to 64 characters plus its length', () => {
    // Act
    const shown = describeValue('x'.repeat(10_000));

    // Assert
    expect(shown).toBe(JSON.stringify(`${'x'.repeat(64)}… (10000 chars)`));
  });
});

describe('fail', () => {
  it('throws INVALID_ARGUMENT in the form "<field> must be <rule>, got <value>"', () => {
    const error = throwsCode(() => fail('spec.cost', 'a number', 'x'), 'INVALID_ARGUMENT');
    expect(error.message).toBe('spec.cost must be a number, got "x"');
  });
});

describe('readObject', () => {
  it('returns an empty object for undefined and the object itself otherwise', () => {
    const given = { a: 1 };
    expect(readObject('o', undefined)).toEqual({});
    expect(readObject('o', given)).toBe(given);
  });

  it.each([
    ['null', null],
    ['an array', []],
    ['a number', 1],
    ['a string', 's'],
  ])('rejects %s naming the field', (_label, value) => {
    const error = throwsCode(() => readObject('options.x', value), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/^options\.x must be an object/);
  });
});

describe('readNumber', () => {
  it('returns the fallback for undefined and the value inside the range', () => {
    expect(readNumber('n', undefined, 7)).toBe(7);
    expect(readNumber('n', 0.5, 7, 0, 1)).toBe(0.5);
    expect(readNumber('n', 1, 7, 0, 1)).toBe(1);
  });

  it.each([
    ['NaN', Number.NaN],
    ['Infinity', Number.POSITIVE_INFINITY],
    ['below the minimum', -0.1],
    ['above the maximum', 1.1],
    ['a numeric string', '1'],
    ['null', null],
  ])('rejects %s naming the field', (_label, value) => {
    const error = throwsCode(() => readNumber('cfg.jitter', value, 0, 0, 1), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/^cfg\.jitter must be a finite number between 0 and 1/);
  });
});

describe('readInteger', () => {
  it('returns the fallback for undefined and the value inside the range', () => {
    expect(readInteger('i', undefined, 3)).toBe(3);
    expect(readInteger('i', 5, 3, 1, 5)).toBe(5);
  });

  it.each([
    ['a fraction', 1.5],
    ['NaN', Number.NaN],
    ['below the minimum', 0],
    ['above the maximum', 6],
    ['a bigint', 2n],
  ])('rejects %s naming the field', (_label, value) => {
    const error = throwsCode(() => readInteger('cfg.count', value, 3, 1, 5), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/^cfg\.count must be an integer between 1 and 5/);
  });
});

describe('readBoolean', () => {
  it('returns the fallback for undefined and the boolean otherwise', () => {
    expect(readBoolean('b', undefined, true)).toBe(true);
    expect(readBoolean('b', false, true)).toBe(false);
  });

  it('rejects a truthy non-boolean naming the field', () => {
    const error = throwsCode(() => readBoolean('cfg.disabled', 1, false), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/^cfg\.disabled must be a boolean, got 1$/);
  });
});

describe('readEnum', () => {
  const allowed = ['a', 'b'] as const;

  it('returns the fallback for undefined and an allowed value otherwise', () => {
    expect(readEnum('e', undefined, allowed, 'a')).toBe('a');
    expect(readEnum('e', 'b', allowed, 'a')).toBe('b');
  });

  it.each([['c'], ['A'], [1], [null]])('rejects %s listing the allowed values', (value) => {
    const error = throwsCode(() => readEnum('spec.type', value, allowed, 'a'), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/^spec\.type must be one of 'a', 'b'/);
  });
});

describe('isWellFormed', () => {
  it.each([
    ['ascii', 'abc', true],
    ['a surrogate pair (emoji)', 'a😀b', true],
    ['empty', '', true],
    ['a lone high surrogate', 'a\uD800b', false],
    ['a lone low surrogate', 'a\uDC00b', false],
    ['a trailing high surrogate', 'ab\uD83D', false],
    ['reversed pair', '\uDE00\uD83D', false],
  ])('%s → %s', (_label, value, expected) => {
    expect(isWellFormed(value)).toBe(expected);
  });
});

describe('readString', () => {
  it('returns a non-empty, well-formed string within the length limit', () => {
    expect(readString('s', 'llama', 5)).toBe('llama');
  });

  it.each([
    ['empty', ''],
    ['too long', 'abcdef'],
    ['a lone surrogate', 'a\uD800'],
    ['a number', 5],
    ['undefined', undefined],
  ])('rejects %s naming the field', (_label, value) => {
    const error = throwsCode(() => readString('model', value, 5), 'INVALID_ARGUMENT');
    expect(error.message).toMatch(/^model must be a non-empty, well-formed string of at most 5/);
  });
});
