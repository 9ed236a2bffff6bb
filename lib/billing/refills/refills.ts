import Decimal from 'decimal.js';
import { and, eq } from 'drizzle-orm';
import { query, sql, type Db } from '../../db/client';
import { accounts, balances, companies } from '../../db/schema';
import { ApiError, invalid, notFound } from '../../errors';
import { cmp, roundCents, sub, toUnits, unitsOut } from '../../money';
import { enqueueJob, type Job } from '../../jobs/queue';
import { ensureBalances, findBalance, type Balance } from '../balances/balances';
import { queueThresholdRefill } from '../balances/crossings';
import { checkDenomination } from '../balances/denomination';
import { effectsOf, findRequestCharge } from '../charges/charges';
import { chargeFor, resumeChargeFor, type Effect } from '../settlement';
import { enqueueNotifications } from '../webhooks/outbox';
import { getAccount } from '../accounts/accounts';
import type { Company } from '../companies/companies';
import { computeFollowingRefill, computeRefillSchedule } from './schedule';

type RefillConfig = { amount: string; usd_charge: number; refill_period?: 'monthly'; threshold?: string };

/**
 * Charges for a refill; units only after the charge succeeded. Every refill is a charge row: a
 * free one (0 cents) is recorded as paid, with its units, without calling the processor.
 */
async function chargeRefill(args: {
  db: Db;
  company: Company;
  account: typeof accounts.$inferSelect;
  balance: Balance;
  amount: string;
  usd: number;
  periodic: boolean;
  description: string;
  now: Date;
  config?: Record<string, unknown>;
  credit?: number;
  workKey?: string;
  idempotencyKey?: string | null;
}) {
  const { db, company, account, balance, amount, usd, now } = args;
  const outcome = await chargeFor({
    db,
    company,
    account,
    amount: usd,
    reason: args.periodic ? 'refill_monthly' : 'refill_threshold',
    description: args.description,
    effects: [{ kind: 'refill', balance_id: balance.id, amount, description: args.description, periodic: args.periodic, ...(args.config && { config: args.config }), ...(args.credit !== undefined && { credit: args.credit }) }],
    now,
    workKey: args.workKey,
    idempotencyKey: args.idempotencyKey,
  });
  // refill_failed is queued with the failure itself (refills/complete.ts), also when a pending
  // charge fails later at reconciliation.
  return outcome;
}

/**
 * The balance columns for a refill setting. A PUT replaces the whole setting (amount and charge
 * are shared by both kinds): a threshold-only PUT ends a monthly schedule, a monthly-only PUT
 * ends a threshold. `keepThreshold` is for the mid-month change, which only alters the monthly part.
 */
function toConfigColumns(c: RefillConfig, now: Date, opts: { keepThreshold?: boolean } = {}) {
  const cols: Record<string, unknown> = { refillAmount: c.amount, refillUsdAmount: c.usd_charge };
  if (c.threshold !== undefined) cols.refillThreshold = c.threshold;
  else if (!opts.keepThreshold) cols.refillThreshold = null;
  if (c.refill_period === 'monthly') {
    const { refillOnDay, next } = computeRefillSchedule(now);
    Object.assign(cols, { refillOnDay: String(refillOnDay), nextPeriodicRefill: next, scheduledRefill: null });
  } else {
    Object.assign(cols, { refillOnDay: null, nextPeriodicRefill: null, scheduledRefill: null });
  }
  return cols;
}

async function loadContext(db: Db, company: Company, accountId: string, denomination: string) {
  checkDenomination(denomination);
  const account = await getAccount({ db, companyId: company.id, accountId });
  return { account };
}

/**
 * PUT .../balance/{denomination}/auto_refill. Time-based: the first refill is charged at once
 * and the settings are stored only when it succeeded; then monthly on the refill day.
 * Threshold-based: stored at once; a refill is queued now if the balance is already below.
 */
export async function setAutoRefill({
  db,
  company,
  accountId,
  denomination,
  config,
  now,
  idempotencyKey = null,
}: {
  db: Db;
  company: Company;
  accountId: string;
  denomination: string;
  config: RefillConfig;
  now: Date;
  idempotencyKey?: string | null;
}) {
  const { account } = await loadContext(db, company, accountId, denomination);
  await ensureBalances(db, [{ accountId: account.id, companyId: company.id, denomination }], now);
  const balance = (await findBalance({ db, accountId: account.id, denomination, now }))!;
  const cols = toConfigColumns(config, now);
  if (config.refill_period === 'monthly') {
    const outcome = await chargeRefill({ db, company, account, balance, amount: config.amount, usd: config.usd_charge, periodic: true, description: `Monthly refill of ${config.amount} ${denomination} (first)`, now, config: cols, idempotencyKey });
    if (!outcome.ok) throw outcome.error ?? new ApiError('card_declined', 'The card was declined.');
    const after = (await findBalance({ db, accountId: account.id, denomination, now }))!;
    if (config.threshold !== undefined && cmp(sub(after.amount, after.pending), config.threshold) < 0) await queueThresholdRefill(db, balance.id, now);
  } else {
    await db.update(balances).set({ ...cols, updatedAt: now } as never).where(eq(balances.id, balance.id));
    const after = (await findBalance({ db, accountId: account.id, denomination, now }))!;
    if (config.threshold !== undefined && cmp(sub(after.amount, after.pending), config.threshold) < 0) await queueThresholdRefill(db, balance.id, now);
  }
  return (await findBalance({ db, accountId: account.id, denomination, now }))!;
}

export async function removeAutoRefill({ db, company, accountId, denomination, now }: { db: Db; company: Company; accountId: string; denomination: string; now: Date }) {
  const { account } = await loadContext(db, company, accountId, denomination);
  const [updated] = await db
    .update(balances)
    .set({ refillThreshold: null, refillAmount: null, refillUsdAmount: null, refillOnDay: null, nextPeriodicRefill: null, scheduledRefill: null, updatedAt: now })
    .where(and(eq(balances.accountId, account.id), eq(balances.denomination, denomination)))
    .returning();
  if (!updated) throw notFound('balance', 'denomination');
  return (await findBalance({ db, accountId: account.id, denomination, now }))!;
}

/** PUT /accounts/{id}/auto_refill: a change that takes effect at the next monthly refill. */
export async function scheduleRefillChange({
  db,
  company,
  accountId,
  input,
  now,
}: {
  db: Db;
  company: Company;
  accountId: string;
  input: { denomination: string; amount: string; usd_charge: number; refill_period?: 'monthly' };
  now: Date;
}) {
  const { account } = await loadContext(db, company, accountId, input.denomination);
  const b = await findBalance({ db, accountId: account.id, denomination: input.denomination, now });
  if (!b) throw notFound('balance', 'denomination');
  if (!b.nextPeriodicRefill) {
    throw invalid('That balance has no monthly refill to change: set one with PUT /v1/accounts/{account_id}/balance/{denomination}/auto_refill.', 'denomination');
  }
  const change = { amount: input.amount, usd_charge: input.usd_charge, effective_at: b.nextPeriodicRefill.toISOString() };
  await db.update(balances).set({ scheduledRefill: change, updatedAt: now }).where(eq(balances.id, b.id));
  return { account_id: account.id, denomination: input.denomination, ...change, amount: unitsOut(input.amount) };
}

/**
 * modifymidmonth: an increase starts at once. Remaining units (available ones: units held by
 * pending events are spoken for) are cancelled, their value at the old unit price
 * (usd_charge / amount) comes off the new usd_charge, the new units are granted, and the refill
 * day moves to today. The units credited are the units cancelled, in the transaction that
 * settles the charge, so usage during the charge counts against the new units.
 */
export async function modifyMidMonth({
  db,
  company,
  accountId,
  input,
  now,
  idempotencyKey = null,
}: {
  db: Db;
  company: Company;
  accountId: string;
  input: { denomination: string; amount: string; usd_charge: number };
  now: Date;
  idempotencyKey?: string | null;
}) {
  const { account } = await loadContext(db, company, accountId, input.denomination);
  // A retried request carries on with its first attempt's charge (its checks would now fail).
  const earlier = await findRequestCharge(db, company.id, idempotencyKey, 'refill_monthly', now);
  if (earlier && earlier.accountId === account.id) {
    const outcome = await resumeChargeFor({ db, company, account, charge: earlier, now });
    if (!outcome.ok) throw outcome.error!;
    const effect = effectsOf<Effect>(earlier).find((e) => e.kind === 'refill');
    const credit = effect?.kind === 'refill' ? (effect.credit ?? 0) : 0;
    return { balance: (await findBalance({ db, accountId: account.id, denomination: input.denomination, now }))!, credit, charged: outcome.charge.amount };
  }
  const b = await findBalance({ db, accountId: account.id, denomination: input.denomination, now });
  if (!b) throw notFound('balance', 'denomination');
  if (!b.refillAmount || !b.nextPeriodicRefill) throw invalid('That balance has no monthly refill to modify.', 'denomination');
  if (cmp(input.amount, b.refillAmount) <= 0 || input.usd_charge < (b.refillUsdAmount ?? 0)) {
    throw invalid('modifymidmonth only increases a refill. Schedule a decrease for next month with PUT /v1/accounts/{account_id}/auto_refill.', 'amount');
  }
  const remaining = Decimal.max(0, Decimal.min(sub(b.amount, b.pending), b.refillAmount));
  const credit = roundCents(remaining.mul(b.refillUsdAmount ?? 0).div(b.refillAmount));
  const usd = Math.max(0, input.usd_charge - credit);
  const config = { ...toConfigColumns({ amount: input.amount, usd_charge: input.usd_charge, refill_period: 'monthly' }, now, { keepThreshold: true }), cancel_remaining: toUnits(remaining) };
  const description = `Mid-month change to ${input.amount} ${input.denomination} for ${input.usd_charge} cents less ${credit} cents for ${toUnits(remaining)} cancelled units`;
  const outcome = await chargeRefill({ db, company, account, balance: b, amount: input.amount, usd, periodic: true, description, now, config, credit, idempotencyKey });
  if (!outcome.ok) throw outcome.error ?? new ApiError('card_declined', 'The card was declined.');
  return { balance: (await findBalance({ db, accountId: account.id, denomination: input.denomination, now }))!, credit, charged: usd };
}

/** Due monthly refills: the schedule moves forward in the same statement that claims them. */
export async function queueDueRefills(db: Db, now: Date): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await query<{ id: string; next_periodic_refill: string | Date; refill_on_day: string }>(
      tx,
      sql`select id, next_periodic_refill, refill_on_day from balances
        where next_periodic_refill <= ${now.toISOString()}::timestamptz order by next_periodic_refill limit 50 for update skip locked`,
    );
    for (const b of due) {
      const at = new Date(b.next_periodic_refill);
      await tx.update(balances).set({ nextPeriodicRefill: computeFollowingRefill(at, Number(b.refill_on_day || 1)) }).where(eq(balances.id, b.id));
      await enqueueJob(tx, { kind: 'periodic_refill', dedupeKey: `${b.id}:${at.toISOString()}`, payload: { balance_id: b.id, due: at.toISOString() }, runAt: now }, now);
    }
    return due.length;
  });
}

export async function nextRefillDue(db: Db, after: Date): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(db, sql`select min(next_periodic_refill) as at from balances where next_periodic_refill > ${after.toISOString()}::timestamptz`);
  return row?.at ? new Date(row.at) : null;
}

async function loadForJob(db: Db, balanceId: string) {
  const [row] = await db
    .select({ balance: balances, account: accounts, company: companies })
    .from(balances)
    .innerJoin(accounts, eq(accounts.id, balances.accountId))
    .innerJoin(companies, eq(companies.id, balances.companyId))
    .where(eq(balances.id, balanceId));
  return row;
}

/** Job: one monthly refill. A scheduled change takes effect here, before charging. */
export async function runPeriodicRefill(db: Db, job: Job, now: Date): Promise<void> {
  const row = await loadForJob(db, String(job.payload.balance_id));
  if (!row || !row.balance.refillAmount) return;
  let amount = row.balance.refillAmount;
  let usd = row.balance.refillUsdAmount ?? 0;
  const scheduled = row.balance.scheduledRefill as { amount: string; usd_charge: number; effective_at?: string } | null;
  // A change scheduled after this refill was queued is meant for the following one.
  const dueAt = String(job.payload.due ?? '');
  if (scheduled && (!scheduled.effective_at || !dueAt || new Date(scheduled.effective_at) <= new Date(dueAt))) {
    amount = scheduled.amount;
    usd = scheduled.usd_charge;
    await db.update(balances).set({ refillAmount: amount, refillUsdAmount: usd, scheduledRefill: null }).where(eq(balances.id, row.balance.id));
  }
  const balance = (await findBalance({ db, accountId: row.account.id, denomination: row.balance.denomination, now }))!;
  await chargeRefill({ db, company: row.company, account: row.account, balance, amount, usd, periodic: true, description: `Monthly refill of ${amount} ${row.balance.denomination}`, now, workKey: `job:${job.id}` }).catch(async (err) => {
    if (!(err instanceof ApiError)) throw err;
    await enqueueNotifications(db, row.company.id, [{ accountId: row.account.id, denomination: row.balance.denomination, topic: 'refill_failed', balance: balance.amount, detail: { reason: err.message } }], now);
  });
}

/** Job: a threshold refill, queued in the event's transaction; one per crossing. */
export async function runThresholdRefill(db: Db, job: Job, now: Date): Promise<void> {
  const row = await loadForJob(db, String(job.payload.balance_id));
  if (!row || !row.balance.refillAmount || row.balance.refillThreshold === null) return;
  const balance = (await findBalance({ db, accountId: row.account.id, denomination: row.balance.denomination, now }))!;
  if (cmp(sub(balance.amount, balance.pending), row.balance.refillThreshold) >= 0) return;
  await chargeRefill({ db, company: row.company, account: row.account, balance, amount: row.balance.refillAmount, usd: row.balance.refillUsdAmount ?? 0, periodic: false, description: `Threshold refill of ${row.balance.refillAmount} ${row.balance.denomination}`, now, workKey: `job:${job.id}` }).catch(async (err) => {
    if (!(err instanceof ApiError)) throw err;
    await enqueueNotifications(db, row.company.id, [{ accountId: row.account.id, denomination: row.balance.denomination, topic: 'refill_failed', balance: balance.amount, detail: { reason: err.message } }], now);
  });
}
