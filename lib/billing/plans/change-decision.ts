import type { Account } from '../../db/schema';
import { conflict, invalid, type ApiError } from '../../errors';
import { splitForCard, toUnits, type Units } from '../../money';
import type { Charge } from '../charges/charges';
import type { Measured } from '../effects/plan-period';
import { computePeriodEnd, computeProrationCredit, includedAmounts, type BillingPeriod } from '../catalog/periods';
import { periodChargeFor, planBalances, type Plan } from '../catalog/plans';

/** Postpaid overage of the current plan, as measured when the change is priced. */
export type Overage = { cents: number; lines: string[]; measured?: Measured };

/** Everything a plan change decides on, read before anything is written. */
export type PlanChangeFacts = {
  at: Date;
  account: Pick<Account, 'id' | 'planId' | 'planStatus' | 'planVariableAmounts' | 'planChargeAmount' | 'scheduledPlanId' | 'lastPlanRenewal' | 'nextPlanRenewal'>;
  plan: Plan;
  chosen: Record<string, string> | null;
  /** The charge an earlier attempt of this request (same Idempotency-Key) made for this account. */
  earlier: Charge | null;
  /** A plan charge of the account whose outcome is not known yet. */
  pendingPlanChargeId: string | null;
  /** The current plan's overage; none when the account has no current plan. */
  overage: Overage;
  /** The time of this change's preview, when the unused time is credited as of then (see planChangeQuotes). */
  quotedAt?: Date | null;
};

/**
 * What a plan change does. Only `start` and `upgrade` charge: `charge` is the amount, and for an
 * upgrade it is max(0, price − credit) + overage. Below the smallest card payment it is not
 * charged now but carried to the next renewal (splitForCard, applied by chargeAccount).
 */
export type PlanChangeDecision =
  | { kind: 'resume'; charge: Charge }
  | { kind: 'attach_pending' }
  | { kind: 'start'; charge: number }
  | { kind: 'cancel_downgrade' }
  | { kind: 'upgrade'; price: number; credit: number; overage: Overage; charge: number }
  | { kind: 'schedule_downgrade' }
  | { kind: 'conflict'; error: ApiError };

export function pendingPlanChargeConflict(chargeId: string): ApiError {
  return conflict(`The outcome of plan charge ${chargeId} is not known yet; change the plan once the processor has settled it.`, 'plan_id');
}

export const changedMeanwhile = () => conflict('The account\'s plan was changed by another request while this one ran; read the account and try again.', 'plan_id');

/**
 * changeplan, decided: a plan whose period charge is at least the current one is an upgrade, at
 * once: the new period starts now, credit for the unused time of the old period comes off the
 * new charge, and postpaid overage of the old plan is billed with it. A cheaper plan is a
 * downgrade, scheduled for the next renewal. While the renewal is due or a plan charge's outcome
 * is still unknown, a change is a conflict: it would bill the period (or its overage) twice.
 */
export function decidePlanChange(f: PlanChangeFacts): PlanChangeDecision {
  const { account, plan, chosen } = f;
  if (f.earlier && f.earlier.accountId === account.id) return { kind: 'resume', charge: f.earlier };
  if (account.planStatus === 'PENDING_PAYMENT_METHOD') {
    // A collector's card may be paying for the waiting plan right now: its start would undo the change.
    if (f.pendingPlanChargeId) return { kind: 'conflict', error: pendingPlanChargeConflict(f.pendingPlanChargeId) };
    return { kind: 'attach_pending' };
  }
  const price = periodChargeFor(plan, chosen);
  if (!account.planId || account.planStatus === 'NONE' || account.planStatus === 'CANCELLED') {
    if (f.pendingPlanChargeId) return { kind: 'conflict', error: pendingPlanChargeConflict(f.pendingPlanChargeId) };
    return { kind: 'start', charge: price };
  }
  if (account.planId === plan.id && sameChoice(account.planVariableAmounts, chosen)) {
    // Asking for the current plan again undoes a scheduled downgrade; otherwise it is a no-op request.
    if (!account.scheduledPlanId) return { kind: 'conflict', error: invalid('The account is already on this plan.', 'plan_id') };
    if (f.pendingPlanChargeId) return { kind: 'conflict', error: pendingPlanChargeConflict(f.pendingPlanChargeId) };
    return { kind: 'cancel_downgrade' };
  }
  if (account.planStatus === 'PAST_DUE') return { kind: 'conflict', error: conflict('The account is past due: a plan change waits until its renewal is paid.', 'plan_id') };
  if (account.nextPlanRenewal && account.nextPlanRenewal.getTime() <= f.at.getTime()) {
    return { kind: 'conflict', error: conflict('The account\'s renewal is due and not done yet; change the plan once it has renewed.', 'plan_id') };
  }
  if (f.pendingPlanChargeId) return { kind: 'conflict', error: pendingPlanChargeConflict(f.pendingPlanChargeId) };
  const current = account.planChargeAmount ?? 0;
  if (price < current) return { kind: 'schedule_downgrade' };
  const credit = computeProrationCredit({ charge: current, periodStart: account.lastPlanRenewal ?? f.at, periodEnd: account.nextPlanRenewal ?? f.at, at: f.quotedAt ?? f.at });
  return { kind: 'upgrade', price, credit, overage: f.overage, charge: Math.max(0, price - credit) + f.overage.cents };
}

/** A balance as a preview shows it. */
export type BalanceLevel = { denomination: string; amount: Units; managedByPlanId: string | null };

/** What a plan change would do, in the terms of the preview endpoint. */
export type PlanChangePreview = {
  kind: Exclude<PlanChangeDecision, { kind: 'conflict' | 'resume' }>['kind'];
  planId: string;
  effective: 'now' | 'next_renewal';
  chargeAmount: number;
  /** Cents carried to the next renewal instead of charged now (below the smallest card payment). */
  carriedAmount: number;
  /** The new plan's period charge (before credit and overage); 0 when nothing starts now. */
  priceAmount: number;
  creditAmount: number;
  overageAmount: number;
  nextPlanRenewal: Date | null;
  balances: BalanceLevel[];
};

/**
 * The decision as the account would see it: what is charged now, and the balances after. A
 * plan period that starts sets each of the new plan's balances to its included amount and,
 * on an upgrade, closes the old plan's balances that the new one lacks.
 */
export function describePlanChange(f: PlanChangeFacts, d: Exclude<PlanChangeDecision, { kind: 'conflict' | 'resume' }>, current: BalanceLevel[]): PlanChangePreview {
  const unchanged = { kind: d.kind, planId: f.plan.id, chargeAmount: 0, carriedAmount: 0, priceAmount: 0, creditAmount: 0, overageAmount: 0, balances: sortLevels(current) };
  switch (d.kind) {
    case 'attach_pending':
      return { ...unchanged, effective: 'now', nextPlanRenewal: null };
    case 'cancel_downgrade':
      return { ...unchanged, effective: 'now', nextPlanRenewal: f.account.nextPlanRenewal };
    case 'schedule_downgrade':
      return { ...unchanged, effective: 'next_renewal', nextPlanRenewal: f.account.nextPlanRenewal };
    case 'start':
    case 'upgrade': {
      const included = new Map(includedAmounts({ chargeAmount: f.plan.chargeAmount, balances: planBalances(f.plan) }, f.chosen).map((i) => [i.denomination, i.amount]));
      const after = new Map(current.map((b) => [b.denomination, b]));
      if (d.kind === 'upgrade') {
        for (const b of current) if (b.managedByPlanId && !included.has(b.denomination)) after.set(b.denomination, { ...b, amount: '0', managedByPlanId: null });
      }
      for (const [denomination, amount] of included) after.set(denomination, { denomination, amount: toUnits(amount), managedByPlanId: f.plan.id });
      return {
        kind: d.kind,
        planId: f.plan.id,
        effective: 'now',
        chargeAmount: splitForCard(d.charge).charge,
        carriedAmount: splitForCard(d.charge).carried,
        priceAmount: d.kind === 'upgrade' ? d.price : periodChargeFor(f.plan, f.chosen),
        creditAmount: d.kind === 'upgrade' ? d.credit : 0,
        overageAmount: d.kind === 'upgrade' ? d.overage.cents : 0,
        nextPlanRenewal: computePeriodEnd(f.at, f.plan.billingPeriod as BillingPeriod, 1),
        balances: sortLevels([...after.values()]),
      };
    }
  }
}

function sortLevels(levels: BalanceLevel[]): BalanceLevel[] {
  return [...levels].sort((a, b) => (a.denomination < b.denomination ? -1 : a.denomination > b.denomination ? 1 : 0));
}

export function sameChoice(a: unknown, b: Record<string, string> | null): boolean {
  return choiceKey(a) === choiceKey(b);
}

/** Chosen amounts as one text, the same for the same choice whatever its keys' order. */
export function choiceKey(v: unknown): string {
  return JSON.stringify(Object.entries((v ?? {}) as Record<string, string>).sort(([x], [y]) => (x < y ? -1 : 1)));
}
