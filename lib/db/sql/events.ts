import type { SQL } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../client';
import { idBeside, ledgerId } from '../../ids';
import type { events, transactions } from '../schema';

// The set-based statements of event ingestion: one parameter per column, whatever the number of rows.

type EventRow = typeof events.$inferSelect;
export type LedgerInsert = typeof transactions.$inferInsert & { startingBalance: string; endingBalance: string; amount: string };

/**
 * A batch's events, in one multi-row insert. They share the company and the time they were
 * recorded at, sent once rather than as a column each (a 1000-event batch sends ~35% fewer bytes).
 */
export async function insertEvents(db: Db, { companyId, now }: { companyId: string; now: Date }, rows: Omit<EventRow, 'companyId' | 'createdAt' | 'updatedAt'>[]): Promise<void> {
  const col = (f: (e: (typeof rows)[number]) => string | null) => textArray(rows.map(f));
  const at = now.toISOString();
  await query(
    db,
    sql`insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate_on_balance, metadata, idempotency_key, created_at, updated_at, expires_at)
      select id, ${companyId}, account_id, type, state, cost_amount::numeric, cost_denomination, priced_by, gate::boolean, metadata::jsonb, idempotency_key,
        ${at}::timestamptz, ${at}::timestamptz, expires_at::timestamptz
      from unnest(${col((e) => e.id)}, ${col((e) => e.accountId)}, ${col((e) => e.type)}, ${col((e) => e.state)},
        ${col((e) => e.costAmount)}, ${col((e) => e.costDenomination)}, ${col((e) => e.pricedBy)}, ${col((e) => String(e.gateOnBalance))},
        ${col((e) => JSON.stringify(e.metadata ?? {}))}, ${col((e) => e.idempotencyKey)}, ${col((e) => e.expiresAt?.toISOString() ?? null)})
      as u(id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate, metadata, idempotency_key, expires_at)`,
  );
}

/**
 * Ledger rows whose starting and ending balances were computed under the balances' locks. They
 * share the company and the time, sent once, as `insertEvents` does; their ids are made here,
 * under those locks, in the rows' order (lib/ids.ts ledgerId).
 */
export async function insertLedgerRows(db: Db, { companyId, now }: { companyId: string; now: Date }, rows: Omit<LedgerInsert, 'id' | 'companyId' | 'createdAt'>[]): Promise<Record<string, unknown>[]> {
  const col = (f: (t: (typeof rows)[number]) => string | null) => textArray(rows.map(f));
  return query(
    db,
    sql`with stamp as materialized (select ledger_stamp() as s)
      insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, created_at)
      select ${ledgerId(sql`stamp.s`, sql`u.ord`)}, account_id, ${companyId}, balance_id, denomination, type, description, amount::numeric, starting_balance::numeric, ending_balance::numeric, event_id, charge_id, ${now.toISOString()}::timestamptz
      from unnest(${col((t) => t.accountId)}, ${col((t) => t.balanceId)}, ${col((t) => t.denomination)},
        ${col((t) => t.type)}, ${col((t) => t.description)}, ${col((t) => t.amount)}, ${col((t) => t.startingBalance)}, ${col((t) => t.endingBalance)},
        ${col((t) => t.eventId ?? null)}, ${col((t) => t.chargeId ?? null)})
        with ordinality as u(account_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, ord)
      cross join stamp
      order by u.ord
      returning *`,
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
 * The `locked` CTE: the balances of (account, denomination) pairs, locked in account order, as
 * every writer that locks several balances does (an unordered lock deadlocks under concurrent
 * batches). A join against the pairs, not a row IN-list: a long IN-list becomes a deep OR tree.
 */
function lockedPairs(pairs: (readonly [string, string])[]): SQL {
  return sql`locked as materialized (
      select b.id, b.account_id, b.denomination, b.amount, b.refill_threshold, b.managed_by_plan_id, b.included_amount
      from balances b join unnest(${textArray(pairs.map(([a]) => a))}, ${textArray(pairs.map(([, d]) => d))}) as v(account_id, denomination)
        on b.account_id = v.account_id and b.denomination = v.denomination
      order by b.account_id, b.denomination for update of b
    )`;
}

/**
 * What the crossing checks need of each `locked l` row, as joins, so they send no query of their
 * own: the plan alert inputs (`pl`, `a`) and the live holds (`p`), read with a fresh snapshot
 * once every lock is held (its arguments need all locked rows): holds committed while the locks
 * were awaited count.
 */
function lockedContext(now: Date): SQL {
  return sql`left join plans pl on pl.id = l.managed_by_plan_id
    left join accounts a on a.id = l.account_id and l.managed_by_plan_id is not null
    left join live_pending_many(
      (select array_agg(account_id) from locked), (select array_agg(denomination) from locked), ${now.toISOString()}::timestamptz
    ) p on p.account_id = l.account_id and p.denomination = l.denomination`;
}

/** Locks the balances of (account, denomination) pairs and reads each one's live holds after the locks are held. */
export async function lockBalancesForEvents(db: Db, pairs: (readonly [string, string])[], now: Date): Promise<LockedBalance[]> {
  return query<LockedBalance>(
    db,
    sql`with ${lockedPairs(pairs)}
    select l.id, l.account_id, l.denomination, l.amount::text as amount, l.refill_threshold::text as refill_threshold,
      l.managed_by_plan_id is not null as plan_managed, l.included_amount::text as included, coalesce(p.pending, 0)::text as pending,
      pl.threshold_alert_percentage as pct, a.last_plan_renewal as period,
      exists (select 1 from notification_states ns where ns.balance_id = l.id) as has_states
    from locked l
    ${lockedContext(now)}`,
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

/**
 * A ledger row of a completed, billed event, in request order: the balance of `pairs[pair]` moves
 * by `cost`. Its description is the event's type's. Its id is made by the statement once it holds
 * the balances' locks, so a balance's ledger reads in the order it moved.
 */
export type LedgerMove = { pair: number; cost: string; eventId: string; type: string };

/** A balance `moveBalancesForEvents` locked that its caller must see to: what it was, what it is now, and what it crossed. */
export type MovedBalance = LockedBalance & { new_amount: string; below_zero: boolean; below_refill_threshold: boolean; plan_alert: boolean };

/**
 * The crossing rules (crossings.ts `crossingRules`), as SQL over the columns of `c`: `before`
 * and `after` (available), `start_amount`, `amount`, `threshold`, `included`, `pct`, `period`.
 */
export type CrossingSql = { belowZero: SQL; belowRefillThreshold: SQL; planAlert: SQL };

/**
 * A batch's balance moves in one statement, when no item's state hangs on a balance (no gated,
 * billed item): lock the (account, denomination) pairs' balances in account order, write one
 * ledger row per completed billed event with its running starting and ending balance (in request
 * order), set each balance to its end, read each balance's live holds with a fresh snapshot
 * once every lock is held, and evaluate the crossing rules on what the move left. The locks are
 * held from this statement to the commit, and nothing else that needs them runs between: the
 * ledger rows and the crossings are computed by the database, not sent back and forth.
 * `ownHolds[i]` is what this transaction's own pending events hold on `pairs[i]` (its holds
 * are visible to the read: `available` before the batch leaves them out); `totals[i]` is what
 * its moves take from `pairs[i]` (null when none moves it, so that balance is not written).
 *
 * A balance whose amount moved and that crossed nothing and is in no notification state needs
 * nothing more than its `balance_change`: `notify` (the outbox insert over a relation `v`) writes
 * those here, each delivery id beside the balance's first ledger row's. Only the other balances
 * that changed come back, for the caller to notify and to enter or leave their states: most
 * batches get no rows back, and send no statement for their notifications.
 *
 * Each new amount is the locked amount less its total, joined by pair. The statement used to
 * join the update's own output instead; once the balances were analyzed, PostgreSQL estimated
 * the locked rows at a handful and joined that output by a nested loop over every pair of rows
 * (a million comparisons per 1000-event batch, most of the statement's time).
 */
export async function moveBalancesForEvents(
  db: Db,
  {
    pairs,
    ownHolds,
    totals,
    moves,
    companyId,
    now,
    crossings,
    notify,
  }: {
    pairs: (readonly [string, string])[];
    ownHolds: string[];
    totals: (string | null)[];
    moves: LedgerMove[];
    companyId: string;
    now: Date;
    crossings: CrossingSql;
    notify: (source: SQL) => SQL;
  },
): Promise<MovedBalance[]> {
  const col = (f: (m: LedgerMove) => string) => textArray(moves.map(f));
  const at = now.toISOString();
  return query<MovedBalance>(
    db,
    sql`with ${lockedPairs(pairs)}, holds as (
      select * from unnest(${textArray(pairs.map(([a]) => a))}, ${textArray(pairs.map(([, d]) => d))}, ${textArray(ownHolds)}, ${textArray(totals)})
        with ordinality as h(account_id, denomination, own_holds, total, ord)
    ), stamp as materialized (
      -- Taken once every balance is locked (the count reads them all), for the ledger ids.
      select ledger_stamp() as s from (select count(*) from locked) k
    ), run as materialized (
      select ${ledgerId(sql`stamp.s`, sql`m.ord`)} as tx_id, m.event_id, h.account_id, h.denomination, 'Event ' || m.type as description, m.cost::numeric as cost,
        l.id as balance_id, l.amount - sum(m.cost::numeric) over (partition by l.id order by m.ord) as ending
      from unnest(${col((m) => String(m.pair + 1))}, ${col((m) => m.cost)}, ${col((m) => m.eventId)}, ${col((m) => m.type)})
        with ordinality as m(pair, cost, event_id, type, ord)
      join holds h on h.ord = m.pair::bigint
      join locked l on l.account_id = h.account_id and l.denomination = h.denomination
      cross join stamp
    ), first_tx as (
      -- Each balance's first ledger row, whose id its balance_change delivery is made beside.
      select balance_id, min(tx_id) as first_tx from run group by balance_id
    ), led as (
      insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, created_at)
      select r.tx_id, r.account_id, ${companyId}, r.balance_id, r.denomination, 'event', r.description, -r.cost, r.ending + r.cost, r.ending, r.event_id, null, ${at}::timestamptz
      from run r
    ), upd as (
      update balances b set amount = b.amount - h.total::numeric, updated_at = ${at}::timestamptz
      from locked l join holds h on h.account_id = l.account_id and h.denomination = l.denomination
      where b.id = l.id and h.total is not null
    ), c as (
      select l.id, l.account_id, l.denomination, l.amount as start_amount, l.amount - coalesce(h.total::numeric, 0) as amount, l.refill_threshold as threshold,
        l.managed_by_plan_id, l.included_amount as included, coalesce(p.pending, 0) as pending,
        l.amount - (coalesce(p.pending, 0) - h.own_holds::numeric) as before, l.amount - coalesce(h.total::numeric, 0) - coalesce(p.pending, 0) as after,
        pl.threshold_alert_percentage::numeric as pct, a.last_plan_renewal as period,
        exists (select 1 from notification_states ns where ns.balance_id = l.id) as has_states,
        coalesce(h.total::numeric, 0) <> 0 or h.own_holds::numeric <> 0 as changed, h.total is not null as moved, ft.first_tx, h.ord
      from locked l
      join holds h on h.account_id = l.account_id and h.denomination = l.denomination
      left join first_tx ft on ft.balance_id = l.id
      ${lockedContext(now)}
    ), d as (
      select c.*, coalesce(${crossings.belowZero}, false) as below_zero, coalesce(${crossings.belowRefillThreshold}, false) as below_refill_threshold,
        coalesce(${crossings.planAlert}, false) as plan_alert
      from c
    ), e as (
      select d.*, d.changed and d.moved and not (d.has_states or d.below_zero or d.below_refill_threshold or d.plan_alert) as plain from d
    ), notified as (
      ${notify(sql`(select e.account_id, e.denomination, 'balance_change' as topic, trim_scale(e.amount)::text as balance, '{}' as detail,
        ${idBeside('whd', sql`e.first_tx`)} as base_id, e.ord from e where e.plain) v`)}
    )
    select c.id, c.account_id, c.denomination, c.start_amount::text as amount, c.amount::text as new_amount, c.threshold::text as refill_threshold,
      c.managed_by_plan_id is not null as plan_managed, c.included::text as included, c.pending::text as pending, c.pct::text as pct, c.period, c.has_states,
      c.below_zero, c.below_refill_threshold, c.plan_alert
    from e c
    where c.changed and not c.plain
    order by c.ord`,
  );
}
