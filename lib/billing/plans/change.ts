import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts, balances, planChangeQuotes, plans } from '../../db/schema';
import { now as clockNow } from '../../clock';
import { unitsOut } from '../../money';
import { getAccount, validateAccountInput, type Account } from '../accounts/accounts';
import { activatePlan } from './activate';
import { withAccountLease } from '../accounts/lease';
import { findRequestCharge, missingPaymentMethod } from '../charges/charges';
import { resumeChargeFor } from '../settlement';
import type { Company } from '../companies/companies';
import { changedMeanwhile, choiceKey, decidePlanChange, describePlanChange, pendingPlanChargeConflict, type Overage, type PlanChangeDecision, type PlanChangeFacts, type PlanChangePreview } from './change-decision';
import { getPlan, type Plan } from '../catalog/plans';
import { overageFor, pendingPlanCharge } from './renewals';

type ChangeRequest = { db: Db; company: Company; accountId: string; planId: string; chosen?: Record<string, string> };

/** How long a preview's price holds for a changeplan with the same body. */
export const QUOTE_TTL_MS = 10 * 60_000;

/**
 * changeplan: the facts are read, `decidePlanChange` decides (see there for the rules), and the
 * decision is carried out. A decision that charges is made again under the account's plan lease
 * from what is read there, so two requests that both read "no plan" or the same old plan cannot
 * both charge. A retried request (same Idempotency-Key) carries on with the charge its first
 * attempt made.
 */
export async function changePlan({ db, company, accountId, planId, chosen, idempotencyKey = null }: ChangeRequest & { idempotencyKey?: string | null }) {
  const { account, facts } = await readPlanChange({ db, company, accountId, planId, chosen }, idempotencyKey, true);
  await executePlanChange(db, company, account, facts, decidePlanChange(facts), idempotencyKey);
  return getAccount({ db, companyId: company.id, accountId });
}

/**
 * What changeplan with the same body would do now, without doing it: the figure it would charge,
 * or the error it would answer. An upgrade's credit for unused time depends on the time, so the
 * preview's time is kept (planChangeQuotes): a changeplan, or another preview, with the same body
 * within QUOTE_TTL_MS credits as of then, and charges exactly what the preview said.
 */
export async function previewPlanChange(req: ChangeRequest): Promise<PlanChangePreview> {
  const { account, facts } = await readPlanChange(req, null, true);
  const decision = decidePlanChange(facts);
  if (decision.kind === 'conflict') throw decision.error;
  if (decision.kind === 'resume') throw new Error('a preview has no earlier request to resume');
  if ((decision.kind === 'start' || decision.kind === 'upgrade') && decision.charge > 0) {
    const missing = missingPaymentMethod(req.company, account);
    if (missing) throw missing;
  }
  if (decision.kind === 'upgrade' && account.planId && account.lastPlanRenewal) {
    // A preview within the time of an earlier one of the same change keeps that one's time.
    const quote = { planId: facts.plan.id, chosen: choiceKey(facts.chosen), fromPlanId: account.planId, periodStart: account.lastPlanRenewal, quotedAt: facts.quotedAt ?? facts.at };
    await req.db
      .insert(planChangeQuotes)
      .values({ accountId: account.id, ...quote })
      .onConflictDoUpdate({ target: planChangeQuotes.accountId, set: quote });
  } else {
    // The account's latest preview is of another change: no earlier one holds any more.
    await req.db.delete(planChangeQuotes).where(eq(planChangeQuotes.accountId, account.id));
  }
  const current = await req.db
    .select({ denomination: balances.denomination, amount: balances.amount, managedByPlanId: balances.managedByPlanId })
    .from(balances)
    .where(eq(balances.accountId, facts.account.id));
  return describePlanChange(facts, decision, current);
}

/** The reads a plan change decides on; `quoted`: credit as of a recent preview of the same change. */
async function readPlanChange({ db, company, accountId, planId, chosen }: ChangeRequest, idempotencyKey: string | null, quoted: boolean) {
  const account = await getAccount({ db, companyId: company.id, accountId });
  const plan = await getPlan({ db, companyId: company.id, planId });
  await validateAccountInput({ db, companyId: company.id, input: { name: account.name, email: account.email, plan_id: planId, plan_variable_amounts: chosen } });
  const at = clockNow();
  const earlier = (await findRequestCharge(db, company.id, idempotencyKey, 'plan_change', at)) ?? (await findRequestCharge(db, company.id, idempotencyKey, 'plan_start', at));
  return { account, facts: await factsFor(db, account, plan, chosen ?? null, earlier, at, quoted) };
}

async function factsFor(db: Db, account: Account, plan: Plan, chosen: Record<string, string> | null, earlier: PlanChangeFacts['earlier'], at: Date, quoted: boolean): Promise<PlanChangeFacts> {
  const pending = await pendingPlanCharge(db, account.id);
  const quotedAt = quoted ? await quoteTime(db, account, plan, chosen, at) : null;
  return { at, account, plan, chosen, earlier, pendingPlanChargeId: pending?.id ?? null, overage: await currentOverage(db, account), quotedAt };
}

/** When the account's latest preview priced this same change, if that was within QUOTE_TTL_MS and in the same plan period. */
async function quoteTime(db: Db, account: Account, plan: Plan, chosen: Record<string, string> | null, at: Date): Promise<Date | null> {
  const [quote] = await db.select().from(planChangeQuotes).where(eq(planChangeQuotes.accountId, account.id));
  if (!quote || quote.planId !== plan.id || quote.chosen !== choiceKey(chosen)) return null;
  if (quote.fromPlanId !== account.planId || quote.periodStart.getTime() !== account.lastPlanRenewal?.getTime()) return null;
  const age = at.getTime() - quote.quotedAt.getTime();
  return age >= 0 && age <= QUOTE_TTL_MS ? quote.quotedAt : null;
}

/** Postpaid overage of the account's current plan, relative to the balances measured here. */
async function currentOverage(db: Db, account: Account): Promise<Overage> {
  if (!account.planId) return { cents: 0, lines: [] };
  const [current] = await db.select().from(plans).where(eq(plans.id, account.planId));
  return current ? overageFor(db, account.id, current) : { cents: 0, lines: [] };
}

async function executePlanChange(db: Db, company: Company, account: Account, facts: PlanChangeFacts, decision: PlanChangeDecision, idempotencyKey: string | null): Promise<void> {
  const { plan, chosen, at } = facts;
  switch (decision.kind) {
    case 'conflict':
      throw decision.error;
    case 'resume': {
      const outcome = await resumeChargeFor({ db, company, account, charge: decision.charge, now: at });
      if (!outcome.ok) throw outcome.error!;
      return;
    }
    case 'attach_pending':
      // Under the lease a card saved through the collector or the portal takes to start the
      // waiting plan: a start under way finishes first, and the change then finds the plan started.
      await withAccountLease(db, account.id, at, async (fresh) => {
        if (fresh.planStatus !== 'PENDING_PAYMENT_METHOD' || fresh.planId !== account.planId) throw changedMeanwhile();
        const pending = await pendingPlanCharge(db, account.id);
        if (pending) throw pendingPlanChargeConflict(pending.id);
        await db.update(accounts).set({ planId: plan.id, planVariableAmounts: chosen, updatedAt: at }).where(eq(accounts.id, account.id));
      });
      return;
    case 'cancel_downgrade':
      await db.update(accounts).set({ scheduledPlanId: null, scheduledPlanVariableAmounts: null, updatedAt: at }).where(eq(accounts.id, account.id));
      return;
    case 'schedule_downgrade':
      await db.update(accounts).set({ scheduledPlanId: plan.id, scheduledPlanVariableAmounts: chosen, updatedAt: at }).where(eq(accounts.id, account.id));
      return;
    case 'start':
    case 'upgrade':
      await withAccountLease(db, account.id, at, async (fresh) => {
        if (fresh.planId !== account.planId || fresh.planStatus !== account.planStatus || fresh.planChargeAmount !== account.planChargeAmount) throw changedMeanwhile();
        // Decided again on what the lease holder reads: the overage measured here is what the new period starts from.
        const final = decidePlanChange(await factsFor(db, fresh, plan, chosen, null, at, true));
        if (final.kind === 'conflict') throw final.error;
        if (final.kind === 'start') {
          await activatePlan({ db, company, account: fresh, plan, chosen, charge: final.charge, reason: 'start', idempotencyKey });
        } else if (final.kind === 'upgrade') {
          const { credit, overage } = final;
          await activatePlan({ db, company, account: fresh, plan, chosen, charge: final.charge, reason: 'upgrade', credit, overage, measured: overage.measured, idempotencyKey });
        } else {
          throw changedMeanwhile();
        }
      });
  }
}

export function serializePlanChangePreview(p: PlanChangePreview) {
  return {
    plan_id: p.planId,
    effective: p.effective,
    charge_amount: p.chargeAmount,
    carried_amount: p.carriedAmount,
    credit_amount: p.creditAmount,
    overage_amount: p.overageAmount,
    next_plan_renewal: p.nextPlanRenewal?.toISOString() ?? null,
    balances: p.balances.map((b) => ({ denomination: b.denomination, amount: unitsOut(b.amount), managed_by_plan_id: b.managedByPlanId })),
  };
}
