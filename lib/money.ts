import Decimal from 'decimal.js';

// Units are decimal strings in code and `numeric` in SQL; never JS floats for arithmetic.
Decimal.set({ precision: 60, rounding: Decimal.ROUND_HALF_UP });

export { Decimal };
export type Units = string;

export const MAX_DECIMALS = 12;

/** Parses a caller's number or numeric string into a canonical decimal string, or null. */
export function parseUnits(value: unknown): Units | null {
  if (typeof value !== 'number' && typeof value !== 'string') return null;
  if (typeof value === 'number' && !Number.isFinite(value)) return null;
  const text = typeof value === 'number' ? String(value) : value.trim();
  if (!/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/.test(text)) return null;
  let d: Decimal;
  try {
    d = new Decimal(text);
  } catch {
    return null;
  }
  if (!d.isFinite() || d.abs().gte('1e18') || d.decimalPlaces() > MAX_DECIMALS) return null;
  return d.toFixed();
}

export const add = (a: Units, b: Units): Units => new Decimal(a).plus(b).toFixed();
export const sub = (a: Units, b: Units): Units => new Decimal(a).minus(b).toFixed();
export const neg = (a: Units): Units => new Decimal(a).neg().toFixed();
export const cmp = (a: Units, b: Units): number => new Decimal(a).cmp(b);
export const isZero = (a: Units): boolean => new Decimal(a).isZero();

/** Units for output: JSON numbers rendered from the exact decimal ("0.30" becomes 0.3). */
export function unitsOut(value: Units | null | undefined): number {
  if (value === null || value === undefined) return 0;
  return Number(new Decimal(value).toFixed());
}

/** Rounds a decimal amount of cents half up to whole cents, as an integer. */
export function roundCents(value: Decimal.Value): number {
  return new Decimal(value).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber();
}
