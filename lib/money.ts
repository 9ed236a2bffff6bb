import Decimal from 'decimal.js';

// Units are decimal strings in code and `numeric` in SQL; never JS floats for arithmetic.
Decimal.set({ precision: 60, rounding: Decimal.ROUND_HALF_UP });

export { Decimal };
export type Units = string;

export const MAX_DECIMALS = 12;

/** The most one card payment can be: the processor refuses more than $999,999.99. */
export const MAX_CHARGE_CENTS = 99_999_999;
/** The smallest card payment the processor takes (Stripe: $0.50 in USD). */
export const MIN_CARD_CHARGE_CENTS = 50;

/**
 * The minimum-charge policy, in one place: refuse what a company sends, carry what the service
 * computes. An amount a company sets (a deposit, a refill, a plan's price) is 0 or at least the
 * smallest card payment, or the request is refused (`refusedCardAmount`). An amount the service
 * works out (a plan's period charge with chosen amounts, a prorated upgrade with its overage, what
 * is left of a mid-month change, a renewal) below it is not charged now, since the processor would
 * refuse it, and never waived: it is carried to the account's next renewal charge (`splitForCard`).
 */
export function refusedCardAmount(cents: number): boolean {
  return cents > 0 && cents < MIN_CARD_CHARGE_CENTS;
}

/** What a card is charged now for cents the service worked out, and what is carried to the next renewal. */
export function splitForCard(cents: number): { charge: number; carried: number } {
  return refusedCardAmount(cents) ? { charge: 0, carried: cents } : { charge: cents, carried: 0 };
}

/** Integer USD cents as dollars, in integer arithmetic: 123456 → "$1,234.56". */
export function formatCents(cents: number | null | undefined): string {
  const c = cents ?? 0;
  const negative = c < 0;
  const abs = Math.abs(c);
  const dollars = Math.floor(abs / 100).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '−' : ''}$${dollars}.${String(abs % 100).padStart(2, '0')}`;
}

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

/**
 * A decimal string as an integer count of 10^-scale, when that integer is small enough for a JS
 * number to hold exactly (at most 15 digits): the common amounts (a price of 0.01, a balance of
 * 100000000) add, subtract and compare exactly as integers, without building a Decimal. Anything
 * else (more digits, an exponent, a sign other than a leading minus) goes through decimal.js.
 * `scan` leaves its reading in these three, so the hot path allocates nothing.
 */
let scanned = 0;
let scannedScale = 0;
let scannedWhole = 0;
const POW10 = Array.from({ length: 16 }, (_, i) => 10 ** i);
const MAX_DIGITS = 15;

function scan(value: unknown): boolean {
  if (typeof value !== 'string') return false;
  const len = value.length;
  let i = 0;
  const negative = len > 1 && value.charCodeAt(0) === 45;
  if (negative) i = 1;
  let n = 0;
  let whole = 0;
  let scale = 0;
  let dot = false;
  for (; i < len; i++) {
    const c = value.charCodeAt(i);
    if (c >= 48 && c <= 57) {
      n = n * 10 + (c - 48);
      if (dot) scale++;
      else whole++;
      if (whole + scale > MAX_DIGITS) return false;
    } else if (c === 46 && !dot && whole > 0) {
      dot = true;
    } else {
      return false;
    }
  }
  if (whole === 0 || (dot && scale === 0)) return false;
  scanned = negative ? -n : n;
  scannedScale = scale;
  scannedWhole = whole;
  return true;
}

let alignedA = 0;
let alignedB = 0;
let alignedScale = 0;

/** Both at the larger scale (in alignedA, alignedB), or false when either would pass 15 digits there. */
function align(a: unknown, b: unknown): boolean {
  if (!scan(a)) return false;
  const x = scanned;
  const xScale = scannedScale;
  const xWhole = scannedWhole;
  if (!scan(b)) return false;
  const scale = xScale > scannedScale ? xScale : scannedScale;
  if (xWhole + scale > MAX_DIGITS || scannedWhole + scale > MAX_DIGITS) return false;
  alignedA = x * POW10[scale - xScale];
  alignedB = scanned * POW10[scale - scannedScale];
  alignedScale = scale;
  return true;
}

/** An exact integer count of 10^-scale as the canonical decimal string (what Decimal's toFixed() writes). */
function format(n: number, scale: number): Units {
  if (n === 0) return '0';
  const sign = n < 0 ? '-' : '';
  const abs = n < 0 ? -n : n;
  if (scale === 0) return sign + abs;
  const unit = POW10[scale];
  let whole = Math.floor(abs / unit);
  let frac = abs - whole * unit;
  // The division rounds; the integers it gives are checked and moved by one where it did.
  if (frac < 0) {
    whole--;
    frac += unit;
  } else if (frac >= unit) {
    whole++;
    frac -= unit;
  }
  if (frac === 0) return sign + whole;
  while (frac % 10 === 0) {
    frac /= 10;
    scale--;
  }
  return `${sign}${whole}.${String(frac).padStart(scale, '0')}`;
}

/** The canonical decimal string of a value (no exponent, no trailing zeros): `Units`. */
export function toUnits(value: Decimal.Value): Units {
  return scan(value) ? format(scanned, scannedScale) : new Decimal(value).toFixed();
}

// Sums of two numbers under 10^15 stay under 2^53: exact.
export function add(a: Units, b: Units): Units {
  return align(a, b) ? format(alignedA + alignedB, alignedScale) : new Decimal(a).plus(b).toFixed();
}
export function sub(a: Units, b: Units): Units {
  return align(a, b) ? format(alignedA - alignedB, alignedScale) : new Decimal(a).minus(b).toFixed();
}
export function neg(a: Units): Units {
  return scan(a) ? format(-scanned, scannedScale) : new Decimal(a).neg().toFixed();
}
export function cmp(a: Units, b: Units): number {
  if (!align(a, b)) return new Decimal(a).cmp(b);
  return alignedA < alignedB ? -1 : alignedA > alignedB ? 1 : 0;
}
export function isZero(a: Units): boolean {
  return scan(a) ? scanned === 0 : new Decimal(a).isZero();
}

/**
 * `bytes` random bytes as hex, from the Web Crypto API (Node and browsers alike), so this module
 * and the schemas built on it load in the console's client components too.
 */
export function randomHex(bytes: number): string {
  return Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');
}

// Marks an exact number inside JSON.stringify's output; random so no stored text can forge it.
const EXACT_MARK = `\u0000exact${randomHex(6)}:`;
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
  const text = toUnits(value);
  const n = Number(text);
  // A number whose shortest form is the text itself holds it exactly (the usual case).
  if (String(n) === text) return n;
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

/**
 * What an object keyed by denomination holds for `denomination`: its own member only. A
 * denomination may be named like a member every object inherits (`constructor`, `valueOf`).
 */
export function amountFor<T>(amounts: Readonly<Record<string, T>> | null | undefined, denomination: string): T | undefined {
  return amounts && Object.hasOwn(amounts, denomination) ? amounts[denomination] : undefined;
}
