import { asc, eq } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import { balances, transactions, type StoredRefillChange } from '../../db/schema';
import { newId } from '../../ids';
import { notFound } from '../../errors';
import { add, cmp, sub, unitsOut, type Units } from '../../money';
import { movedBalance, notifyMoves } from './crossings';
import { decideMove, type MoveOp, type MovePlan, type PlanAlert } from './move-decision';
import { insertLedgerRows, lockBalances, setBalanceAmounts, type LockedBalance } from '../../db/sql/balance-move';
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

/** A balance row as a statement returned it (the table's column names), with its live holds as `pending`. */
export function balanceFromRow(r: Record<string, unknown>): Balance {
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
    refillMaxChargesPerMonth: r.refill_max_charges_per_month === null || r.refill_max_charges_per_month === undefined ? null : Number(r.refill_max_charges_per_month),
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
  return rows[0] ? balanceFromRow(rows[0]) : null;
}

export async function getBalance(args: { db: Db; accountId: string; denomination: string; now: Date }): Promise<Balance> {
  const found = await findBalance(args);
  if (!found) throw notFound('balance', 'denomination');
  return found;
}

export async function listBalances({ db, accountId, now }: { db: Db; accountId: string; now: Date }) {
  const rows = await query(db, sql`select b.*, ${livePending(now)} as pending from balances b where b.account_id = ${accountId} order by b.denomination`);
  return rows.map(balanceFromRow);
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

/** A ledger row's own fields: what the move is, as the ledger shows it. */
export type LedgerFields = { type: LedgerRow['type']; description: string; eventId?: string | null; chargeId?: string | null };

export type Change = { accountId: string; companyId: string; denomination: string; amount: Units } & LedgerFields;

/**
 * A move of one balance: its ops in order (move-decision.ts), each op that writes a ledger row
 * with its row's fields. Ops `release` and `complete_hold` are holds whose events this
 * transaction already flipped: the holds read under the lock no longer count them, so the move
 * starts from that read plus their cost.
 */
export type BalanceMove = {
  accountId: string;
  denomination: string;
  ops: { op: MoveOp; ledger?: LedgerFields }[];
  /** When a rise took effect, if before now (holds that lapsed earlier). */
  raisedAt?: Date;
};

export type MoveResult = { balanceId: string; plan: MovePlan; rows: LedgerRow[] };

/**
 * The general balance writer: locks the balances in (account, denomination) order, reads what
 * each move decides from (amount, live holds, refill threshold, plan alert, whether it is in a
 * notification state) after the locks are held, decides each move (move-decision.ts), and writes
 * what it decided: the ledger rows, the new amounts, the notifications and crossing states, a
 * threshold refill's job. Inside the caller's transaction; balances are created when missing.
 */
export async function moveBalances(db: Db, companyId: string, moves: BalanceMove[], now: Date): Promise<MoveResult[]> {
  if (!moves.length) return [];
  // One move per balance: each is decided from the facts read once under its lock.
  if (new Set(moves.map((m) => pairKey(m.accountId, m.denomination))).size < moves.length) throw new Error('moveBalances takes one move per balance');
  const pairs = moves.map((m) => [m.accountId, m.denomination] as const);
  let facts = new Map<string, LockedBalance>();
  // Made when missing, then locked; made again should one be deleted in between (a balance nothing used yet may be).
  for (let attempt = 0; facts.size < pairs.length; attempt++) {
    if (attempt === 3) throw new Error('a balance to move kept disappearing before it could be locked');
    await ensureBalances(db, moves.map((m) => ({ accountId: m.accountId, companyId, denomination: m.denomination })), now);
    facts = new Map((await lockBalances(db, pairs, now)).map((b) => [pairKey(b.account_id, b.denomination), b]));
  }
  const decided = moves.map((m) => {
    const b = facts.get(pairKey(m.accountId, m.denomination))!;
    const flipped = m.ops.reduce((sum, { op }) => (op.kind === 'release' ? add(sum, op.amount) : op.kind === 'complete_hold' ? add(sum, op.held ?? op.cost) : sum), '0');
    const planAlert = planAlertOf(b);
    const plan = decideMove({ amount: b.amount, pending: add(b.pending, flipped), threshold: b.refill_threshold, planAlert }, m.ops.map((o) => o.op));
    return { m, b, plan, planAlert };
  });
  const ledger = decided.flatMap(({ m, b, plan }) =>
    plan.rows.map((r) => {
      const fields = m.ops[r.op].ledger!;
      return { accountId: m.accountId, balanceId: b.id, denomination: m.denomination, type: fields.type, description: fields.description, amount: r.amount, startingBalance: r.starting, endingBalance: r.ending, eventId: fields.eventId ?? null, chargeId: fields.chargeId ?? null };
    }),
  );
  const written = ledger.length ? await insertLedgerRows(db, { companyId, now }, ledger) : [];
  const moved = decided.filter(({ plan }) => cmp(plan.amount, plan.start.amount) !== 0).map(({ b, plan }) => ({ id: b.id, amount: plan.amount }));
  if (moved.length) await setBalanceAmounts(db, moved, now);
  await notifyMoves(
    db,
    companyId,
    decided.map(({ m, b, plan, planAlert }) => movedBalance({ accountId: m.accountId, denomination: m.denomination, id: b.id, threshold: b.refill_threshold, planAlert, raisedAt: m.raisedAt, hasStates: b.has_states }, plan)),
    now,
  );
  let next = 0;
  return decided.map(({ b, plan }) => ({ balanceId: b.id, plan, rows: plan.rows.map(() => ledgerRowFromRaw(written[next++])) }));
}

/** The plan alert inputs of a balance read under its lock; null when no plan that alerts manages it. */
export function planAlertOf(b: Pick<LockedBalance, 'included' | 'pct' | 'period'>): PlanAlert | null {
  return b.included !== null && b.pct !== null && b.period !== null && cmp(b.included, '0') > 0 ? { included: b.included, pct: b.pct, period: new Date(b.period) } : null;
}

/** Moves one balance by one change (a grant, a deposit, a refill) with its ledger row. */
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
  const [r] = await moveBalances(db, first.companyId, [{ accountId: first.accountId, denomination: first.denomination, ops: steps.map(({ amount, ...fields }) => ({ op: { kind: 'change', amount }, ledger: fields })) }], now);
  return r.rows;
}

/**
 * Sets a balance to an exact level (plan grants and resets), recording the difference as one
 * ledger row. It is a balance change like any other: `balance_change`, and crossings re-armed
 * (a reset is no usage, so no plan threshold alert).
 */
export async function setLevel(db: Db, change: Omit<Change, 'amount'> & { level: Units; measured?: Units }, now: Date): Promise<LedgerRow | null> {
  const { level, measured, accountId, companyId, denomination, ...fields } = change;
  const [r] = await moveBalances(db, companyId, [{ accountId, denomination, ops: [{ op: { kind: 'level', level, measured }, ledger: fields }] }], now);
  return r.rows[0] ?? null;
}

/** A hold completed (its event already flipped in this transaction): its final cost is taken from the amount, its held cost leaves the holds. */
export async function completeHold(db: Db, hold: { companyId: string; accountId: string; denomination: string; cost: Units; held?: Units } & LedgerFields, now: Date): Promise<LedgerRow> {
  const { companyId, accountId, denomination, cost, held, ...fields } = hold;
  const [r] = await moveBalances(db, companyId, [{ accountId, denomination, ops: [{ op: { kind: 'complete_hold', cost, held }, ledger: fields }] }], now);
  return r.rows[0];
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
  const byCompany = new Map<string, typeof released>();
  for (const h of released) byCompany.set(h.companyId, [...(byCompany.get(h.companyId) ?? []), h]);
  for (const [companyId, holds] of byCompany) {
    await moveBalances(db, companyId, holds.map((h) => ({ accountId: h.accountId, denomination: h.denomination, ops: [{ op: { kind: 'release', amount: h.amount } }], raisedAt: h.lapsedAt })), now);
  }
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

const pairKey = (accountId: string, denomination: string) => `${accountId}\u0000${denomination}`;

/** A ledger row as a statement returned it. */
function ledgerRowFromRaw(r: Record<string, unknown>): LedgerRow {
  return {
    id: r.id as string,
    accountId: r.account_id as string,
    companyId: r.company_id as string,
    balanceId: r.balance_id as string,
    denomination: r.denomination as string,
    type: r.type as LedgerRow['type'],
    description: r.description as string,
    amount: String(r.amount),
    startingBalance: String(r.starting_balance),
    endingBalance: String(r.ending_balance),
    eventId: (r.event_id as string | null) ?? null,
    chargeId: (r.charge_id as string | null) ?? null,
    createdAt: new Date(r.created_at as string),
  };
}
