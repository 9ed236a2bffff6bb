import { and, eq, inArray, isNotNull } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { log } from '../../log';
import { accounts, balances, charges, companies, plans } from '../../db/schema';
import type { Charge } from '../charges/charges';
import { chargeFor } from '../settlement';
import { completeRenewal, failRenewal, type Measured } from '../effects/plan-period';
import { computeOverage } from '../catalog/periods';
import { splitForCard } from '../../money';
import { leaseDueRenewals, leasePastDueRenewal, releaseRenewalLeases } from '../../db/sql/renewals';
import { now as clockNow } from '../../clock';
import { periodChargeFor, planBalances, type Plan } from '../catalog/plans';

type Claimed = { ids: string[]; lease: Date };

/** Leases due accounts; SKIP LOCKED and the lease keep two workers from renewing one account twice. */
async function claimDueRenewals(db: Db, now: Date, limit = 10): Promise<Claimed> {
  // `now` is the run's time, which a long run of rounds leaves behind: the lease counts from the claim.
  const claimedAt = Math.max(now.getTime(), clockNow().getTime());
  const lease = new Date(claimedAt + 10 * 60_000);
  return { ids: await leaseDueRenewals(db, now, lease, limit), lease };
}

/**
 * A PAST_DUE account got a new card: try its renewal now instead of at the next retry slot.
 * Same lease as the worker, so it never runs beside a worker's attempt. Returns whether it ran.
 */
export async function retryPastDueRenewal(db: Db, accountId: string, now: Date): Promise<boolean> {
  const lease = new Date(now.getTime() + 10 * 60_000);
  if (!(await leasePastDueRenewal(db, accountId, now, lease))) return false;
  try {
    await renewOne(db, accountId, now, lease, { withNewCard: true });
  } finally {
    await releaseRenewalLeases(db, [accountId], lease);
  }
  return true;
}

/** How long a renewal waits before looking again at a plan charge whose outcome is unknown. */
const PENDING_RECHECK_MS = 3600_000;

/**
 * Postpaid overage of the current plan's balances (units below zero × the balance's price), and
 * the plan balances it was measured on: the new period starts from those (see Measured).
 */
export async function overageFor(db: Db, accountId: string, plan: Plan) {
  const rows = await db
    .select({ denomination: balances.denomination, amount: balances.amount })
    .from(balances)
    .where(and(eq(balances.accountId, accountId), eq(balances.managedByPlanId, plan.id), isNotNull(balances.includedAmount)));
  const measured: Measured = Object.fromEntries(rows.map((r) => [r.denomination, r.amount]));
  if (plan.overageChargeMode !== 'postpay') return { cents: 0, lines: [] as string[], measured };
  const prices = new Map(planBalances(plan).map((b) => [b.denomination, b.overage_charge_amount]));
  let cents = 0;
  const lines: string[] = [];
  for (const r of rows) {
    const c = computeOverage(r.amount, prices.get(r.denomination) ?? 0);
    if (c > 0) {
      cents += c;
      lines.push(`overage ${r.amount.replace('-', '')} ${r.denomination} = ${c} cents`);
    }
  }
  return { cents, lines, measured };
}

/**
 * A plan charge of the account (start, change or renewal) whose outcome is not known yet. While
 * one exists, no other plan charge may start: both could succeed.
 */
export async function pendingPlanCharge(db: Db, accountId: string): Promise<Charge | null> {
  const [row] = await db
    .select()
    .from(charges)
    .where(
      and(
        eq(charges.accountId, accountId),
        eq(charges.status, 'pending'),
        inArray(charges.reason, ['plan_start', 'plan_change', 'plan_renewal']),
      ),
    )
    .limit(1);
  return row ?? null;
}

/**
 * Renews every due plan: one charge (period + postpaid overage), then resets on success. A worker
 * that stops gives back the leases of the accounts it has not started on.
 */
export async function renewDuePlans(db: Db, now: Date, opts: { stopping?: () => boolean } = {}): Promise<number> {
  const { ids, lease } = await claimDueRenewals(db, now);
  for (const [i, id] of ids.entries()) {
    if (opts.stopping?.()) {
      await releaseRenewalLeases(db, ids.slice(i), lease);
      return i;
    }
    try {
      await renewOne(db, id, now, lease);
    } catch (err) {
      // Not a payment failure (those are recorded with their charge): the account keeps its
      // lease, so the renewal runs again when the lease ends, not at once in a loop.
      log.error({ account_id: id, err }, 'renewal failed; retried when its lease ends');
      continue;
    }
    await releaseRenewalLeases(db, [id], lease);
  }
  return ids.length;
}

/**
 * Whether a claimed account is still this run's to renew: under its lease and due at `now`. Work
 * done since the claim may have renewed it (the reconciler settling an earlier renewal charge
 * that was paid late, a plan change), which clears the lease and moves the due date: renewing it
 * again would charge the next period early and expire what is left of the one just paid for.
 */
function stillOurs(account: typeof accounts.$inferSelect, now: Date, lease: Date, withNewCard: boolean): boolean {
  // A new card's try is outside the retry schedule (leasePastDueRenewal): due is enough.
  const at = withNewCard ? account.nextPlanRenewal : (account.renewalRetryAt ?? account.nextPlanRenewal);
  return (
    account.renewalLockedUntil?.getTime() === lease.getTime() &&
    (account.planStatus === 'ACTIVE' || account.planStatus === 'PAST_DUE') &&
    at !== null &&
    at.getTime() <= now.getTime()
  );
}

/**
 * One renewal attempt. `withNewCard`: tried at once because a card was just attached, outside
 * the retry schedule; its failure leaves the schedule (the attempt count and the next retry) as
 * it was, and each card gets its own charge.
 */
async function renewOne(db: Db, accountId: string, now: Date, lease: Date, { withNewCard = false }: { withNewCard?: boolean } = {}): Promise<void> {
  const [row] = await db
    .select({ account: accounts, company: companies })
    .from(accounts)
    .innerJoin(companies, eq(companies.id, accounts.companyId))
    .where(eq(accounts.id, accountId));
  if (!row || !stillOurs(row.account, now, lease, withNewCard)) return;
  const { account, company } = row;
  const due = account.nextPlanRenewal!;
  const stillDue = and(eq(accounts.id, accountId), eq(accounts.nextPlanRenewal, due));
  if (await pendingPlanCharge(db, accountId)) {
    // Its outcome decides (the reconciler settles it); another attempt could charge twice.
    await db.update(accounts).set({ renewalRetryAt: new Date(now.getTime() + PENDING_RECHECK_MS), updatedAt: now }).where(stillDue);
    return;
  }
  const [current] = await db.select().from(plans).where(eq(plans.id, account.planId!));
  const targetId = account.scheduledPlanId ?? current.id;
  const [target] = targetId === current.id ? [current] : await db.select().from(plans).where(eq(plans.id, targetId));
  const chosen = ((account.scheduledPlanId ? account.scheduledPlanVariableAmounts : account.planVariableAmounts) as Record<string, string> | null) ?? null;
  const periodCharge = periodChargeFor(target, chosen);
  const overage = await overageFor(db, accountId, current);
  const carried = account.carriedCents;
  const total = periodCharge + overage.cents + carried;
  if (splitForCard(total).charge === 0) {
    // Nothing, or less than the smallest card payment: renewed without a charge, and what it
    // comes to is added to the next renewal's, so overage is billed once it adds up.
    await db.transaction((tx) => completeRenewal(tx, { accountId, due, planId: targetId, chosen, chargeId: null, measured: overage.measured, now, carriedDelta: periodCharge + overage.cents }));
    return;
  }
  const description = [`Plan ${target.name} renewal: ${periodCharge} cents`, ...overage.lines, ...(carried ? [`carried from earlier renewals (below $0.50 each): ${carried} cents`] : [])].join('; ');
  const attempt = account.renewalAttempts;
  const outcome = await chargeFor({
    db,
    company,
    account,
    amount: total,
    reason: 'plan_renewal',
    description,
    // An effect without `attempt` does not move the schedule when it fails (applyRenewalFailure).
    effects: [{ kind: 'renew_plan', due: due.toISOString(), plan_id: targetId, chosen, ...(!withNewCard && { attempt }), measured: overage.measured, carried_paid: carried }],
    now,
    // One charge per due date and attempt: a worker that dies mid-renewal and a later claim
    // reuse it (same processor idempotency key), so a renewal is never charged twice. Only a
    // failed charge moves to the next attempt. A new card's try is one per card and attempt.
    workKey: `renewal:${account.id}:${due.toISOString()}:${attempt}${withNewCard ? `:${account.paymentMethod?.id ?? 'none'}` : ''}`,
  });
  if (outcome.charge.status === 'failed' && !withNewCard) {
    // Normally done with the charge's failure already (same transaction); harmless to repeat.
    await failRenewal(db, { accountId, due, attempt, now });
  } else if (outcome.charge.status === 'pending') {
    await db.update(accounts).set({ renewalRetryAt: new Date(now.getTime() + PENDING_RECHECK_MS), updatedAt: now }).where(stillDue);
  }
}
