import { and, eq, isNotNull, notInArray } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, balances } from '../../db/schema';
import type { Flag } from '../../db/schema';
import { enqueueNotifications } from '../webhooks/outbox';
import { setLevel } from '../balances/balances';
import { CADENCE, computePeriodEnd, computePlanCharge, includedAmounts, type BillingPeriod } from './periods';
import { planBalances, type Plan } from './plans';

export function planFlags(plan: Plan): Flag[] {
  return Object.entries((plan.flags ?? {}) as Record<string, boolean>).map(([name, enabled]) => ({ name, enabled }));
}

export function periodChargeFor(plan: Plan, chosen: Record<string, string> | null | undefined): number {
  return computePlanCharge({ chargeAmount: plan.chargeAmount, balances: planBalances(plan) }, chosen);
}

/**
 * Starts a plan period now: each plan balance is set to its included amount (one ledger row
 * each), balances of a previous plan that the new one lacks are closed, and the account gets
 * the plan's status, dates, cadence and flags. With `measured` (the balances the charge was
 * priced on), a balance moves by included − measured instead: usage recorded while the charge
 * was at the processor counts against the new period rather than vanishing in the reset.
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
    for (const s of stale) {
      await setLevel(db, { accountId, companyId, denomination: s.denomination, level: '0', type: 'plan_reset', description: `Plan ${verb} ${plan.name}: ${s.denomination} is no longer included`, chargeId: args.chargeId }, now);
      await db.update(balances).set({ managedByPlanId: null, includedAmount: null }).where(and(eq(balances.accountId, accountId), eq(balances.denomination, s.denomination)));
    }
  }
  for (const inc of included) {
    const change = { accountId, companyId, denomination: inc.denomination, type: args.reason === 'renewal' ? 'plan_reset' : 'plan_grant', description: `Plan ${plan.name} ${verb}: ${inc.amount} ${inc.denomination} included`, chargeId: args.chargeId };
    await setLevel(db, { ...change, level: inc.amount, measured: args.measured?.[inc.denomination] }, now);
    await db
      .update(balances)
      .set({ managedByPlanId: plan.id, includedAmount: inc.amount, updatedAt: now })
      .where(and(eq(balances.accountId, accountId), eq(balances.denomination, inc.denomination)));
  }
  const period = plan.billingPeriod as BillingPeriod;
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
      nextPlanRenewal: computePeriodEnd(schedule.anchor, period, schedule.periods + 1),
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
