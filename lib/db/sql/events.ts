import { query, sql, textArray, type Db } from '../client';
import type { events, transactions } from '../schema';

// The set-based statements of event ingestion: one parameter per column, whatever the number of rows.

type EventRow = typeof events.$inferSelect;
export type LedgerInsert = typeof transactions.$inferInsert & { startingBalance: string; endingBalance: string; amount: string };

/** Events, in one multi-row insert. */
export async function insertEvents(db: Db, rows: EventRow[]): Promise<void> {
  const col = (f: (e: EventRow) => string | null) => textArray(rows.map(f));
  await query(
    db,
    sql`insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate_on_balance, metadata, idempotency_key, created_at, updated_at, expires_at)
      select id, company_id, account_id, type, state, cost_amount::numeric, cost_denomination, priced_by, gate::boolean, metadata::jsonb, idempotency_key,
        created_at::timestamptz, updated_at::timestamptz, expires_at::timestamptz
      from unnest(${col((e) => e.id)}, ${col((e) => e.companyId)}, ${col((e) => e.accountId)}, ${col((e) => e.type)}, ${col((e) => e.state)},
        ${col((e) => e.costAmount)}, ${col((e) => e.costDenomination)}, ${col((e) => e.pricedBy)}, ${col((e) => String(e.gateOnBalance))},
        ${col((e) => JSON.stringify(e.metadata ?? {}))}, ${col((e) => e.idempotencyKey)}, ${col((e) => e.createdAt.toISOString())},
        ${col((e) => e.updatedAt?.toISOString() ?? null)}, ${col((e) => e.expiresAt?.toISOString() ?? null)})
      as u(id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate, metadata, idempotency_key, created_at, updated_at, expires_at)`,
  );
}

/** Ledger rows whose starting and ending balances were computed under the balances' locks. */
export async function insertLedgerRows(db: Db, rows: LedgerInsert[]): Promise<void> {
  const col = (f: (t: LedgerInsert) => string | null) => textArray(rows.map(f));
  await query(
    db,
    sql`insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, created_at)
      select id, account_id, company_id, balance_id, denomination, type, description, amount::numeric, starting_balance::numeric, ending_balance::numeric, event_id, charge_id, created_at::timestamptz
      from unnest(${col((t) => t.id)}, ${col((t) => t.accountId)}, ${col((t) => t.companyId)}, ${col((t) => t.balanceId)}, ${col((t) => t.denomination)},
        ${col((t) => t.type)}, ${col((t) => t.description)}, ${col((t) => t.amount)}, ${col((t) => t.startingBalance)}, ${col((t) => t.endingBalance)},
        ${col((t) => t.eventId ?? null)}, ${col((t) => t.chargeId ?? null)}, ${col((t) => (t.createdAt as Date).toISOString())})
      as u(id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, created_at)`,
  );
}

/** A balance an event batch moves, locked, with what the crossing checks need. */
export type LockedBalance = {
  id: string;
  account_id: string;
  denomination: string;
  amount: string;
  refill_threshold: string | null;
  plan_managed: boolean;
  pending: string;
  included: string | null;
  pct: string | null;
  period: string | Date | null;
  has_states: boolean;
};

/**
 * Locks the balances of (account, denomination) pairs in account order, as every writer that
 * locks several balances does (an unordered lock deadlocks under concurrent batches), and reads
 * each one's live holds after the locks are held.
 */
export async function lockBalancesForEvents(db: Db, pairs: (readonly [string, string])[], now: Date): Promise<LockedBalance[]> {
  return query<LockedBalance>(
    db,
    // A join against the pairs, not a row IN-list: a long IN-list becomes a deep OR tree.
    sql`with locked as materialized (
      select b.id, b.account_id, b.denomination, b.amount::text as amount, b.refill_threshold::text as refill_threshold,
        b.managed_by_plan_id is not null as plan_managed, b.managed_by_plan_id, b.included_amount::text as included
      from balances b join unnest(${textArray(pairs.map(([a]) => a))}, ${textArray(pairs.map(([, d]) => d))}) as v(account_id, denomination)
        on b.account_id = v.account_id and b.denomination = v.denomination
      order by b.account_id, b.denomination for update of b
    )
    -- Read with a fresh snapshot once every lock is held (its arguments need all locked rows):
    -- holds committed while we waited count.
    -- With what the crossing checks need, so they send no query of their own: the plan alert
    -- inputs, and whether the balance has any notification state to clear.
    select l.id, l.account_id, l.denomination, l.amount, l.refill_threshold, l.plan_managed, l.included, coalesce(p.pending, 0)::text as pending,
      pl.threshold_alert_percentage as pct, a.last_plan_renewal as period,
      exists (select 1 from notification_states ns where ns.balance_id = l.id) as has_states
    from locked l
    left join plans pl on pl.id = l.managed_by_plan_id
    left join accounts a on a.id = l.account_id and l.managed_by_plan_id is not null
    left join live_pending_many(
      (select array_agg(account_id) from locked), (select array_agg(denomination) from locked), ${now.toISOString()}::timestamptz
    ) p on p.account_id = l.account_id and p.denomination = l.denomination`,
  );
}

/** The moved balances' new amounts, in one statement. */
export async function setBalanceAmounts(db: Db, moved: { id: string; amount: string }[], now: Date): Promise<void> {
  await query(
    db,
    sql`update balances set amount = v.amount::numeric, updated_at = ${now.toISOString()}::timestamptz
      from unnest(${textArray(moved.map((m) => m.id))}, ${textArray(moved.map((m) => m.amount))}) as v(id, amount) where balances.id = v.id`,
  );
}
