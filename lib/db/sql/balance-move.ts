import type { SQL } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../client';
import { idBeside, ledgerId } from '../../ids';
import type { transactions } from '../schema';

/**
 * The balance move in SQL: the statements that lock balances and move them. The domain's rules
 * (the crossing rules, the states a move leaves, the outbox insert, pricing) come in as SQL
 * fragments (`MoveRules`), so the one-statement paths say exactly what move-decision.ts says:
 * - `singleEventStatement`: one event in one autocommit statement (price, lock, gate, insert the
 *   event, move the balance, its ledger row and its `balance_change`), or nothing when the event
 *   crosses something, so the general path writes it with all its notifications;
 * - `moveBalancesForEvents`: a batch's (and a group commit's) balance moves in one statement;
 * - `lockBalances`, `insertLedgerRows`, `setBalanceAmounts`: the general writer's steps
 *   (balances.ts `moveBalances`), which decides in TypeScript between the lock and the writes.
 * Every one locks its balances in (account, denomination) order and reads the live holds with a
 * fresh snapshot once the locks are held.
 */

export type LedgerInsert = typeof transactions.$inferInsert & { startingBalance: string; endingBalance: string; amount: string };

/** The domain's rules, as SQL fragments the statements are built from. */
export type MoveRules = {
  /** The crossing rules over a move's columns (crossings.ts `crossingRules`). */
  crossings: (c: { before: SQL; after: SQL; threshold: SQL; startAmount: SQL; amount: SQL; included: SQL; pct: SQL; period: SQL }) => CrossingSql;
  /** Whether a state row of `kind` is one a move to `after` leaves (crossings.ts `leavesStateSql`). */
  leaves: (c: { kind: SQL; after: SQL; threshold: SQL }) => SQL;
  /** The plan period key of a `plan_threshold` state (crossings.ts `planPeriodKey`). */
  periodKey: (period: SQL) => SQL;
};

export type CrossingSql = { belowZero: SQL; belowRefillThreshold: SQL; planAlert: SQL };

/**
 * Ledger rows whose starting and ending balances were computed under the balances' locks. They
 * share the company, sent once, as `insertEvents` does; their ids are made here, under those
 * locks, in the rows' order (lib/ids.ts ledgerId). A row's time is `now` unless it says when it
 * took effect (a grant's expiry written after the instant it expired).
 */
export async function insertLedgerRows(
  db: Db,
  { companyId, now }: { companyId: string; now: Date },
  rows: (Omit<LedgerInsert, 'id' | 'companyId' | 'createdAt'> & { createdAt?: Date | null })[],
): Promise<Record<string, unknown>[]> {
  const col = (f: (t: (typeof rows)[number]) => string | null) => textArray(rows.map(f));
  return query(
    db,
    sql`with stamp as materialized (select ledger_stamp() as s)
      insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, grant_id, created_at)
      select ${ledgerId(sql`stamp.s`, sql`u.ord`)}, account_id, ${companyId}, balance_id, denomination, type, description, amount::numeric, starting_balance::numeric, ending_balance::numeric,
        event_id, charge_id, grant_id, coalesce(at::timestamptz, ${now.toISOString()}::timestamptz)
      from unnest(${col((t) => t.accountId)}, ${col((t) => t.balanceId)}, ${col((t) => t.denomination)},
        ${col((t) => t.type)}, ${col((t) => t.description)}, ${col((t) => t.amount)}, ${col((t) => t.startingBalance)}, ${col((t) => t.endingBalance)},
        ${col((t) => t.eventId ?? null)}, ${col((t) => t.chargeId ?? null)}, ${col((t) => t.grantId ?? null)}, ${col((t) => t.createdAt?.toISOString() ?? null)})
        with ordinality as u(account_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, grant_id, at, ord)
      cross join stamp
      order by u.ord
      returning *`,
  );
}

/** A balance a move locked, with what the move decides from. */
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
  head_grant_id: string | null;
  head_remaining: string | null;
  grants_due_at: string | Date | null;
  /** The balance has a spend limit (its spend is read under the lock too). */
  limited?: boolean;
};

/**
 * The `locked` CTE: the balances of (account, denomination) pairs, locked in account order, as
 * every writer that locks several balances does (an unordered lock deadlocks under concurrent
 * batches). A join against the pairs, not a row IN-list: a long IN-list becomes a deep OR tree.
 */
function lockedPairs(pairs: (readonly [string, string])[]): SQL {
  return sql`locked as materialized (
      select b.id, b.account_id, b.denomination, b.amount, b.refill_threshold, b.managed_by_plan_id, b.included_amount, b.head_grant_id, b.head_remaining, b.grants_due_at
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
export async function lockBalances(db: Db, pairs: (readonly [string, string])[], now: Date): Promise<LockedBalance[]> {
  return query<LockedBalance>(
    db,
    sql`with ${lockedPairs(pairs)}
    select l.id, l.account_id, l.denomination, l.amount::text as amount, l.refill_threshold::text as refill_threshold,
      l.managed_by_plan_id is not null as plan_managed, l.included_amount::text as included, coalesce(p.pending, 0)::text as pending,
      pl.threshold_alert_percentage as pct, a.last_plan_renewal as period,
      exists (select 1 from notification_states ns where ns.balance_id = l.id) as has_states,
      l.head_grant_id, l.head_remaining::text as head_remaining, l.grants_due_at,
      exists (select 1 from spend_limits sl where sl.account_id = l.account_id and sl.denomination = l.denomination) as limited
    from locked l
    ${lockedContext(now)}`,
  );
}

/**
 * What moves left of the balances, in one statement: the amount, and, when the move knew their
 * grants, the head grant, what it has left and when a grant is next due; otherwise what the head
 * has left (draws that fit in it).
 */
export async function setBalances(db: Db, moved: { id: string; amount: string; headGrantId: string | null; headRemaining: string | null; grantsDueAt: Date | null; grantsKnown: boolean }[], now: Date): Promise<void> {
  const col = (f: (m: (typeof moved)[number]) => string | null) => textArray(moved.map(f));
  await query(
    db,
    sql`update balances set amount = v.amount::numeric, head_remaining = v.head_remaining::numeric, updated_at = ${now.toISOString()}::timestamptz,
        head_grant_id = case when v.known::boolean then v.head_grant_id else balances.head_grant_id end,
        grants_due_at = case when v.known::boolean then v.due::timestamptz else balances.grants_due_at end
      from unnest(${col((m) => m.id)}, ${col((m) => m.amount)}, ${col((m) => m.headGrantId)}, ${col((m) => m.headRemaining)}, ${col((m) => m.grantsDueAt?.toISOString() ?? null)}, ${col((m) => String(m.grantsKnown))})
        as v(id, amount, head_grant_id, head_remaining, due, known)
      where balances.id = v.id`,
  );
}

/**
 * A balance's next expiry as JSON text (`{"expires_at", "amount"}`: the soonest expiry among its
 * live grants with units left, and the units that expire then), or null. `b` names the balance
 * row, `now` the time as SQL; a head grant's units are the balance's count of them.
 */
export function nextExpirySql(b: SQL, now: SQL): SQL {
  return sql`(select json_build_object('expires_at', to_char(x.expires_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'), 'amount', trim_scale(x.amount)::text)::text
    from (select g.expires_at, sum(case when g.id = ${b}.head_grant_id then ${b}.head_remaining else g.remaining end) as amount
      from credit_grants g
      where g.balance_id = ${b}.id and g.closed_at is null and g.active and g.expires_at > ${now}
        and (case when g.id = ${b}.head_grant_id then ${b}.head_remaining else g.remaining end) > 0
      group by g.expires_at order by g.expires_at limit 1) x)`;
}

/** An open credit grant of a balance, as the move reads it. */
export type OpenGrant = {
  id: string;
  balance_id: string;
  amount: string;
  remaining: string;
  priority: number;
  effective_at: Date | string;
  expires_at: Date | string | null;
  created_at: Date | string;
  active: boolean;
  source: string;
  description: string;
  charge_id: string | null;
};

/** The open grants (not closed) of locked balances. */
export async function openGrants(db: Db, balanceIds: string[]): Promise<OpenGrant[]> {
  if (!balanceIds.length) return [];
  return query<OpenGrant>(
    db,
    sql`select g.id, g.balance_id, g.amount::text as amount, g.remaining::text as remaining, g.priority, g.effective_at, g.expires_at, g.created_at, g.active, g.source, g.description, g.charge_id
      from credit_grants g where g.balance_id = any(${textArray(balanceIds)}::text[]) and g.closed_at is null`,
  );
}

/** A grant a move made. */
export type GrantInsert = {
  id: string;
  accountId: string;
  balanceId: string;
  denomination: string;
  amount: string;
  remaining: string;
  category: string;
  source: string;
  priority: number;
  effectiveAt: Date;
  expiresAt: Date | null;
  costBasis: string | null;
  active: boolean;
  closedAt: Date | null;
  chargeId: string | null;
  description: string;
};

/** Grants made and grants changed by moves, in two statements at most. */
export async function writeGrants(
  db: Db,
  { companyId, now }: { companyId: string; now: Date },
  made: GrantInsert[],
  changed: { id: string; remaining: string; active: boolean; closedAt: Date | null; voided: boolean }[],
): Promise<void> {
  const at = now.toISOString();
  if (made.length) {
    const col = (f: (g: GrantInsert) => string | null) => textArray(made.map(f));
    await query(
      db,
      sql`insert into credit_grants (id, company_id, account_id, balance_id, denomination, amount, remaining, category, source, priority, effective_at, expires_at, cost_basis, active, closed_at, voided_at, charge_id, description, created_at)
        select id, ${companyId}, account_id, balance_id, denomination, amount::numeric, remaining::numeric, category, source, priority::int, effective_at::timestamptz, expires_at::timestamptz,
          cost_basis::numeric, active::boolean, closed_at::timestamptz, null, charge_id, description, ${at}::timestamptz
        from unnest(${col((g) => g.id)}, ${col((g) => g.accountId)}, ${col((g) => g.balanceId)}, ${col((g) => g.denomination)}, ${col((g) => g.amount)}, ${col((g) => g.remaining)},
          ${col((g) => g.category)}, ${col((g) => g.source)}, ${col((g) => String(g.priority))}, ${col((g) => g.effectiveAt.toISOString())}, ${col((g) => g.expiresAt?.toISOString() ?? null)},
          ${col((g) => g.costBasis)}, ${col((g) => String(g.active))}, ${col((g) => g.closedAt?.toISOString() ?? null)}, ${col((g) => g.chargeId)}, ${col((g) => g.description)})
          as u(id, account_id, balance_id, denomination, amount, remaining, category, source, priority, effective_at, expires_at, cost_basis, active, closed_at, charge_id, description)`,
    );
  }
  if (changed.length) {
    const col = (f: (g: (typeof changed)[number]) => string | null) => textArray(changed.map(f));
    await query(
      db,
      sql`update credit_grants g set remaining = v.remaining::numeric, active = v.active::boolean, closed_at = v.closed_at::timestamptz,
          voided_at = case when v.voided::boolean then coalesce(g.voided_at, ${at}::timestamptz) else g.voided_at end
        from unnest(${col((g) => g.id)}, ${col((g) => g.remaining)}, ${col((g) => String(g.active))}, ${col((g) => g.closedAt?.toISOString() ?? null)}, ${col((g) => String(g.voided))})
          as v(id, remaining, active, closed_at, voided)
        where g.id = v.id`,
    );
  }
}

/**
 * A ledger row of a completed, billed event, in request order: the balance of `pairs[pair]` moves
 * by `cost`. Its description is the event's type's. Its id is made by the statement once it holds
 * the balances' locks, so a balance's ledger reads in the order it moved.
 */
export type LedgerMove = { pair: number; cost: string; eventId: string; type: string };

/** A balance `moveBalancesForEvents` moved that its caller must see to: what it was, what it is now, and what it crossed. */
export type MovedRow = LockedBalance & { new_amount: string; below_zero: boolean; below_refill_threshold: boolean; plan_alert: boolean };

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
    rules,
    notify,
  }: {
    pairs: (readonly [string, string])[];
    ownHolds: string[];
    totals: (string | null)[];
    moves: LedgerMove[];
    companyId: string;
    now: Date;
    rules: MoveRules;
    notify: (source: SQL) => SQL;
  },
): Promise<MovedRow[] | 'lost' | 'general'> {
  const col = (f: (m: LedgerMove) => string) => textArray(moves.map(f));
  // Each pair's first move's ordinal (1-based, as the statement numbers the moves), or null: its
  // first ledger row's id, which its balance_change delivery is made beside, is that ordinal's.
  const firstMove: (string | null)[] = pairs.map(() => null);
  moves.forEach((m, i) => {
    firstMove[m.pair] ??= String(i + 1);
  });
  const at = now.toISOString();
  const crossings = rules.crossings({
    before: sql`c.before`,
    after: sql`c.after`,
    threshold: sql`c.threshold`,
    startAmount: sql`c.start_amount`,
    amount: sql`c.amount`,
    included: sql`c.included`,
    pct: sql`c.pct`,
    period: sql`c.period`,
  });
  const rows = await query<MovedRow & { marker: 'lost' | 'general' | null }>(
    db,
    sql`with ${lockedPairs(pairs)}, holds as (
      select * from unnest(${textArray(pairs.map(([a]) => a))}, ${textArray(pairs.map(([, d]) => d))}, ${textArray(ownHolds)}, ${textArray(totals)}, ${textArray(firstMove)})
        with ordinality as h(account_id, denomination, own_holds, total, first_move, ord)
    ), general as materialized (
      -- A balance with a grant due, whose draws pass what its head grant has left, or with a
      -- spend limit, is the general writer's (move-decision.ts): then this statement writes nothing at all.
      select exists (
        select 1 from locked l join holds h on h.account_id = l.account_id and h.denomination = l.denomination
        where l.grants_due_at <= ${at}::timestamptz or (l.head_grant_id is not null and coalesce(h.total::numeric, 0) > l.head_remaining)
          -- A spend limit set since the batch was priced: its counters are the general writer's to move.
          or exists (select 1 from spend_limits sl where sl.account_id = l.account_id and sl.denomination = l.denomination)
      ) as g
    ), stamp as materialized (
      -- Taken once every balance is locked (the count reads them all), for the ledger ids.
      select ledger_stamp() as s from (select count(*) from locked) k
    ), run as materialized (
      select ${ledgerId(sql`stamp.s`, sql`m.ord`)} as tx_id, m.event_id, h.account_id, h.denomination, 'Event ' || m.type as description, m.cost::numeric as cost,
        l.id as balance_id, l.head_grant_id as grant_id, l.amount - sum(m.cost::numeric) over (partition by l.id order by m.ord) as ending
      from unnest(${col((m) => String(m.pair + 1))}, ${col((m) => m.cost)}, ${col((m) => m.eventId)}, ${col((m) => m.type)})
        with ordinality as m(pair, cost, event_id, type, ord)
      join holds h on h.ord = m.pair::bigint
      join locked l on l.account_id = h.account_id and l.denomination = h.denomination
      cross join stamp
    ), led as (
      insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, grant_id, created_at)
      select r.tx_id, r.account_id, ${companyId}, r.balance_id, r.denomination, 'event', r.description, -r.cost, r.ending + r.cost, r.ending, r.event_id, null, r.grant_id, ${at}::timestamptz
      from run r where not (select g from general)
    ), upd as (
      -- Every draw fits in the head grant (or, with none left, goes below zero): the balance row alone moves.
      update balances b set amount = b.amount - h.total::numeric, head_remaining = b.head_remaining - case when b.head_grant_id is not null then h.total::numeric else 0 end,
        updated_at = ${at}::timestamptz
      from locked l join holds h on h.account_id = l.account_id and h.denomination = l.denomination
      where b.id = l.id and h.total is not null and not (select g from general)
    ), c as (
      select l.id, l.account_id, l.denomination, l.amount as start_amount, l.amount - coalesce(h.total::numeric, 0) as amount, l.refill_threshold as threshold,
        l.managed_by_plan_id, l.included_amount as included, coalesce(p.pending, 0) as pending,
        l.amount - (coalesce(p.pending, 0) - h.own_holds::numeric) as before, l.amount - coalesce(h.total::numeric, 0) - coalesce(p.pending, 0) as after,
        pl.threshold_alert_percentage::numeric as pct, a.last_plan_renewal as period,
        exists (select 1 from notification_states ns where ns.balance_id = l.id) as has_states,
        coalesce(h.total::numeric, 0) <> 0 or h.own_holds::numeric <> 0 as changed, h.total is not null as moved,
        -- The balance's first ledger row, whose id its balance_change delivery is made beside.
        case when h.first_move is not null then ${ledgerId(sql`(select s from stamp)`, sql`h.first_move`)} end as first_tx, h.ord
      from locked l
      join holds h on h.account_id = l.account_id and h.denomination = l.denomination
      ${lockedContext(now)}
    ), d as (
      select c.*, coalesce(${crossings.belowZero}, false) as below_zero, coalesce(${crossings.belowRefillThreshold}, false) as below_refill_threshold,
        coalesce(${crossings.planAlert}, false) as plan_alert
      from c
    ), e as (
      select d.*, d.changed and d.moved and not (d.has_states or d.below_zero or d.below_refill_threshold or d.plan_alert) as plain from d
    ), notified as (
      ${notify(sql`(select e.account_id, e.denomination, 'balance_change' as topic, trim_scale(e.amount)::text as balance, '{}' as detail,
        ${idBeside('whd', sql`e.first_tx`)} as base_id, e.ord from e where e.plain and not (select g from general)) v`)}
    )
    select c.id, c.account_id, c.denomination, c.start_amount::text as amount, c.amount::text as new_amount, c.threshold::text as refill_threshold,
      c.managed_by_plan_id is not null as plan_managed, c.included::text as included, c.pending::text as pending, c.pct::text as pct, c.period, c.has_states,
      c.below_zero, c.below_refill_threshold, c.plan_alert, null as marker, c.ord
    from e c
    where c.changed and not c.plain and not (select g from general)
    union all
    select null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, 'general', 0
    where (select g from general)
    union all
    -- A pair whose balance was not there to lock (deleted since the batch was priced): nothing of
    -- this statement may stand, since that balance's moves were not written.
    select null, null, null, null, null, null, null, null, null, null, null, null, null, null, null, 'lost', 0
    -- (The pairs are distinct, so a count short of theirs is a missing one.)
    where (select count(*) from locked) < (select count(*) from holds)
    order by ord`,
  );
  if (rows.some((r) => r.marker === 'lost')) return 'lost';
  return rows.some((r) => r.marker === 'general') ? 'general' : rows;
}

/**
 * One event in one autocommit statement (the single-event path): price it (`price`, a relation
 * of one row: account_id, amount, denomination, priced_by, pricing, hand_over, over `acct`, the
 * `account` relation of the caller's account; `hand_over` when the price must be read under the
 * lock, a graduated tier's), lock its balance, gate on `available` and on the balance's spend
 * limits (completed spend counters, read under the lock, plus live holds), insert the event, move the
 * balance, write its ledger row and its `balance_change` (`notify`, the outbox insert over a
 * relation `v`). It writes only when the event crosses nothing, is refused by nothing and
 * leaves no state (the rules of move-decision.ts, as `rules` says them in SQL), so the outbox
 * rows it needs are just `balance_change`: otherwise it writes nothing and answers `crossing`,
 * and the general path records the event with all its notifications. Nor does it write when
 * the balance does not exist yet, or the idempotency key was used (`inserted` is null then).
 *
 * The values are placeholders (`v`), so the text is built once and prepared once per
 * connection: accountId, companyId, type, at, gate, requested, eventId, metadata, idem,
 * expires, description, deliveryId, and those `price` names. The balance comes back as it was
 * locked, its columns named `b_` and the table's name.
 */
export function singleEventStatement({ account, price, rules, notify, v }: { account: SQL; price: SQL; rules: MoveRules; notify: (source: SQL) => SQL; v: (name: string) => SQL.Aliased | SQL | ReturnType<typeof sql.placeholder> }): SQL {
  const crosses = rules.crossings({
    before: sql`dd.before_avail`,
    after: sql`dd.after_avail`,
    threshold: sql`dd.refill_threshold`,
    startAmount: sql`dd.start_amount`,
    amount: sql`dd.after_amount`,
    included: sql`dd.included_amount`,
    pct: sql`(select pct from alert)`,
    period: sql`(select last_plan_renewal from acct)`,
  });
  return sql`with acct as (
        ${account}
      ), price as (
        ${price}
      ), bal as materialized (
        select b.* from balances b join price on b.account_id = price.account_id and b.denomination = price.denomination
        for update of b
      ), pend as (
        -- Read on the locked row with a fresh snapshot (live_pending is volatile): holds that
        -- other transactions committed while this statement waited for the lock count.
        select coalesce((select live_pending(bal.account_id, bal.denomination, ${v('at')}::timestamptz) from bal), 0) as s
      ), lim as (
        -- The balance's spend limits with their periods' completed spend, read under the lock
        -- (spend_state is volatile, as live_pending); none for most balances.
        select s.* from bal cross join lateral spend_state(bal.account_id, bal.denomination, ${v('at')}::timestamptz) s
        where exists (select 1 from spend_limits l where l.account_id = bal.account_id and l.denomination = bal.denomination)
      ), alert as (
        select p.threshold_alert_percentage::numeric as pct from bal join plans p on p.id = bal.managed_by_plan_id
      ), decide0 as (
        select price.*, bal.id as balance_id, bal.amount as start_amount, pend.s as pending, bal.refill_threshold, bal.included_amount,
          bal.head_grant_id, bal.head_remaining, bal.grants_due_at,
          case when price.amount is not null and ${v('gate')}::boolean and price.amount > bal.amount - pend.s then 'rejected' else ${v('requested')}::text end as state
        from price left join bal on true cross join pend
      ), decide as (
        select d0.*,
          d0.start_amount - d0.pending as before_avail,
          d0.start_amount - case when d0.state = 'complete' then d0.amount else 0 end as after_amount,
          d0.start_amount - case when d0.state = 'complete' then d0.amount else 0 end - d0.pending - case when d0.state = 'pending' then d0.amount else 0 end as after_avail
        from decide0 d0
      ), flags as (
        -- coalesce: a NULL here (no threshold, no plan) must read as "no crossing", not as unknown.
        select dd.*, coalesce(dd.amount is not null and dd.balance_id is not null and (
            dd.state = 'rejected' or dd.hand_over or ${crosses.belowZero} or ${crosses.belowRefillThreshold}
            -- Past a reject limit (a rejection), or crossing a notify limit (a notification): the general path writes it.
            or (dd.amount > 0 and exists (select 1 from lim where (lim.action = 'reject' or lim.spent + dd.pending <= lim.limit_amount)
              and lim.spent + dd.pending + dd.amount > lim.limit_amount))
            or (${crosses.planAlert} and not exists (select 1 from notification_states ns where ns.balance_id = dd.balance_id and ns.kind = 'plan_threshold'
              and ns.period = ${rules.periodKey(sql`(select last_plan_renewal from acct)`)}))
            -- A state the move leaves behind is cleared by the general path: a hold that lapsed
            -- unswept raised the balance without clearing what its placing had entered.
            or exists (select 1 from notification_states ns where ns.balance_id = dd.balance_id
              and (${rules.leaves({ kind: sql`ns.kind`, after: sql`dd.after_avail`, threshold: sql`dd.refill_threshold` })}))
            -- A grant due (expiring or taking effect), or a draw past what the head grant has
            -- left: the general path decides it, from the balance's grants.
            or dd.grants_due_at <= ${v('at')}::timestamptz
            or (dd.state = 'complete' and dd.head_grant_id is not null and dd.amount > dd.head_remaining)
          ), false) as crossing
        from decide dd
      ), ev as (
        insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate_on_balance, metadata, idempotency_key, created_at, updated_at, expires_at,
          quantities, properties, pricing, held_cost)
        select ${v('eventId')}, ${v('companyId')}, f.account_id, ${v('type')}, f.state, f.amount, f.denomination, f.priced_by, ${v('gate')}::boolean, ${v('metadata')}::jsonb, ${v('idem')}::text,
          ${v('at')}::timestamptz, ${v('at')}::timestamptz, case when f.state = 'pending' then ${v('expires')}::timestamptz end,
          ${v('quantities')}::jsonb, ${v('properties')}::jsonb, f.pricing, case when f.state = 'pending' then f.amount end
        from flags f where (f.amount is null or f.balance_id is not null) and not f.crossing
        on conflict (company_id, idempotency_key) where idempotency_key is not null do nothing
        returning state
      ), upd as (
        update balances b set amount = b.amount - f.amount, updated_at = ${v('at')}::timestamptz,
          head_remaining = b.head_remaining - case when b.head_grant_id is not null then f.amount else 0 end
        from flags f, ev where b.id = f.balance_id and ev.state = 'complete' and f.amount is not null
        returning b.amount, b.head_grant_id
      ), spent as (
        -- What a completed event cost, counted toward each period its balance has a limit in.
        insert into spend_counters (account_id, denomination, period, period_start, spent)
        select distinct on (l.period) f.account_id, f.denomination, l.period, l.period_start, f.amount
        from flags f cross join lim l cross join ev where ev.state = 'complete' and f.amount is not null
        on conflict (account_id, denomination, period, period_start) do update set spent = spend_counters.spent + excluded.spent
      ), led as (
        insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, grant_id, created_at)
        select ${ledgerId(sql`st.s`, sql`1`)}, ${v('accountId')}, ${v('companyId')}, f.balance_id, f.denomination, 'event', ${v('description')}, -f.amount, upd.amount + f.amount, upd.amount, ${v('eventId')}, null, upd.head_grant_id, ${v('at')}::timestamptz
        -- The id is stamped per moved row, so once the balance is locked and moved.
        from upd cross join lateral (select ledger_stamp() as s where upd.amount is not null) st, flags f
        returning id
      ), hook as (
        ${notify(
          sql`(select ${v('accountId')}::text as account_id, f.denomination, 'balance_change' as topic, f.after_amount::text as balance, '{}' as detail,
            ${v('deliveryId')}::text as base_id, 1 as ord
            -- An event that costs nothing changes neither the amount nor what is available.
            from ev cross join flags f where f.amount is not null and f.amount <> 0 and ev.state in ('complete', 'pending')) v`,
        )}
        returning id
      )
      select f.account_id, f.amount::text as cost, f.denomination, f.priced_by, f.pricing, f.state, f.pending::text as b_pending, f.crossing,
        (select state from ev) as inserted, (select amount::text from upd) as new_amount, (select count(*) from led) as ledger_rows, (select count(*) from hook) as hooks,
        b.id as b_id, b.account_id as b_account_id, b.company_id as b_company_id, b.denomination as b_denomination, b.amount::text as b_amount,
        b.refill_threshold::text as b_refill_threshold, b.refill_amount::text as b_refill_amount, b.refill_usd_amount as b_refill_usd_amount,
        b.refill_on_day as b_refill_on_day, b.refill_max_charges_per_month as b_refill_max_charges_per_month, b.last_periodic_refill as b_last_periodic_refill, b.next_periodic_refill as b_next_periodic_refill,
        b.scheduled_refill as b_scheduled_refill, b.refill_expires_after_days as b_refill_expires_after_days, b.managed_by_plan_id as b_managed_by_plan_id, b.included_amount::text as b_included_amount,
        b.head_grant_id as b_head_grant_id, case when b.id is not null and (b.head_grant_id is not null or b.grants_due_at is not null) then ${nextExpirySql(sql`b`, sql`${v('at')}::timestamptz`)} end as b_next_expiry,
        b.head_remaining::text as b_head_remaining, b.grants_due_at as b_grants_due_at, b.created_at as b_created_at, b.updated_at as b_updated_at
      from flags f left join bal b on b.id = f.balance_id`;
}
