import { and, asc, eq } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import { accounts, spendLimits, type SpendAction, type SpendPeriod } from '../../db/schema';
import { notFound } from '../../errors';
import { add, unitsOut, type Units } from '../../money';
import type { SpendFact } from '../balances/move-decision';
import { enqueueNotifications } from '../webhooks/outbox';

/**
 * Spend controls: an account's limits per denomination and period (UTC calendar day, ISO week,
 * calendar month). Spend in a period = what completed events cost in it + the live holds. What
 * completed events cost is a counter beside the balance (`spend_counters`), kept only where a
 * limit is set and moved by the statement that debits the event, so the check costs one indexed
 * read under the balance's lock instead of a sum over events. Setting limits counts the current
 * periods from the events (under the balances' locks).
 */

export type SpendLimit = { denomination: string; period: SpendPeriod; limit: Units; action: SpendAction };

/** The start of the spend period holding `at`, in UTC (as `spend_period_start` says it in SQL). */
export function spendPeriodStart(period: SpendPeriod, at: Date): Date {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), period === 'month' ? 1 : at.getUTCDate()));
  if (period === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  return d;
}

export function serializeSpendLimit(l: SpendLimit & { spent?: Units; period_start?: Date }) {
  return {
    denomination: l.denomination,
    period: l.period,
    limit: unitsOut(l.limit),
    action: l.action,
    ...(l.spent !== undefined && { spent: unitsOut(l.spent) }),
    ...(l.period_start && { period_start: l.period_start.toISOString() }),
  };
}

async function ownAccount(db: Db, companyId: string, accountId: string) {
  const [a] = await db.select({ id: accounts.id }).from(accounts).where(and(eq(accounts.id, accountId), eq(accounts.companyId, companyId)));
  if (!a) throw notFound('account', 'account_id');
}

/** The account's limits, each with its period's spend so far (completed costs and live holds). */
export async function getSpendLimits({ db, companyId, accountId, now }: { db: Db; companyId: string; accountId: string; now: Date }) {
  await ownAccount(db, companyId, accountId);
  const rows = await query<{ denomination: string; period: SpendPeriod; action: SpendAction; limit_amount: string; period_start: string; spent: string }>(
    db,
    sql`select l.denomination, l.period, l.action, l.limit_amount::text, s.period_start, (s.spent + live_pending(l.account_id, l.denomination, ${now.toISOString()}::timestamptz))::text as spent
      from spend_limits l cross join lateral spend_state(l.account_id, l.denomination, ${now.toISOString()}::timestamptz) s
      where l.account_id = ${accountId} and s.period = l.period and s.action = l.action
      order by l.denomination, l.period, l.action`,
  );
  return rows.map((r) => ({ denomination: r.denomination, period: r.period, action: r.action, limit: r.limit_amount, spent: r.spent, period_start: new Date(r.period_start) }));
}

/**
 * Replaces the account's limits (`[]` clears them). The balances they name are locked first, so
 * no event moves them while the current periods' spend is counted from the completed events.
 */
export async function setSpendLimits({ db, companyId, accountId, limits, now }: { db: Db; companyId: string; accountId: string; limits: SpendLimit[]; now: Date }) {
  return db.transaction(async (tx) => {
    await ownAccount(tx, companyId, accountId);
    const denominations = [...new Set(limits.map((l) => l.denomination))].sort();
    if (denominations.length) await query(tx, sql`select 1 from balances where account_id = ${accountId} and denomination = any(${textArray(denominations)}) order by denomination for update`);
    await tx.delete(spendLimits).where(eq(spendLimits.accountId, accountId));
    await query(tx, sql`delete from spend_counters where account_id = ${accountId}`);
    if (limits.length) {
      await tx.insert(spendLimits).values(limits.map((l) => ({ accountId, denomination: l.denomination, period: l.period, action: l.action, limitAmount: l.limit, createdAt: now })));
      // The periods under way, counted from what completed in them (a hold completes when it is updated to complete).
      await query(
        tx,
        sql`insert into spend_counters (account_id, denomination, period, period_start, spent)
          select p.account_id, p.denomination, p.period, spend_period_start(p.period, ${now.toISOString()}::timestamptz),
            coalesce((select sum(e.cost_amount) from events e where e.account_id = p.account_id and e.cost_denomination = p.denomination and e.state = 'complete'
              and e.updated_at >= spend_period_start(p.period, ${now.toISOString()}::timestamptz)), 0)
          from (select distinct account_id, denomination, period from spend_limits where account_id = ${accountId}) p`,
      );
    }
    const rows = await tx.select().from(spendLimits).where(eq(spendLimits.accountId, accountId)).orderBy(asc(spendLimits.denomination), asc(spendLimits.period), asc(spendLimits.action));
    return rows.map((r) => ({ denomination: r.denomination, period: r.period, action: r.action, limit: r.limitAmount }));
  });
}

/** A limit as a move decides with it, and what its notification needs. */
export type SpendState = SpendFact & { period: SpendPeriod; periodStart: Date };

/**
 * The spend facts of locked balances: each limit with its period's spend before the move (the
 * counter, read with a fresh snapshot under the lock, plus `pending`, the live holds the lock's
 * read saw). Keyed by account and denomination.
 */
export async function readSpend(db: Db, balances: { accountId: string; denomination: string; pending: Units }[], now: Date): Promise<Map<string, SpendState[]>> {
  const out = new Map<string, SpendState[]>();
  if (!balances.length) return out;
  const rows = await query<{ account_id: string; denomination: string; period: SpendPeriod; action: SpendAction; limit_amount: string; period_start: string; spent: string }>(
    db,
    sql`select v.account_id, v.denomination, s.period, s.action, s.limit_amount::text, s.period_start, s.spent::text
      from unnest(${textArray(balances.map((b) => b.accountId))}, ${textArray(balances.map((b) => b.denomination))}) as v(account_id, denomination)
      cross join lateral spend_state(v.account_id, v.denomination, ${now.toISOString()}::timestamptz) s`,
  );
  const pending = new Map(balances.map((b) => [spendKey(b.accountId, b.denomination), b.pending]));
  for (const r of rows) {
    const k = spendKey(r.account_id, r.denomination);
    const list = out.get(k) ?? [];
    list.push({ key: `${r.period}:${r.action}`, action: r.action, limit: r.limit_amount, spent: add(r.spent, pending.get(k) ?? '0'), period: r.period, periodStart: new Date(r.period_start) });
    out.set(k, list);
  }
  return out;
}

/** What completed events cost, added to the counters of the periods their balances have limits in (none: nothing). */
export async function addSpend(db: Db, costs: { accountId: string; denomination: string; amount: Units }[], now: Date): Promise<void> {
  if (!costs.length) return;
  await query(
    db,
    sql`insert into spend_counters (account_id, denomination, period, period_start, spent)
      select v.account_id, v.denomination, p.period, spend_period_start(p.period, ${now.toISOString()}::timestamptz), sum(v.amount::numeric)
      from unnest(${textArray(costs.map((c) => c.accountId))}, ${textArray(costs.map((c) => c.denomination))}, ${textArray(costs.map((c) => c.amount))}) as v(account_id, denomination, amount)
      join (select distinct account_id, denomination, period from spend_limits) p on p.account_id = v.account_id and p.denomination = v.denomination
      group by 1, 2, 3, 4
      on conflict (account_id, denomination, period, period_start) do update set spent = spend_counters.spent + excluded.spent`,
  );
}

/**
 * `spend_limit_reached` for each `notify` limit a move took past its limit, once per period: the
 * balance's `spend_limit` state row is keyed by the limit and its period's start.
 */
export async function notifySpendLimits(
  db: Db,
  companyId: string,
  crossed: { accountId: string; denomination: string; balanceId: string; balance: Units; limit: SpendState; spent: Units }[],
  now: Date,
): Promise<void> {
  if (!crossed.length) return;
  const periodKey = (c: (typeof crossed)[number]) => `${c.limit.key}:${c.limit.periodStart.toISOString()}`;
  const entered = await query<{ balance_id: string; period: string }>(
    db,
    sql`insert into notification_states (balance_id, kind, period, created_at)
      select balance_id, 'spend_limit', period, ${now.toISOString()}::timestamptz
      from unnest(${textArray(crossed.map((c) => c.balanceId))}, ${textArray(crossed.map(periodKey))}) as v(balance_id, period)
      on conflict do nothing returning balance_id, period`,
  );
  const fresh = new Set(entered.map((r) => `${r.balance_id}\u0000${r.period}`));
  await enqueueNotifications(
    db,
    companyId,
    crossed
      .filter((c) => fresh.has(`${c.balanceId}\u0000${periodKey(c)}`))
      .map((c) => ({
        accountId: c.accountId,
        denomination: c.denomination,
        topic: 'spend_limit_reached' as const,
        balance: c.balance,
        detail: { period: c.limit.period, period_start: c.limit.periodStart.toISOString(), limit: c.limit.limit, spent: c.spent },
      })),
    now,
  );
}

export const spendKey = (accountId: string, denomination: string) => `${accountId}\u0000${denomination}`;
