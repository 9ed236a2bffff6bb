import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { balances, plans } from '../../db/schema';
import { enqueueNotifications } from '../webhooks/outbox';
import { moveBalance } from '../balances/balances';
import { startPlanPeriod } from '../plans/attach';
import type { Charge, Effect } from './charges';

/** Applies one effect of a successful charge, inside the transaction that marked it paid. */
export async function applyEffect(db: Db, charge: Charge, effect: Effect, now: Date): Promise<void> {
  switch (effect.kind) {
    case 'grant':
      await moveBalance(db, { accountId: charge.accountId, companyId: charge.companyId, denomination: effect.denomination, amount: effect.amount, type: effect.type, description: effect.description, chargeId: charge.id }, now);
      return;
    case 'activate_plan': {
      const [plan] = await db.select().from(plans).where(eq(plans.id, effect.plan_id));
      await startPlanPeriod(db, { accountId: charge.accountId, companyId: charge.companyId, plan, chosen: effect.chosen, chargeId: charge.id, reason: effect.reason, measured: effect.measured, now });
      return;
    }
    case 'renew_plan': {
      const { completeRenewal } = await import('../plans/renewals');
      await completeRenewal(db, { accountId: charge.accountId, due: new Date(effect.due), planId: effect.plan_id, chosen: effect.chosen, chargeId: charge.id, measured: effect.measured, now });
      return;
    }
    case 'refill': {
      const { completeRefill } = await import('../refills/refills');
      await completeRefill(db, { charge, balanceId: effect.balance_id, amount: effect.amount, description: effect.description, periodic: effect.periodic, config: effect.config, now });
      return;
    }
  }
}

/** Applies what a failed charge means for its effect, inside the transaction that marked it failed. */
export async function applyFailure(db: Db, charge: Charge, effect: Effect, now: Date): Promise<void> {
  if (effect.kind === 'renew_plan' && effect.attempt !== undefined) {
    const { failRenewal } = await import('../plans/renewals');
    await failRenewal(db, { accountId: charge.accountId, due: new Date(effect.due), attempt: effect.attempt, now });
  }
  if (effect.kind === 'refill') {
    // Whenever the failure becomes known (at once, or when a pending charge is reconciled).
    const [b] = await db.select({ denomination: balances.denomination, amount: balances.amount }).from(balances).where(eq(balances.id, effect.balance_id));
    if (b) {
      await enqueueNotifications(db, charge.companyId, [{ accountId: charge.accountId, denomination: b.denomination, topic: 'refill_failed', balance: b.amount, detail: { charge_id: charge.id, amount: effect.amount, usd_charge: charge.amount, failure_code: charge.failureCode } }], now);
    }
  }
}
