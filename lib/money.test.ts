import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { add, amountFor, cmp, Decimal, isZero, neg, stringifyJson, sub, toUnits, unitsOut } from './money';
import { NO_RETRY } from './testing/retry';

// What each helper computed with decimal.js alone: the integer fast path must give the same strings.
const reference = {
  toUnits: (a: string) => new Decimal(a).toFixed(),
  add: (a: string, b: string) => new Decimal(a).plus(b).toFixed(),
  sub: (a: string, b: string) => new Decimal(a).minus(b).toFixed(),
  neg: (a: string) => new Decimal(a).neg().toFixed(),
  cmp: (a: string, b: string) => new Decimal(a).cmp(b),
  isZero: (a: string) => new Decimal(a).isZero(),
  unitsOut: (a: string) => {
    const text = new Decimal(a).toFixed();
    const n = Number(text);
    return new Decimal(n).toFixed() === text ? n : `exact:${text}`;
  },
};
const out = (v: ReturnType<typeof unitsOut>) => (typeof v === 'number' ? v : `exact:${v.digits}`);

const digits = (min: number, max: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength: min, maxLength: max });
/** Decimal strings as PostgreSQL and callers write them: signs, leading and trailing zeros, up to 20 + 20 digits. */
const decimal = fc.oneof(
  fc.tuple(fc.constantFrom('', '-'), digits(1, 20), fc.option(digits(1, 20), { nil: undefined })).map(([s, w, f]) => `${s}${w}${f === undefined ? '' : `.${f}`}`),
  // The amounts the service mostly sees: a few digits each side.
  fc.tuple(fc.constantFrom('', '-'), digits(1, 4), fc.option(digits(1, 3), { nil: undefined })).map(([s, w, f]) => `${s}${w}${f === undefined ? '' : `.${f}`}`),
  // Around the fast path's 15-digit edge.
  fc.tuple(fc.constantFrom('', '-'), digits(13, 16), fc.option(digits(1, 3), { nil: undefined })).map(([s, w, f]) => `${s}${w}${f === undefined ? '' : `.${f}`}`),
  fc.constantFrom('0', '-0', '0.0', '-0.000', '999999999999999', '-999999999999999', '0.000000000000001', '1e3', '-2.5e-7', '100000000.00', '9007199254740993'),
);

describe('money arithmetic', NO_RETRY, () => {
  it('gives what decimal.js gives, digit for digit, for every decimal string', () => {
    fc.assert(
      fc.property(decimal, decimal, (a, b) => {
        expect(add(a, b)).toBe(reference.add(a, b));
        expect(sub(a, b)).toBe(reference.sub(a, b));
        expect(cmp(a, b)).toBe(reference.cmp(a, b));
        expect(neg(a)).toBe(reference.neg(a));
        expect(toUnits(a)).toBe(reference.toUnits(a));
        expect(isZero(a)).toBe(reference.isZero(a));
        expect(out(unitsOut(a))).toEqual(reference.unitsOut(a));
      }),
      // Three times the runs it had when it ran in three test projects: as many cases per run of the suite.
      { numRuns: 15_000 },
    );
  });

  it('keeps sums exact where doubles would round', () => {
    expect(add('0.1', '0.2')).toBe('0.3');
    expect(sub('100000000', '0.01')).toBe('99999999.99');
    expect(add('999999999999999', '999999999999999')).toBe('1999999999999998');
    // Past the fast path's 15 digits: decimal.js, still exact.
    expect(add('9007199254740993', '1')).toBe('9007199254740994');
    expect(sub('0.000000000000000001', '1')).toBe('-0.999999999999999999');
    expect(cmp('-0', '0')).toBe(0);
    expect(neg('0')).toBe('0');
    expect(toUnits('-0.500')).toBe('-0.5');
  });

  it('writes numbers a double cannot hold with all their digits', () => {
    expect(stringifyJson({ a: unitsOut('0.30') })).toBe('{"a":0.3}');
    expect(stringifyJson({ a: unitsOut('12345678901234567.89') })).toBe('{"a":12345678901234567.89}');
  });
});

describe('amountFor', () => {
  it('reads only what the object itself holds for a denomination', () => {
    const amounts: Record<string, string> = { tokens: '5', constructor: '2' };
    expect(amountFor(amounts, 'tokens')).toBe('5');
    expect(amountFor(amounts, 'constructor')).toBe('2');
    for (const inherited of ['valueOf', 'toString', 'hasOwnProperty', 'isPrototypeOf']) expect(amountFor(amounts, inherited)).toBeUndefined();
    expect(amountFor({}, 'constructor')).toBeUndefined();
    expect(amountFor(null, 'tokens')).toBeUndefined();
  });
});
