import { and, eq } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import { accounts, spendLimits, type SpendAction, type SpendPeriod } from '../../db/schema';
import { readSpendStates, recountSpend, type SpendStateRow } from '../../db/sql/spend';
import { idRange } from '../../ids';
import { notFound } from '../../errors';
import { add, unitsOut, type Units } from '../../money';
import type { SpendFact } from './move-decision';

/**
 * Spend controls: an account's limits per denomination and period (UTC calendar day, ISO week
 * from Monday, calendar month). Spend in a period = what completed events cost in it (a counter
 * beside the balance, kept only where a limit is set, moved by whatever debits the event under
 * the balance's lock) + the balance's live holds. An event that would take it past a `reject`
 * limit is rejected with reason `spend_limit`; passing a `notify` limit sends
 * `spend_limit_reached` once per period.
 */

export type SpendLimit = { denomination: string; period: SpendPeriod; limit: Units; action: SpendAction };
export type SpendLimitState = SpendLimit & { spent: Units; periodStart: Date; periodEnd: Date };

/** The start of the spend period holding `at`, in UTC (as `spend_period_start` says it in SQL). */
export function spendPeriodStart(period: SpendPeriod, at: Date): Date {
  const d = new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), period === 'month' ? 1 : at.getUTCDate()));
  if (period === 'week') d.setUTCDate(d.getUTCDate() - ((d.getUTCDay() + 6) % 7));
  return d;
}

/** The end of the spend period that starts at `start` (the next one's start). */
export function spendPeriodEnd(period: SpendPeriod, start: Date): Date {
  if (period === 'month') return new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + 1, 1));
  return new Date(start.getTime() + (period === 'week' ? 7 : 1) * 86_400_000);
}

export function serializeSpendLimit(l: SpendLimitState) {
  return {
    denomination: l.denomination,
    period: l.period,
    limit: unitsOut(l.limit),
    action: l.action,
    spent: unitsOut(l.spent),
    period_start: l.periodStart.toISOString(),
    period_end: l.periodEnd.toISOString(),
  };
}

async function ownAccount(db: Db, companyId: string, accountId: string) {
  const [a] = await db
    .select({ id: accounts.id })
    .from(accounts)
    .where(and(eq(accounts.id, accountId), eq(accounts.companyId, companyId)));
  if (!a) throw notFound('account', 'account_id');
}

/** A limit as the balance move decides with it, and the period its notification names. */
export type SpendLimitFact = SpendFact & { period: SpendPeriod; periodStart: Date };

/** A limit as the balance move decides with it; `spent` adds the balance's live holds to its counter. */
export function spendFactOf(r: SpendStateRow, pending: Units): SpendLimitFact {
  return { key: `${r.period}:${r.action}`, action: r.action, limit: r.limit_amount, spent: add(r.spent, pending), period: r.period, periodStart: new Date(r.period_start) };
}

/** The account's limits, each with its period's spend so far (completed costs and live holds). */
export async function getSpendLimits({ db, companyId, accountId, now }: { db: Db; companyId: string; accountId: string; now: Date }): Promise<SpendLimitState[]> {
  await ownAccount(db, companyId, accountId);
  const rows = await query<SpendStateRow & { pending: string }>(
    db,
    sql`select l.account_id, l.denomination, s.period, s.action, s.limit_amount::text as limit_amount, s.period_start, s.spent::text as spent,
        live_pending(l.account_id, l.denomination, ${now.toISOString()}::timestamptz)::text as pending
      from (select distinct account_id, denomination from spend_limits where account_id = ${accountId}) l
      cross join lateral spend_state(l.account_id, l.denomination, ${now.toISOString()}::timestamptz) s
      order by l.denomination, array_position(array['day', 'week', 'month'], s.period), s.action desc`,
  );
  return rows.map((r) => {
    const periodStart = new Date(r.period_start);
    return { denomination: r.denomination, period: r.period, action: r.action, limit: r.limit_amount, spent: add(r.spent, r.pending), periodStart, periodEnd: spendPeriodEnd(r.period, periodStart) };
  });
}

/**
 * Replaces the account's limits (`[]` clears them). The account's balances of the limits'
 * denominations are locked first, so no event moves them while the periods under way are counted
 * from the completed events; the counters of denominations left without a limit go.
 */
export async function setSpendLimits({ db, companyId, accountId, limits, now }: { db: Db; companyId: string; accountId: string; limits: SpendLimit[]; now: Date }): Promise<SpendLimitState[]> {
  await db.transaction(async (tx) => {
    await ownAccount(tx, companyId, accountId);
    const denominations = [...new Set(limits.map((l) => l.denomination))].sort();
    if (denominations.length) {
      await query(tx, sql`select 1 from balances where account_id = ${accountId} and denomination = any(${textArray(denominations)}::text[]) order by denomination for update`);
    }
    await tx.delete(spendLimits).where(eq(spendLimits.accountId, accountId));
    if (limits.length) await tx.insert(spendLimits).values(limits.map((l) => ({ accountId, denomination: l.denomination, period: l.period, action: l.action, limitAmount: l.limit, createdAt: now })));
    // The oldest event that can count: one created before the month began, as a hold completed in it (holds last at most 7 days).
    const since = idRange('ev', new Date(spendPeriodStart('month', now).getTime() - 8 * 86_400_000)).gte ?? null;
    await recountSpend(tx, accountId, now, since);
  });
  return getSpendLimits({ db, companyId, accountId, now });
}

/** The spend facts of (account, denomination) pairs, keyed by pair; `pending` is each one's live holds. */
export async function spendFacts(db: Db, pairs: { accountId: string; denomination: string; pending: Units }[], now: Date): Promise<Map<string, SpendLimitFact[]>> {
  const out = new Map<string, SpendLimitFact[]>();
  const rows = await readSpendStates(db, pairs.map((p) => [p.accountId, p.denomination] as const), now);
  const pending = new Map(pairs.map((p) => [spendKey(p.accountId, p.denomination), p.pending]));
  for (const r of rows) {
    const k = spendKey(r.account_id, r.denomination);
    out.set(k, [...(out.get(k) ?? []), spendFactOf(r, pending.get(k) ?? '0')]);
  }
  return out;
}

export const spendKey = (accountId: string, denomination: string) => `${accountId}\u0000${denomination}`;
