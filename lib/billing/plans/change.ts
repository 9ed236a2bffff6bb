import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts } from '../../db/schema';
import { now as clockNow } from '../../clock';
import { conflict, invalid } from '../../errors';
import { activatePlan, getAccount, validateAccountInput } from '../accounts/accounts';
import type { Company } from '../companies/companies';
import { periodChargeFor } from './attach';
import { computeProrationCredit } from './periods';
import { getPlan } from './plans';

/**
 * changeplan: a plan whose period charge is at least the current one is an upgrade, at once:
 * the new period starts now, credit for the unused time of the old period comes off the new
 * charge, and the new included amounts replace the old. A cheaper plan is a downgrade,
 * scheduled for the next renewal.
 */
export async function changePlan({ db, company, accountId, planId, chosen }: { db: Db; company: Company; accountId: string; planId: string; chosen?: Record<string, string> }) {
  const account = await getAccount({ db, companyId: company.id, accountId });
  const plan = await getPlan({ db, companyId: company.id, planId });
  await validateAccountInput({ db, companyId: company.id, input: { name: account.name, email: account.email, plan_id: planId, plan_variable_amounts: chosen } });
  const choice = chosen ?? null;
  const newCharge = periodChargeFor(plan, choice);
  const at = clockNow();
  if (account.planStatus === 'PENDING_PAYMENT_METHOD') {
    await db.update(accounts).set({ planId: plan.id, planVariableAmounts: choice, updatedAt: at }).where(eq(accounts.id, account.id));
  } else if (!account.planId || account.planStatus === 'NONE' || account.planStatus === 'CANCELLED') {
    await activatePlan({ db, company, account, plan, chosen: choice, charge: newCharge, reason: 'start' });
  } else {
    if (account.planId === plan.id && JSON.stringify(account.planVariableAmounts ?? null) === JSON.stringify(choice)) {
      throw invalid('The account is already on this plan.', 'plan_id');
    }
    if (account.planStatus === 'PAST_DUE') throw conflict('The account is past due: a plan change waits until its renewal is paid.', 'plan_id');
    const oldCharge = account.planChargeAmount ?? 0;
    if (newCharge >= oldCharge) {
      const credit = computeProrationCredit({ charge: oldCharge, periodStart: account.lastPlanRenewal ?? at, periodEnd: account.nextPlanRenewal ?? at, at });
      await activatePlan({ db, company, account, plan, chosen: choice, charge: Math.max(0, newCharge - credit), reason: 'upgrade', credit });
    } else {
      await db.update(accounts).set({ scheduledPlanId: plan.id, updatedAt: at }).where(eq(accounts.id, account.id));
    }
  }
  return getAccount({ db, companyId: company.id, accountId });
}
