import { asc, eq } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import { balances, transactions, type StoredRefillChange } from '../../db/schema';
import { ledgerId, newId } from '../../ids';
import { notFound } from '../../errors';
import { add, sub, unitsOut, type Units } from '../../money';
import { afterBalancesMoved, type Moved } from './crossings';
import { keysetPage, type PageQuery } from '../../db/keyset';

export type BalanceRow = typeof balances.$inferSelect;
export type Balance = BalanceRow & { pending: Units };
export type LedgerRow = typeof transactions.$inferSelect;

export function serializeBalance(b: Balance) {
  return {
    id: b.id,
    account_id: b.accountId,
    denomination: b.denomination,
    amount: unitsOut(b.amount),
    pending: unitsOut(b.pending),
    available: unitsOut(sub(b.amount, b.pending)),
    refill_threshold: unitsOut(b.refillThreshold),
    refill_amount: unitsOut(b.refillAmount),
    refill_usd_amount: b.refillUsdAmount ?? 0,
    refill_on_day: b.refillOnDay ?? '',
    last_periodic_refill: b.lastPeriodicRefill?.toISOString() ?? null,
    next_periodic_refill: b.nextPeriodicRefill?.toISOString() ?? null,
    // Stored with the amount as an exact decimal string; out as a JSON number like every unit.
    scheduled_refill_change: b.scheduledRefill ? { ...b.scheduledRefill, amount: unitsOut(b.scheduledRefill.amount) } : null,
    managed_by_plan_id: b.managedByPlanId,
    created_at: b.createdAt.toISOString(),
    updated_at: b.updatedAt?.toISOString() ?? null,
  };
}

export function serializeTransaction(t: LedgerRow) {
  return {
    id: t.id,
    account_id: t.accountId,
    denomination: t.denomination,
    type: t.type,
    description: t.description,
    amount: unitsOut(t.amount),
    starting_balance: unitsOut(t.startingBalance),
    ending_balance: unitsOut(t.endingBalance),
    event_id: t.eventId,
    charge_id: t.chargeId,
    created_at: t.createdAt.toISOString(),
  };
}

/** Live holds: pending events that have not reached `expires_at`, whether or not the worker ran. */
const livePending = (now: Date) => sql`coalesce((
  select sum(e.cost_amount) from events e
  where e.account_id = b.account_id and e.cost_denomination = b.denomination
    and e.state = 'pending' and e.expires_at > ${now.toISOString()}::timestamptz), 0)::text`;

function fromRaw(r: Record<string, unknown>): Balance {
  const d = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string));
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    companyId: r.company_id as string,
    denomination: r.denomination as string,
    amount: String(r.amount),
    refillThreshold: (r.refill_threshold as string | null) ?? null,
    refillAmount: (r.refill_amount as string | null) ?? null,
    refillUsdAmount: r.refill_usd_amount === null || r.refill_usd_amount === undefined ? null : Number(r.refill_usd_amount),
    refillOnDay: (r.refill_on_day as string | null) ?? null,
    lastPeriodicRefill: d(r.last_periodic_refill),
    nextPeriodicRefill: d(r.next_periodic_refill),
    scheduledRefill: (r.scheduled_refill as StoredRefillChange | null) ?? null,
    managedByPlanId: (r.managed_by_plan_id as string | null) ?? null,
    includedAmount: (r.included_amount as string | null) ?? null,
    createdAt: new Date(r.created_at as string),
    updatedAt: d(r.updated_at),
    pending: String(r.pending),
  };
}

export async function findBalance({ db, accountId, denomination, now }: { db: Db; accountId: string; denomination: string; now: Date }) {
  const rows = await query(db, sql`select b.*, ${livePending(now)} as pending from balances b where b.account_id = ${accountId} and b.denomination = ${denomination}`);
  return rows[0] ? fromRaw(rows[0]) : null;
}

export async function getBalance(args: { db: Db; accountId: string; denomination: string; now: Date }): Promise<Balance> {
  const found = await findBalance(args);
  if (!found) throw notFound('balance', 'denomination');
  return found;
}

export async function listBalances({ db, accountId, now }: { db: Db; accountId: string; now: Date }) {
  const rows = await query(db, sql`select b.*, ${livePending(now)} as pending from balances b where b.account_id = ${accountId} order by b.denomination`);
  return rows.map(fromRaw);
}

/** Creates the balance at 0 when missing (idempotent; concurrent callers are safe). */
export async function ensureBalances(db: Db, items: { accountId: string; companyId: string; denomination: string }[], now: Date) {
  if (!items.length) return;
  // Sorted, so concurrent batches take index locks in one order.
  const unique = [...new Map(items.map((i) => [`${i.accountId}\u0000${i.denomination}`, i])).values()].sort((a, b) =>
    a.accountId === b.accountId ? (a.denomination < b.denomination ? -1 : 1) : a.accountId < b.accountId ? -1 : 1,
  );
  const at = now.toISOString();
  await query(
    db,
    sql`insert into balances (id, account_id, company_id, denomination, amount, created_at, updated_at)
      select id, account_id, company_id, denomination, 0, ${at}::timestamptz, ${at}::timestamptz
      from unnest(${textArray(unique.map(() => newId('b')))}, ${textArray(unique.map((i) => i.accountId))}, ${textArray(unique.map((i) => i.companyId))},
        ${textArray(unique.map((i) => i.denomination))}) as u(id, account_id, company_id, denomination)
      -- Existing balances are left out by a plain read first: checking them against the unique
      -- index would wait for any transaction that is moving them (a batch holding their locks).
      where not exists (select 1 from balances b where b.account_id = u.account_id and b.denomination = u.denomination)
      on conflict do nothing`,
  );
}

export type Change = {
  accountId: string;
  companyId: string;
  denomination: string;
  amount: Units;
  type: string;
  description: string;
  eventId?: string | null;
  chargeId?: string | null;
};

/**
 * Moves one balance and writes its ledger row in a single statement: the row's starting and
 * ending balance come from the same atomic UPDATE, so they are exact under any concurrency.
 */
export async function applyChange(db: Db, change: Change, now: Date): Promise<LedgerRow> {
  await ensureBalances(db, [change], now);
  const rows = await query(
    db,
    sql`with upd as (
      update balances set amount = amount + ${change.amount}::numeric, updated_at = ${now.toISOString()}::timestamptz
      where account_id = ${change.accountId} and denomination = ${change.denomination}
      returning id, amount
    )
    insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, created_at)
    -- The id is stamped once the balance is locked and moved (lib/ids.ts ledgerId).
    select ${ledgerId(sql`st.s`, sql`1`)}, ${change.accountId}, ${change.companyId}, upd.id, ${change.denomination}, ${change.type}, ${change.description},
      ${change.amount}::numeric, upd.amount - ${change.amount}::numeric, upd.amount, ${change.eventId ?? null}, ${change.chargeId ?? null}, ${now.toISOString()}::timestamptz
    from upd cross join lateral (select ledger_stamp() as s where upd.id is not null) st
    returning id`,
  );
  const [row] = await db.select().from(transactions).where(eq(transactions.id, (rows[0] as { id: string }).id));
  return row;
}

/**
 * Sets a balance to an exact level (plan grants and resets), recording the difference as one
 * ledger row. It is a balance change like any other: `balance_change`, and crossings re-armed
 * (a reset is no usage, so no plan threshold alert).
 */
export async function setLevel(db: Db, change: Omit<Change, 'amount'> & { level: Units; measured?: Units }, now: Date): Promise<LedgerRow | null> {
  await ensureBalances(db, [change], now);
  const locked = (await lockForMove(db, change, now))!;
  // With `measured` (the amount when a plan charge was priced), the balance moves by
  // level − measured: usage recorded since then counts against the new level.
  const delta = sub(change.level, change.measured ?? locked.amount);
  if (delta === '0') return null;
  const row = await applyChange(db, { ...change, amount: delta }, now);
  await notifyMoved(db, change, row, locked, now, { planAlert: null });
  return row;
}

export async function listTransactions({ db, accountId, page, denomination }: { db: Db; accountId: string; page: PageQuery; denomination?: string }) {
  return keysetPage(
    db.select().from(transactions).$dynamic(),
    transactions.id,
    page,
    eq(transactions.accountId, accountId),
    denomination ? eq(transactions.denomination, denomination) : undefined,
  );
}

/** Sum of ledger rows per balance, for invariant checks. */
export async function ledgerSums(db: Db, accountId: string) {
  return db
    .select({ denomination: transactions.denomination, total: sql<string>`sum(${transactions.amount})::text` })
    .from(transactions)
    .where(eq(transactions.accountId, accountId))
    .groupBy(transactions.denomination)
    .orderBy(asc(transactions.denomination));
}

type Locked = { id: string; amount: string; pending: string; threshold: string | null };

/** Locks the balance row and reads what `available` is made of, so before and after are exact. */
async function lockForMove(db: Db, at: { accountId: string; denomination: string }, now: Date): Promise<Locked | undefined> {
  const [locked] = await query<Locked>(
    db,
    // live_pending runs on the locked row with a fresh snapshot: holds committed while we waited count.
    sql`with b as materialized (
        select id, account_id, denomination, amount, refill_threshold from balances
        where account_id = ${at.accountId} and denomination = ${at.denomination} for update
      )
      select b.id, b.amount::text as amount, live_pending(b.account_id, b.denomination, ${now.toISOString()}::timestamptz)::text as pending,
        b.refill_threshold::text as threshold from b`,
  );
  return locked;
}

async function notifyMoved(db: Db, change: Pick<Change, 'accountId' | 'companyId' | 'denomination'>, row: LedgerRow, locked: Locked, now: Date, extra: Pick<Moved, 'planAlert'> = {}) {
  await afterBalancesMoved(
    db,
    change.companyId,
    [{ accountId: change.accountId, denomination: change.denomination, id: row.balanceId, startAmount: row.startingBalance, amount: row.endingBalance, startPending: locked.pending, pending: locked.pending, threshold: locked.threshold, ...extra }],
    [],
    now,
  );
}

/**
 * Moves a balance inside an open transaction and runs the crossing checks; the pending sum is
 * read after the row lock (live_pending takes a fresh snapshot) so `available` before and after
 * are exact.
 */
export async function moveBalance(db: Db, change: Change, now: Date): Promise<LedgerRow> {
  return (await moveBalanceInSteps(db, [change], now))[0];
}

/**
 * One move of a balance written as several ledger rows (a mid-month change: the remaining units
 * cancelled, then the new ones granted). Crossings and balance_change are judged from before the
 * first row to after the last, as for any single move: the dip in between is no drop the
 * customer ever saw.
 */
export async function moveBalanceInSteps(db: Db, steps: [Change, ...Change[]], now: Date): Promise<LedgerRow[]> {
  const [first] = steps;
  await ensureBalances(db, [first], now);
  const locked = (await lockForMove(db, first, now))!;
  const rows: LedgerRow[] = [];
  for (const step of steps) rows.push(await applyChange(db, step, now));
  const last = rows[rows.length - 1];
  await notifyMoved(db, first, rows.length === 1 ? last : { ...last, startingBalance: rows[0].startingBalance }, locked, now);
  return rows;
}

/**
 * Holds stopped counting against `available` (cancelled, or expired at `lapsedAt`): nothing
 * moved in the ledger, but `available` rose by their cost. Queues `balance_change` and re-arms
 * the crossing notifications like any other rise, inside the caller's transaction.
 */
export async function releaseHolds(
  db: Db,
  released: { companyId: string; accountId: string; denomination: string; amount: Units; lapsedAt?: Date }[],
  now: Date,
): Promise<void> {
  // In (account, denomination) order, like every writer that locks several balances.
  const sorted = [...released].sort((a, b) => (a.accountId === b.accountId ? (a.denomination < b.denomination ? -1 : 1) : a.accountId < b.accountId ? -1 : 1));
  for (const h of sorted) {
    const b = await lockForMove(db, h, now);
    if (!b) continue;
    await afterBalancesMoved(
      db,
      h.companyId,
      [{ accountId: h.accountId, denomination: h.denomination, id: b.id, startAmount: b.amount, amount: b.amount, startPending: add(b.pending, h.amount), pending: b.pending, threshold: b.threshold, planAlert: null, raisedAt: h.lapsedAt }],
      [],
      now,
    );
  }
}
