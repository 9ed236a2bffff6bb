import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, plans } from '../../db/schema';
import { now as clockNow } from '../../clock';
import { conflict, invalid } from '../../errors';
import { getAccount, validateAccountInput, type Account } from '../accounts/accounts';
import { activatePlan } from './activate';
import { withAccountLease } from '../accounts/lease';
import { findRequestCharge } from '../charges/charges';
import { resumeChargeFor } from '../settlement';
import type { Company } from '../companies/companies';
import { computeProrationCredit } from './periods';
import { getPlan, periodChargeFor } from './plans';
import { overageFor, pendingPlanCharge } from './renewals';

/**
 * changeplan: a plan whose period charge is at least the current one is an upgrade, at once:
 * the new period starts now, credit for the unused time of the old period comes off the new
 * charge, and the new included amounts replace the old. A cheaper plan is a downgrade,
 * scheduled for the next renewal. While the renewal is due or a plan charge's outcome is still
 * unknown, a change is refused with 409: it would bill the period (or its overage) twice.
 * A retried request (same Idempotency-Key) carries on with the charge its first attempt made.
 */
export async function changePlan({
  db,
  company,
  accountId,
  planId,
  chosen,
  idempotencyKey = null,
}: {
  db: Db;
  company: Company;
  accountId: string;
  planId: string;
  chosen?: Record<string, string>;
  idempotencyKey?: string | null;
}) {
  const account = await getAccount({ db, companyId: company.id, accountId });
  const plan = await getPlan({ db, companyId: company.id, planId });
  await validateAccountInput({ db, companyId: company.id, input: { name: account.name, email: account.email, plan_id: planId, plan_variable_amounts: chosen } });
  const choice = chosen ?? null;
  const newCharge = periodChargeFor(plan, choice);
  const at = clockNow();
  const earlier = (await findRequestCharge(db, company.id, idempotencyKey, 'plan_change', at)) ?? (await findRequestCharge(db, company.id, idempotencyKey, 'plan_start', at));
  if (earlier && earlier.accountId === account.id) {
    const outcome = await resumeChargeFor({ db, company, account, charge: earlier, now: at });
    if (!outcome.ok) throw outcome.error!;
  } else if (account.planStatus === 'PENDING_PAYMENT_METHOD') {
    await db.update(accounts).set({ planId: plan.id, planVariableAmounts: choice, updatedAt: at }).where(eq(accounts.id, account.id));
  } else if (!account.planId || account.planStatus === 'NONE' || account.planStatus === 'CANCELLED') {
    // Under the lease, as an upgrade: two requests that both read "no plan" would both charge.
    await withAccountLease(db, account.id, at, async (fresh) => {
      if (fresh.planId !== account.planId || fresh.planStatus !== account.planStatus) {
        throw conflict('The account\'s plan was changed by another request while this one ran; read the account and try again.', 'plan_id');
      }
      await refuseWhilePlanChargePending(db, account.id);
      await activatePlan({ db, company, account: fresh, plan, chosen: choice, charge: newCharge, reason: 'start', idempotencyKey });
    });
  } else if (account.planId === plan.id && sameChoice(account.planVariableAmounts, choice)) {
    // Asking for the current plan again undoes a scheduled downgrade; otherwise it is a no-op request.
    if (!account.scheduledPlanId) throw invalid('The account is already on this plan.', 'plan_id');
    await refuseWhilePlanChargePending(db, account.id);
    await db.update(accounts).set({ scheduledPlanId: null, scheduledPlanVariableAmounts: null, updatedAt: at }).where(eq(accounts.id, account.id));
  } else {
    if (account.planStatus === 'PAST_DUE') throw conflict('The account is past due: a plan change waits until its renewal is paid.', 'plan_id');
    await refuseWhileRenewing(db, account, at);
    const oldCharge = account.planChargeAmount ?? 0;
    if (newCharge >= oldCharge) {
      await withAccountLease(db, account.id, at, async (fresh) => {
        if (fresh.planId !== account.planId || fresh.planChargeAmount !== account.planChargeAmount) {
          throw conflict('The account\'s plan was changed by another request while this one ran; read the account and try again.', 'plan_id');
        }
        await refuseWhileRenewing(db, fresh, at);
        const credit = computeProrationCredit({ charge: oldCharge, periodStart: fresh.lastPlanRenewal ?? at, periodEnd: fresh.nextPlanRenewal ?? at, at });
        // Postpaid overage of the old plan is billed now: the new period resets those balances
        // (relative to what is measured here, so usage during the charge is not lost).
        const [current] = await db.select().from(plans).where(eq(plans.id, account.planId!));
        const overage = current ? await overageFor(db, account.id, current) : { cents: 0, lines: [], measured: undefined };
        await activatePlan({ db, company, account: fresh, plan, chosen: choice, charge: Math.max(0, newCharge - credit) + overage.cents, reason: 'upgrade', credit, overage, measured: overage.measured, idempotencyKey });
      });
    } else {
      await db.update(accounts).set({ scheduledPlanId: plan.id, scheduledPlanVariableAmounts: choice, updatedAt: at }).where(eq(accounts.id, account.id));
    }
  }
  return getAccount({ db, companyId: company.id, accountId });
}

async function refuseWhilePlanChargePending(db: Db, accountId: string): Promise<void> {
  const pending = await pendingPlanCharge(db, accountId);
  if (pending) {
    throw conflict(`The outcome of plan charge ${pending.id} is not known yet; change the plan once the processor has settled it.`, 'plan_id');
  }
}

/** A due renewal or a plan charge still at the processor would be billed again by a change now. */
async function refuseWhileRenewing(db: Db, account: Account, at: Date): Promise<void> {
  if (account.nextPlanRenewal && account.nextPlanRenewal.getTime() <= at.getTime()) {
    throw conflict('The account\'s renewal is due and not done yet; change the plan once it has renewed.', 'plan_id');
  }
  await refuseWhilePlanChargePending(db, account.id);
}

function sameChoice(a: unknown, b: Record<string, string> | null): boolean {
  const norm = (v: unknown) => JSON.stringify(Object.entries((v ?? {}) as Record<string, string>).sort(([x], [y]) => (x < y ? -1 : 1)));
  return norm(a) === norm(b);
}
