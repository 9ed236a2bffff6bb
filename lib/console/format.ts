import { Decimal, formatCents } from '../money';

/** Units as stored (exact decimal strings), with thousands separators and no float rounding. */
export function formatUnits(value: string | number | null | undefined): string {
  if (value === null || value === undefined || value === '') return '0';
  const text = new Decimal(value).toFixed();
  const negative = text.startsWith('-');
  const [int, frac] = (negative ? text.slice(1) : text).split('.');
  const grouped = int.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${negative ? '−' : ''}${grouped}${frac ? `.${frac}` : ''}`;
}

export { formatCents };

/** A whole number with thousands separators. */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US');
}

/** Console times are UTC, written out so nobody has to guess the zone. */
export function formatTime(d: Date | string | null | undefined): string {
  if (!d) return '—';
  const date = typeof d === 'string' ? new Date(d) : d;
  return `${date.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

export function formatDate(d: Date | string | null | undefined): string {
  if (!d) return '—';
  const date = typeof d === 'string' ? new Date(d) : d;
  return date.toISOString().slice(0, 10);
}

/** A dollar amount as people type it: digits, commas only between groups of three, a decimal point. */
const DOLLARS = /^(\d+|\d{1,3}(,\d{3})+)(\.\d*)?$|^\.\d+$/;

/**
 * Dollars typed into a form ("10", "10.5", "$1,000.25") as cents, exactly, as a string, so the
 * API's own schemas still do the validating (whole cents where they need them). Anything else
 * ("9,99", "+25", "2.5e1", "-5") is answered with a value every amount schema refuses, so the
 * form says "enter a dollar amount" rather than read it as some other number of cents.
 */
export function dollarsToCents(input: string): string {
  const text = input.trim().replace(/^\$/, '');
  if (!DOLLARS.test(text)) return 'not a dollar amount';
  return new Decimal(text.replace(/,/g, '')).times(100).toFixed();
}

export function centsToDollarsInput(cents: number | string | null | undefined): string {
  if (cents === null || cents === undefined) return '';
  return new Decimal(cents).dividedBy(100).toFixed();
}

/** "$10.00 a month", "free, monthly". */
export function planSummary(p: { chargeAmount: number; billingPeriod: string }): string {
  return p.chargeAmount > 0 ? `${formatCents(p.chargeAmount)} a ${p.billingPeriod}` : `free, ${p.billingPeriod}ly`.replace('dayly', 'daily');
}
