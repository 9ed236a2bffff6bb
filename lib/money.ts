import { randomBytes } from 'node:crypto';
import Decimal from 'decimal.js';

// Units are decimal strings in code and `numeric` in SQL; never JS floats for arithmetic.
Decimal.set({ precision: 60, rounding: Decimal.ROUND_HALF_UP });

export { Decimal };
export type Units = string;

export const MAX_DECIMALS = 12;

/** The most one card payment can be: the processor refuses more than $999,999.99. */
export const MAX_CHARGE_CENTS = 99_999_999;

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

/** The canonical decimal string of a value (no exponent, no trailing zeros): `Units`. */
export const toUnits = (value: Decimal.Value): Units => new Decimal(value).toFixed();

export const add = (a: Units, b: Units): Units => new Decimal(a).plus(b).toFixed();
export const sub = (a: Units, b: Units): Units => new Decimal(a).minus(b).toFixed();
export const neg = (a: Units): Units => new Decimal(a).neg().toFixed();
export const cmp = (a: Units, b: Units): number => new Decimal(a).cmp(b);
export const isZero = (a: Units): boolean => new Decimal(a).isZero();

// Marks an exact number inside JSON.stringify's output; random so no stored text can forge it.
const EXACT_MARK = `\u0000exact${randomBytes(6).toString('hex')}:`;
const EXACT_IN_JSON = new RegExp(`"${EXACT_MARK.replace('\u0000', '\\\\u0000')}(-?\\d+(?:\\.\\d+)?)"`, 'g');

/** A decimal that a JS number cannot hold exactly; `stringifyJson` writes it as its exact literal. */
export class ExactNumber {
  constructor(readonly digits: string) {}
  toJSON(): string {
    return EXACT_MARK + this.digits;
  }
  toString(): string {
    return this.digits;
  }
}

/**
 * Units for output: JSON numbers rendered from the exact decimal ("0.30" becomes 0.3). A value a
 * double cannot hold (more than ~15 significant digits) stays exact through `stringifyJson`.
 */
export function unitsOut(value: Units | null | undefined): number | ExactNumber {
  if (value === null || value === undefined) return 0;
  const text = new Decimal(value).toFixed();
  const n = Number(text);
  return new Decimal(n).toFixed() === text ? n : new ExactNumber(text);
}

/** JSON.stringify, with every ExactNumber written as a number literal of all its digits. */
export function stringifyJson(value: unknown): string {
  const text = JSON.stringify(value);
  return text.includes('exact') ? text.replace(EXACT_IN_JSON, '$1') : text;
}

/** Rounds a decimal amount of cents half up to whole cents, as an integer. */
export function roundCents(value: Decimal.Value): number {
  return new Decimal(value).toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber();
}
