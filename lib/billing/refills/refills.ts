import { and, desc, eq, gte, inArray } from 'drizzle-orm';
import { query, sql, type Db } from '../../db/client';
import { accounts, balances, charges, companies, type Account } from '../../db/schema';
import { ApiError, conflict } from '../../errors';
import { unitsOut } from '../../money';
import { enqueueJob, type Job } from '../../db/sql/jobs';
import { enterNotificationStates } from '../../db/sql/notification-states';
import { DeferJob } from '../../jobs/defer';
import { ensureBalances, findBalance, type Balance } from '../balances/balances';
import { queueThresholdRefill } from '../balances/crossings';
import { checkDenomination } from '../balances/denomination';
import { effectsOf, findRequestCharge, type Charge } from '../charges/charges';
import type { RefillEffect } from '../effects/refill-units';
import { chargeFor, resumeChargeFor } from '../settlement';
import { enqueueNotifications } from '../webhooks/outbox';
import { getAccount } from '../accounts/accounts';
import { withAccountLease } from '../accounts/lease';
import type { Company } from '../companies/companies';
import { decideMidMonthChange, decidePeriodicRefill, decideRefillRemoval, decideRefillSetting, decideScheduledRefillChange, isBelowThreshold, type RefillConfig } from './refill-decision';
import { computeFollowingRefill } from './schedule';

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
  /** The amount is worked out by the service (a mid-month change): below the card minimum it is carried. */
  computed?: boolean;
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
    computed: args.computed,
  });
  // refill_failed is queued with the failure itself (effects/refill-units.ts), also when a pending
  // charge fails later at reconciliation.
  return outcome;
}

/** The refill effect a charge carries for the balance, if any. */
function refillOf(charge: Pick<Charge, 'metadata'>, balanceId: string): RefillEffect | undefined {
  return effectsOf<RefillEffect>(charge).find((e) => e.kind === 'refill' && e.balance_id === balanceId);
}

/** How many threshold refill charges of the balance were made (paid or pending) since `since`, other than the one made under `ownWorkKey`. */
async function thresholdRefillsSince(db: Db, accountId: string, balanceId: string, since: Date, ownWorkKey: string): Promise<number> {
  const rows = await db
    .select({ id: charges.id, metadata: charges.metadata, workKey: charges.workKey })
    .from(charges)
    .where(and(eq(charges.accountId, accountId), eq(charges.reason, 'refill_threshold'), inArray(charges.status, ['pending', 'succeeded']), gte(charges.createdAt, since)));
  return rows.filter((c) => c.workKey !== ownWorkKey && refillOf(c, balanceId) !== undefined).length;
}

/** A pending refill charge (`reason`) of the balance whose row and refill effect `matches`; null when none. */
async function pendingRefillCharge(
  db: Db,
  accountId: string,
  balanceId: string,
  reason: 'refill_monthly' | 'refill_threshold',
  matches: (charge: { id: string; workKey: string | null }, effect: RefillEffect) => boolean,
): Promise<string | null> {
  const rows = await db
    .select({ id: charges.id, metadata: charges.metadata, workKey: charges.workKey })
    .from(charges)
    .where(and(eq(charges.accountId, accountId), eq(charges.status, 'pending'), eq(charges.reason, reason)));
  return rows.find((c) => {
    const refill = refillOf(c, balanceId);
    return refill !== undefined && matches(c, refill);
  })?.id ?? null;
}

/**
 * A pending refill charge of the balance that carries refill settings (a first monthly refill, a
 * mid-month change, a monthly refill applying a scheduled change): when it settles it writes
 * them, over any change made meanwhile. `own` is the charge of this very request (a retry).
 */
function pendingSettingsCharge(db: Db, accountId: string, balanceId: string, own: string | null = null): Promise<string | null> {
  return pendingRefillCharge(db, accountId, balanceId, 'refill_monthly', (c, e) => c.id !== own && Boolean(e.config));
}

/** A threshold refill charge of the balance still pending, other than the one made under `ownWorkKey`. */
function pendingThresholdRefill(db: Db, accountId: string, balanceId: string, ownWorkKey: string): Promise<string | null> {
  return pendingRefillCharge(db, accountId, balanceId, 'refill_threshold', (c) => c.workKey !== ownWorkKey);
}

/** Refuses a refill-settings change while such a charge is pending (409). */
async function refuseWhileSettingsPending(db: Db, accountId: string, balanceId: string, own: string | null = null): Promise<void> {
  const pending = await pendingSettingsCharge(db, accountId, balanceId, own);
  if (pending) {
    throw conflict(`The outcome of refill charge ${pending}, which sets this balance's refills, is not known yet; change them once the processor has settled it.`);
  }
}

async function loadContext(db: Db, company: Company, accountId: string, denomination: string) {
  checkDenomination(denomination);
  const account = await getAccount({ db, companyId: company.id, accountId });
  return { account };
}

/**
 * PUT .../balance/{denomination}/auto_refill. Time-based: the first refill is charged at once
 * and the settings are stored only when it succeeded; then monthly on the refill day. The
 * monthly setting already in effect, sent again, is `unchanged`: nothing charged or stored.
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
  // A monthly setting charges: under the account's lease, read and decided afresh, so two at once
  // cannot both buy a first refill.
  if (config.refill_period === 'monthly') return withAccountLease(db, account.id, now, () => applyRefillSetting({ db, company, account, denomination, config, now, idempotencyKey }), REFILLS_BUSY);
  return applyRefillSetting({ db, company, account, denomination, config, now, idempotencyKey });
}

const REFILLS_BUSY = { message: "Another change of this account's refills or plan is in progress; try again in a moment.", param: null };

async function applyRefillSetting({
  db,
  company,
  account,
  denomination,
  config,
  now,
  idempotencyKey,
}: {
  db: Db;
  company: Company;
  account: Account;
  denomination: string;
  config: RefillConfig;
  now: Date;
  idempotencyKey: string | null;
}) {
  const existed = (await findBalance({ db, accountId: account.id, denomination, now })) !== null;
  await ensureBalances(db, [{ accountId: account.id, companyId: company.id, denomination }], now);
  const balance = (await findBalance({ db, accountId: account.id, denomination, now }))!;
  const lastRefillFailed = config.refill_period === 'monthly' && balance.nextPeriodicRefill !== null && (await lastMonthlyRefillStatus(db, account.id, balance.id)) === 'failed';
  const decision = decideRefillSetting({ at: now, denomination, config, balance, lastRefillFailed });
  if (decision.kind === 'unchanged') {
    // The same refill with another expiry for its grants: that alone changes, nothing is charged.
    const days = config.expires_after_days ?? null;
    if (days === balance.refillExpiresAfterDays) return { balance, unchanged: true };
    await db.update(balances).set({ refillExpiresAfterDays: days, updatedAt: now }).where(eq(balances.id, balance.id));
    return { balance: (await findBalance({ db, accountId: account.id, denomination, now }))!, unchanged: false };
  }
  const own = decision.kind === 'start_monthly' ? ((await findRequestCharge(db, company.id, idempotencyKey, 'refill_monthly', now))?.id ?? null) : null;
  await refuseWhileSettingsPending(db, account.id, balance.id, own);
  if (decision.kind === 'start_monthly') {
    const { amount, charge, description, columns } = decision;
    const outcome = await chargeRefill({ db, company, account, balance, amount, usd: charge, periodic: true, description, now, config: columns, idempotencyKey }).catch(async (err: unknown) => {
      if (!existed && !(err instanceof ApiError && err.extra.charge_pending)) await removeUnusedBalance(db, balance.id);
      throw err;
    });
    if (!outcome.ok) {
      // A refusal changes nothing: a balance made for this setting goes again (one whose charge
      // is still pending stays, for its settlement).
      if (!existed && outcome.charge.status === 'failed') await removeUnusedBalance(db, balance.id);
      throw outcome.error ?? new ApiError('card_declined', 'The card was declined.');
    }
    const after = (await findBalance({ db, accountId: account.id, denomination, now }))!;
    if (isBelowThreshold(after, config.threshold)) await queueThresholdRefill(db, balance.id, now);
  } else {
    // The setting and the refill it calls for at once commit together: a process that died
    // between them would leave a balance below its threshold that no later event crosses again.
    await db.transaction(async (tx) => {
      await tx.update(balances).set({ ...decision.columns, updatedAt: now }).where(eq(balances.id, balance.id));
      const after = (await findBalance({ db: tx, accountId: account.id, denomination, now }))!;
      if (isBelowThreshold(after, config.threshold)) await queueThresholdRefill(tx, balance.id, now);
    });
  }
  return { balance: (await findBalance({ db, accountId: account.id, denomination, now }))!, unchanged: false };
}

/** The status of the balance's latest monthly refill charge (first, monthly, or mid-month); null when none. */
async function lastMonthlyRefillStatus(db: Db, accountId: string, balanceId: string): Promise<string | null> {
  const rows = await db
    .select({ status: charges.status, metadata: charges.metadata })
    .from(charges)
    .where(and(eq(charges.accountId, accountId), eq(charges.reason, 'refill_monthly')))
    .orderBy(desc(charges.createdAt), desc(charges.id))
    .limit(50);
  return rows.find((c) => refillOf(c, balanceId))?.status ?? null;
}

/**
 * Deletes a balance nothing has moved or points at yet: no ledger row, no crossing state, still 0,
 * and no charge that is or may be paid for it (a settlement that failed after the card was paid
 * leaves its charge pending, and the reconciler's settlement needs the balance to credit).
 */
async function removeUnusedBalance(db: Db, balanceId: string): Promise<void> {
  await query(
    db,
    sql`delete from balances b where b.id = ${balanceId} and b.amount = 0
      and not exists (select 1 from transactions t where t.balance_id = b.id)
      and not exists (select 1 from notification_states n where n.balance_id = b.id)
      and not exists (select 1 from charges c where c.account_id = b.account_id and c.status in ('pending', 'succeeded')
        and c.metadata->'effects' @> jsonb_build_array(jsonb_build_object('balance_id', b.id)))`,
  );
}

export async function removeAutoRefill({ db, company, accountId, denomination, now }: { db: Db; company: Company; accountId: string; denomination: string; now: Date }) {
  const { account } = await loadContext(db, company, accountId, denomination);
  const current = await findBalance({ db, accountId: account.id, denomination, now });
  const decision = decideRefillRemoval({ balance: current });
  if (decision.kind === 'conflict') throw decision.error;
  await refuseWhileSettingsPending(db, account.id, current!.id);
  await db
    .update(balances)
    .set({ ...decision.columns, updatedAt: now })
    .where(and(eq(balances.accountId, account.id), eq(balances.denomination, denomination)));
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
  const decision = decideScheduledRefillChange({ balance: b, input });
  if (decision.kind === 'conflict') throw decision.error;
  await refuseWhileSettingsPending(db, account.id, b!.id);
  const { change } = decision;
  await db.update(balances).set({ scheduledRefill: change, updatedAt: now }).where(eq(balances.id, b!.id));
  return { account_id: account.id, denomination: input.denomination, ...change, amount: unitsOut(change.amount) };
}

/**
 * modifymidmonth: the facts are read, `decideMidMonthChange` decides (see there for the rules),
 * and the decision is carried out. The units credited are the units cancelled, in the
 * transaction that settles the charge, so usage during the charge counts against the new units.
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
  return withAccountLease(db, account.id, now, () => applyMidMonthChange({ db, company, account, input, now, idempotencyKey }), REFILLS_BUSY);
}

async function applyMidMonthChange({
  db,
  company,
  account,
  input,
  now,
  idempotencyKey,
}: {
  db: Db;
  company: Company;
  account: Account;
  input: { denomination: string; amount: string; usd_charge: number };
  now: Date;
  idempotencyKey: string | null;
}) {
  const earlier = await findRequestCharge(db, company.id, idempotencyKey, 'refill_monthly', now);
  const b = await findBalance({ db, accountId: account.id, denomination: input.denomination, now });
  const decision = decideMidMonthChange({ at: now, accountId: account.id, input, balance: b, earlier });
  if (decision.kind === 'increase') await refuseWhileSettingsPending(db, account.id, b!.id);
  const current = async () => (await findBalance({ db, accountId: account.id, denomination: input.denomination, now }))!;
  switch (decision.kind) {
    case 'conflict':
      throw decision.error;
    case 'resume': {
      const outcome = await resumeChargeFor({ db, company, account, charge: decision.charge, now });
      if (!outcome.ok) throw outcome.error!;
      return { balance: await current(), credit: decision.credit, charged: outcome.charge.amount };
    }
    case 'increase': {
      const { credit, charge, remaining, columns, description } = decision;
      const config = { ...columns, cancel_remaining: remaining };
      const outcome = await chargeRefill({ db, company, account, balance: b!, amount: input.amount, usd: charge, periodic: true, description, now, config, credit, idempotencyKey, computed: true });
      if (!outcome.ok) throw outcome.error ?? new ApiError('card_declined', 'The card was declined.');
      return { balance: await current(), credit, charged: outcome.charge.amount };
    }
  }
}

/**
 * Due monthly refills: the schedule moves forward in the same statement that claims them. A
 * worker back after downtime refills once, for the latest refill day that has come, and skips the
 * ones that went by meanwhile (as renewals do): the refill says which in its ledger row.
 */
export async function queueDueRefills(db: Db, now: Date): Promise<number> {
  return db.transaction(async (tx) => {
    const due = await query<{ id: string; next_periodic_refill: string | Date; refill_on_day: string }>(
      tx,
      sql`select id, next_periodic_refill, refill_on_day from balances
        where next_periodic_refill <= ${now.toISOString()}::timestamptz order by next_periodic_refill limit 50 for update skip locked`,
    );
    for (const b of due) {
      const { latest, skipped, next } = latestRefillDue(new Date(b.next_periodic_refill), Number(b.refill_on_day || 1), now);
      await tx.update(balances).set({ nextPeriodicRefill: next }).where(eq(balances.id, b.id));
      await enqueueJob(tx, { kind: 'periodic_refill', dedupeKey: `${b.id}:${latest.toISOString()}`, payload: { balance_id: b.id, due: latest.toISOString(), ...(skipped.length && { skipped: skipped.map((d) => d.toISOString()) }) }, runAt: now }, now);
    }
    return due.length;
  });
}

/** Of the refill days from `first` on, the latest that has come by `now`, those before it, and the one after it. */
export function latestRefillDue(first: Date, refillOnDay: number, now: Date): { latest: Date; skipped: Date[]; next: Date } {
  const skipped: Date[] = [];
  let latest = first;
  let next = computeFollowingRefill(first, refillOnDay);
  while (next.getTime() <= now.getTime()) {
    skipped.push(latest);
    latest = next;
    next = computeFollowingRefill(next, refillOnDay);
  }
  return { latest, skipped, next };
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
  const skipped = Array.isArray(job.payload.skipped) ? (job.payload.skipped as string[]) : [];
  const decision = decidePeriodicRefill({ balance: row?.balance ?? null, due: String(job.payload.due ?? ''), skipped });
  if (decision.kind === 'skip' || !row) return;
  const { amount, charge: usd, description } = decision;
  if (decision.applyScheduled) await db.update(balances).set({ refillAmount: amount, refillUsdAmount: usd, scheduledRefill: null }).where(eq(balances.id, row.balance.id));
  const balance = (await findBalance({ db, accountId: row.account.id, denomination: row.balance.denomination, now }))!;
  await chargeRefill({ db, company: row.company, account: row.account, balance, amount, usd, periodic: true, description, now, workKey: `job:${job.id}` }).catch(async (err) => {
    if (!(err instanceof ApiError)) throw err;
    await enqueueNotifications(db, row.company.id, [{ accountId: row.account.id, denomination: row.balance.denomination, topic: 'refill_failed', balance: balance.amount, detail: { reason: err.message } }], now);
  });
}

/**
 * How long a threshold refill waits for another of its balance whose charge is pending, before it
 * looks again: the settlement of that charge wakes it (applyRefill, applyRefillFailure), so this
 * only bounds the wait, as the reconciler's hourly look does.
 */
const THRESHOLD_WAIT_MS = 60 * 60_000;

/** Job: a threshold refill, queued in the event's transaction; one per crossing. */
export async function runThresholdRefill(db: Db, job: Job, now: Date): Promise<void> {
  const row = await loadForJob(db, String(job.payload.balance_id));
  // Turned off by the customer in the portal: the setting stays, nothing is bought.
  if (!row || !row.balance.refillAmount || row.balance.refillThreshold === null || row.balance.thresholdRefillOff) return;
  const balance = (await findBalance({ db, accountId: row.account.id, denomination: row.balance.denomination, now }))!;
  if (!isBelowThreshold(balance, row.balance.refillThreshold)) return;
  // A threshold refill of this balance whose outcome is not known yet may still add its units:
  // another now could buy two for one crossing. This job waits for it (and then finds the balance
  // raised, or buys its own if that one was declined); its own charge (a retry of it) carries on.
  if (await pendingThresholdRefill(db, row.account.id, row.balance.id, `job:${job.id}`)) {
    throw new DeferJob(THRESHOLD_WAIT_MS, 'a threshold refill charge of this balance is still pending');
  }
  // At most max_charges_per_month threshold refills charged (paid or still pending) per calendar
  // month (UTC): past it nothing is charged, and refill_limit_reached is sent once that month.
  const max = row.balance.refillMaxChargesPerMonth;
  if (max !== null) {
    const month = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
    const made = await thresholdRefillsSince(db, row.account.id, row.balance.id, month, `job:${job.id}`);
    if (made >= max) {
      const [entered] = await enterNotificationStates(db, [{ balanceId: row.balance.id, kind: 'refill_limit', period: month.toISOString(), needed: null }], now);
      if (entered) {
        await enqueueNotifications(
          db,
          row.company.id,
          [{ accountId: row.account.id, denomination: row.balance.denomination, topic: 'refill_limit_reached', balance: balance.amount, detail: { max_charges_per_month: max, month: month.toISOString() } }],
          now,
        );
      }
      return;
    }
  }
  await chargeRefill({ db, company: row.company, account: row.account, balance, amount: row.balance.refillAmount, usd: row.balance.refillUsdAmount ?? 0, periodic: false, description: `Threshold refill of ${row.balance.refillAmount} ${row.balance.denomination}`, now, workKey: `job:${job.id}` }).catch(async (err) => {
    if (!(err instanceof ApiError)) throw err;
    await enqueueNotifications(db, row.company.id, [{ accountId: row.account.id, denomination: row.balance.denomination, topic: 'refill_failed', balance: balance.amount, detail: { reason: err.message } }], now);
  });
}
