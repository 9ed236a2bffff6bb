import { and, eq, inArray, isNotNull, notInArray, sql } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, balances, plans } from '../../db/schema';
import type { Flag } from '../../db/schema';
import { enqueueNotifications } from '../webhooks/outbox';
import { DEFAULT_PRIORITY, moveBalances, type BalanceMove } from '../balances/balances';
import { newId } from '../../ids';
import { amountFor, cmp, neg, type Units } from '../../money';
import type { Charge } from '../charges/charges';
import { CADENCE, computePeriodEnd, computeRenewalRetry, includedAmounts, type BillingPeriod } from './periods';
import { periodChargeFor, planBalances, type Plan } from './plans';

/**
 * Plan balances as they were when a plan charge was priced (denomination → amount). The new
 * period starts from them, not from the balance at settlement: usage during the processor call
 * counts against the new period (new level = included + (current − measured)).
 */
export type Measured = Record<string, string>;

/** What a plan start or upgrade charge pays for: the new plan's period, started when paid. */
export type ActivatePlanEffect = { kind: 'activate_plan'; plan_id: string; chosen: Record<string, string> | null; reason: 'start' | 'upgrade'; measured?: Measured };

/**
 * What a renewal charge pays for: the next period of the plan (or of the scheduled one). Its
 * failure has an effect too: the account becomes PAST_DUE until a retry is paid.
 */
/**
 * `carried_paid`: the carried cents this renewal's charge includes, taken off what is carried once
 * it is paid (cents carried meanwhile, by a change below the card minimum, stay for the next one).
 * `carried_after` (effects of the version before): what is left carried once paid.
 */
export type RenewPlanEffect = { kind: 'renew_plan'; due: string; plan_id: string; chosen?: Record<string, string> | null; attempt?: number; measured?: Measured; carried_paid?: number; carried_after?: number };

/** A plan start or upgrade was paid: its period starts now. */
export async function applyPlanActivation(db: Db, charge: Charge, effect: ActivatePlanEffect, now: Date): Promise<void> {
  const [plan] = await db.select().from(plans).where(eq(plans.id, effect.plan_id));
  await startPlanPeriod(db, { accountId: charge.accountId, companyId: charge.companyId, plan, chosen: effect.chosen, chargeId: charge.id, reason: effect.reason, measured: effect.measured, now });
}

/** A renewal was paid: its period starts (once per due date). */
export async function applyRenewal(db: Db, charge: Charge, effect: RenewPlanEffect, now: Date): Promise<void> {
  // The period is the one under way when the card was charged, not when the answer came (a
  // charge the reconciler settles a day later paid for the period it was made in).
  await completeRenewal(db, { accountId: charge.accountId, due: new Date(effect.due), planId: effect.plan_id, chosen: effect.chosen, chargeId: charge.id, measured: effect.measured, now, paidAt: charge.createdAt, carriedAfter: effect.carried_after, carriedDelta: effect.carried_paid === undefined ? undefined : -effect.carried_paid });
}

/** A renewal charge failed: the account is PAST_DUE until its next attempt (charges made before attempts were counted, and a new card's try outside the schedule, carry none). */
export async function applyRenewalFailure(db: Db, charge: Charge, effect: RenewPlanEffect, now: Date): Promise<void> {
  if (effect.attempt !== undefined) await failRenewal(db, { accountId: charge.accountId, due: new Date(effect.due), attempt: effect.attempt, now });
}

export function planFlags(plan: Plan): Flag[] {
  return Object.entries((plan.flags ?? {}) as Record<string, boolean>).map(([name, enabled]) => ({ name, enabled }));
}

/**
 * Starts a plan period now. On each balance the plan includes, what is left of the previous
 * period's allowance expires, what is below zero is settled (billed as postpaid overage by the
 * charge that pays for this period, or forgiven), and the period's included amount is granted
 * whole, expiring at the period's end; units bought by card and the company's grants stay. A
 * balance of the previous plan that the new one lacks loses its allowance the same way. The
 * account gets the plan's status, dates, cadence and flags. With `measured` (the balances the
 * charge was priced on), only the debt measured then is settled: usage recorded since, while the
 * charge was at the processor, is paid by the new allowance like any debt.
 */
export async function startPlanPeriod(
  db: Db,
  args: {
    accountId: string;
    companyId: string;
    plan: Plan;
    chosen: Record<string, string> | null;
    chargeId?: string | null;
    reason: 'start' | 'upgrade' | 'renewal';
    now: Date;
    /** Renewals continue the period count from the plan's anchor; other starts anchor now. */
    schedule?: { anchor: Date; periods: number; periodStart: Date };
    measured?: Record<string, string>;
  },
): Promise<void> {
  const { accountId, companyId, plan, chosen, now } = args;
  const schedule = args.schedule ?? { anchor: now, periods: 0, periodStart: now };
  const included = includedAmounts({ chargeAmount: plan.chargeAmount, balances: planBalances(plan) }, chosen);
  const verb = args.reason === 'renewal' ? 'renewed' : args.reason === 'upgrade' ? 'changed to' : 'started';
  const period = plan.billingPeriod as BillingPeriod;
  const periodEnd = computePeriodEnd(schedule.anchor, period, schedule.periods + 1);
  const ends = (denomination: string, what: string): BalanceMove['ops'] => {
    const measured = amountFor(args.measured, denomination);
    // Only the debt the charge was priced on was billed; without a charge, all of it is settled.
    const billed: Units | null = args.measured === undefined ? null : measured !== undefined && cmp(measured, '0') < 0 ? neg(measured) : '0';
    return [
      { op: { kind: 'close_all', source: 'plan', how: 'expire' }, ledger: { type: 'expire', description: `Plan ${verb} ${plan.name}: ${what}`, chargeId: args.chargeId } },
      { op: { kind: 'settle', upTo: billed }, ledger: { type: 'overage', description: `Plan ${verb} ${plan.name}: ${denomination} below zero settled as postpaid overage`, chargeId: args.chargeId } },
    ];
  };
  const moves: BalanceMove[] = [];
  if (args.reason !== 'start') {
    const stale = await db
      .select({ denomination: balances.denomination })
      .from(balances)
      .where(
        and(
          eq(balances.accountId, accountId),
          isNotNull(balances.managedByPlanId),
          included.length ? notInArray(balances.denomination, included.map((i) => i.denomination)) : undefined,
        ),
      );
    for (const s of stale) moves.push({ accountId, denomination: s.denomination, ops: ends(s.denomination, `${s.denomination} is no longer included`) });
  }
  for (const inc of included) {
    moves.push({
      accountId,
      denomination: inc.denomination,
      ops: [
        ...ends(inc.denomination, `the previous period's ${inc.denomination} allowance expired`),
        // An included amount of nothing (a variable amount chosen as 0) is no grant.
        ...(cmp(inc.amount, '0') > 0 ? [{
          op: { kind: 'grant' as const, grant: { id: newId('cg'), amount: inc.amount, priority: DEFAULT_PRIORITY, effectiveAt: now, expiresAt: periodEnd } },
          ledger: { type: 'plan_grant' as const, description: `Plan ${plan.name} ${verb}: ${inc.amount} ${inc.denomination} included`, chargeId: args.chargeId },
          // A plan's price buys the period, not units: no cost basis.
          grant: { category: cmp(String(periodChargeFor(plan, chosen)), '0') > 0 ? ('paid' as const) : ('promotional' as const), source: 'plan' as const, costBasis: null },
        }] : []),
      ],
    });
  }
  // One balance at a time, in the plan's order (a new balance is listed by when it was made).
  for (const m of moves) await moveBalances(db, companyId, [m], now);
  if (args.reason !== 'start') {
    const kept = new Set(included.map((i) => i.denomination));
    const stale = moves.map((m) => m.denomination).filter((d) => !kept.has(d));
    if (stale.length) await db.update(balances).set({ managedByPlanId: null, includedAmount: null }).where(and(eq(balances.accountId, accountId), inArray(balances.denomination, stale)));
  }
  for (const inc of included) {
    await db
      .update(balances)
      .set({ managedByPlanId: plan.id, includedAmount: inc.amount, updatedAt: now })
      .where(and(eq(balances.accountId, accountId), eq(balances.denomination, inc.denomination)));
  }
  await db
    .update(accounts)
    .set({
      planId: plan.id,
      planStatus: 'ACTIVE',
      planRenewalCadence: CADENCE[period],
      flags: planFlags(plan),
      planVariableAmounts: chosen,
      planChargeAmount: periodChargeFor(plan, chosen),
      planAnchorAt: schedule.anchor,
      planPeriods: schedule.periods,
      lastPlanRenewal: schedule.periodStart,
      nextPlanRenewal: periodEnd,
      renewalLockedUntil: null,
      renewalAttempts: 0,
      renewalRetryAt: null,
      scheduledPlanId: null,
      scheduledPlanVariableAmounts: null,
      updatedAt: now,
    })
    .where(eq(accounts.id, accountId));
  if (args.reason !== 'start') {
    await enqueueNotifications(db, companyId, included.map((i) => ({ accountId, denomination: i.denomination, topic: 'auto_refill' as const, balance: i.amount, detail: { reason: `plan_${args.reason}`, plan_id: plan.id } })), now);
  }
}

/**
 * A renewal charge failed: PAST_DUE, and the next attempt on the retry schedule. Once per
 * attempt (the update matches only while the account is still at that attempt of that due date).
 */
export async function failRenewal(db: Db, args: { accountId: string; due: Date; attempt: number; now: Date }): Promise<void> {
  const attempts = args.attempt + 1;
  await db
    .update(accounts)
    .set({ planStatus: 'PAST_DUE', renewalAttempts: attempts, renewalRetryAt: computeRenewalRetry(args.due, attempts, args.now), updatedAt: args.now })
    .where(and(eq(accounts.id, args.accountId), eq(accounts.nextPlanRenewal, args.due), eq(accounts.renewalAttempts, args.attempt)));
}

/** The renewal's effect: once per due date (the update only matches while it is still due). */
export async function completeRenewal(
  db: Db,
  args: { accountId: string; due: Date; planId: string; chosen?: Record<string, string> | null; chargeId: string | null; measured?: Measured; now: Date; paidAt?: Date; carriedAfter?: number; carriedDelta?: number },
): Promise<void> {
  const [account] = await db
    .select()
    .from(accounts)
    .where(and(eq(accounts.id, args.accountId), eq(accounts.nextPlanRenewal, args.due)))
    .for('update');
  if (!account) return;
  const [plan] = await db.select().from(plans).where(eq(plans.id, args.planId));
  // A plan switched at the renewal (a downgrade taking effect) with another period length starts
  // its own cadence at the due date. With the same length it keeps the account's: the due date
  // may be cut short to a month's end (Feb 28 of a Jan 31 start), and anchoring there would move
  // every later renewal to the 28th.
  const newCadence = plan.id !== account.planId && CADENCE[plan.billingPeriod as BillingPeriod] !== account.planRenewalCadence;
  // The charge was priced with these amounts; older effects without them fall back to the account.
  const chosen =
    args.chosen !== undefined
      ? args.chosen
      : (((account.scheduledPlanId ? account.scheduledPlanVariableAmounts : account.planVariableAmounts) as Record<string, string> | null) ?? null);
  await startPlanPeriod(db, {
    accountId: account.id,
    companyId: account.companyId,
    plan,
    chosen,
    chargeId: args.chargeId,
    reason: 'renewal',
    now: args.now,
    measured: args.measured,
    schedule: periodUnderWay(newCadence ? { anchor: args.due, periods: 0, periodStart: args.due } : { anchor: account.planAnchorAt ?? args.due, periods: account.planPeriods + 1, periodStart: args.due }, plan.billingPeriod as BillingPeriod, args.paidAt ?? args.now),
  });
  if (args.carriedDelta !== undefined) await db.update(accounts).set({ carriedCents: sql`greatest(0, ${accounts.carriedCents} + ${args.carriedDelta})` }).where(eq(accounts.id, account.id));
  else if (args.carriedAfter !== undefined) await db.update(accounts).set({ carriedCents: args.carriedAfter }).where(eq(accounts.id, account.id));
}

/**
 * The period a renewal pays for: the one that was due, or, when it is charged after that period
 * has ended (a past-due account paying late), the one under way when the card was charged, on the
 * same renewal days. Periods that went by while the account was past due are not billed (their
 * units were never granted). The next renewal is due at once only when the processor's answer
 * came after the paid period ended too.
 */
function periodUnderWay(schedule: { anchor: Date; periods: number; periodStart: Date }, period: BillingPeriod, now: Date) {
  let { periods, periodStart } = schedule;
  while (computePeriodEnd(schedule.anchor, period, periods + 1).getTime() <= now.getTime()) {
    periods++;
    periodStart = computePeriodEnd(schedule.anchor, period, periods);
  }
  return { anchor: schedule.anchor, periods, periodStart };
}
