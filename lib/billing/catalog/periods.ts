import Decimal from 'decimal.js';
import { amountFor, roundCents } from '../../money';
import type { BillingPeriod, RenewalCadence } from '../../db/schema';

export type { BillingPeriod };

export const CADENCE: Record<BillingPeriod, RenewalCadence> = { day: 'DAILY', week: 'WEEKLY', month: 'MONTHLY', year: 'YEARLY' };

function daysInMonth(year: number, month: number): number {
  return new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
}

/** Adds whole months to a UTC instant, keeping the day of month and clamping to the month's end. */
export function addMonths(date: Date, months: number): Date {
  const y = date.getUTCFullYear();
  const m = date.getUTCMonth() + months;
  const year = y + Math.floor(m / 12);
  const month = ((m % 12) + 12) % 12;
  const day = Math.min(date.getUTCDate(), daysInMonth(year, month));
  return new Date(Date.UTC(year, month, day, date.getUTCHours(), date.getUTCMinutes(), date.getUTCSeconds(), date.getUTCMilliseconds()));
}

/**
 * The end of the n-th period after `anchor`. Always computed from the anchor, never by chaining,
 * so a plan started on Jan 31 renews on Feb 28 (or 29), Mar 31, Apr 30 — no drift to the 28th.
 */
export function computePeriodEnd(anchor: Date, period: BillingPeriod, n: number): Date {
  switch (period) {
    case 'day':
      return new Date(anchor.getTime() + n * 86_400_000);
    case 'week':
      return new Date(anchor.getTime() + n * 7 * 86_400_000);
    case 'month':
      return addMonths(anchor, n);
    case 'year':
      return addMonths(anchor, 12 * n);
  }
}

/**
 * Credit for the unused part of a period: charge × remaining / length, rounded half up to whole
 * cents, never negative and never more than the charge.
 */
export function computeProrationCredit(args: { charge: number; periodStart: Date; periodEnd: Date; at: Date }): number {
  const total = args.periodEnd.getTime() - args.periodStart.getTime();
  if (total <= 0 || args.charge <= 0) return 0;
  const remaining = Math.min(Math.max(args.periodEnd.getTime() - args.at.getTime(), 0), total);
  return roundCents(new Decimal(args.charge).mul(remaining).div(total));
}

export type ChargeablePlan = {
  chargeAmount: number;
  balances: { denomination: string; amount: string; variable_unit_price: string | null }[];
};

/** The period charge with chosen amounts: charge + Σ (chosen − included) × unit price, half up, ≥ 0. */
export function computePlanCharge(plan: ChargeablePlan, chosen: Record<string, string> | null | undefined): number {
  let total = new Decimal(plan.chargeAmount);
  for (const b of plan.balances) {
    const pick = amountFor(chosen, b.denomination);
    if (pick === undefined || b.variable_unit_price === null) continue;
    total = total.plus(new Decimal(pick).minus(b.amount).mul(b.variable_unit_price));
  }
  return Math.max(0, roundCents(total));
}

/** The included amount of each plan balance for an account, with its chosen amounts applied. */
export function includedAmounts(plan: ChargeablePlan, chosen: Record<string, string> | null | undefined): { denomination: string; amount: string }[] {
  return plan.balances.map((b) => {
    const pick = amountFor(chosen, b.denomination);
    return { denomination: b.denomination, amount: pick !== undefined && b.variable_unit_price !== null ? pick : b.amount };
  });
}

/** Postpaid overage: units below zero × price per unit, half up to cents. */
export function computeOverage(balance: string, pricePerUnit: number): number {
  const units = new Decimal(balance);
  if (units.gte(0) || pricePerUnit <= 0) return 0;
  return roundCents(units.neg().mul(pricePerUnit));
}
/**
 * Retry schedule for a failed renewal charge, counted from the renewal's due date: 1, 3 and 7
 * days, then weekly. Meanwhile the account is PAST_DUE and its plan balances are not renewed;
 * a later success renews and returns it to ACTIVE. A charge whose outcome is unknown is not a
 * failure: the renewal waits for it (checking hourly) and never starts another attempt meanwhile.
 */
export const RENEWAL_RETRY_DAYS = [1, 3, 7];
export function computeRenewalRetry(due: Date, attempts: number, now: Date = due): Date {
  const days = attempts <= RENEWAL_RETRY_DAYS.length ? RENEWAL_RETRY_DAYS[attempts - 1] : 7 * (attempts - RENEWAL_RETRY_DAYS.length + 1);
  const at = new Date(due.getTime() + days * 86_400_000);
  // A worker that was down past several slots must not fire them back to back: next try in a day.
  return at.getTime() > now.getTime() ? at : new Date(now.getTime() + 86_400_000);
}

