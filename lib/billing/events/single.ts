import { query, sql, type Db } from '../../db/client';
import { newId } from '../../ids';
import { add, type Units } from '../../money';
import type { BatchItem } from '../../api/schemas/events';
import type { events } from '../../db/schema';
import { afterBalancesMoved } from '../balances/crossings';
import type { Balance } from '../balances/balances';
import { HOLD_MS } from './constants';

type EventRow = typeof events.$inferSelect;

type Row = {
  account_id: string;
  cost: string | null;
  denomination: string | null;
  priced_by: 'override' | 'plan' | 'none';
  state: string;
  inserted: string | null;
  new_amount: string | null;
  b_id: string | null;
  b_company_id: string | null;
  b_amount: string | null;
  b_pending: string | null;
  b_refill_threshold: string | null;
  b_refill_amount: string | null;
  b_refill_usd_amount: number | null;
  b_refill_on_day: string | null;
  b_last_periodic_refill: string | Date | null;
  b_next_periodic_refill: string | Date | null;
  b_scheduled_refill: unknown;
  b_managed_by_plan_id: string | null;
  b_included_amount: string | null;
  b_created_at: string | Date | null;
  b_updated_at: string | Date | null;
  plan_pct: string | null;
  plan_period: string | Date | null;
};

const d = (v: string | Date | null) => (v === null ? null : new Date(v));

/**
 * One event in one statement: price (override or the plan's rule), lock the balance, gate on
 * `available`, insert the event, move the balance and write its ledger row — then the crossing
 * checks in the same transaction. Returns null when the general path must take over: the
 * balance does not exist yet, or the idempotency key was already used.
 */
export async function recordSingleEvent({ db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: Omit<BatchItem, 'account_id'>; now: Date }): Promise<{ event: EventRow; balance: Balance | null } | 'not_found' | null> {
  const ovrAmount = input.cost_override?.amount ?? input.cost_override_amount ?? null;
  const ovrDenomination = input.cost_override?.denomination ?? input.cost_override_denomination ?? null;
  const gate = input.gate_on_balance ?? false;
  const requested = input.state ?? 'complete';
  const eventId = newId('ev');
  const metadata = input.metadata ?? {};
  const idem = input.idempotency_key ?? null;
  const at = now.toISOString();
  const expires = new Date(now.getTime() + HOLD_MS).toISOString();

  return db.transaction(async (tx) => {
    const [row] = await query<Row>(
      tx,
      sql`with acct as (
        select a.id, a.plan_id, a.last_plan_renewal from accounts a where a.id = ${accountId} and a.company_id = ${companyId}
      ), rule as (
        select (r->>'amount')::numeric as amount, r->>'denomination' as denomination
        from acct join plans p on p.id = acct.plan_id cross join lateral jsonb_array_elements(p.billing_rules) r
        where r->>'type' = ${input.type} limit 1
      ), price as (
        select acct.id as account_id,
          coalesce(${ovrAmount}::numeric, (select amount from rule)) as amount,
          coalesce(${ovrDenomination}::text, (select denomination from rule)) as denomination,
          case when ${ovrAmount}::numeric is not null then 'override' when exists (select 1 from rule) then 'plan' else 'none' end as priced_by
        from acct
      ), bal as (
        select b.* from balances b join price on b.account_id = price.account_id and b.denomination = price.denomination
        for update of b
      ), pend as (
        select coalesce(sum(e.cost_amount), 0) as s from events e join price on e.account_id = price.account_id and e.cost_denomination = price.denomination
        where e.state = 'pending' and e.expires_at > ${at}::timestamptz
      ), decide as (
        select price.*, bal.id as balance_id, pend.s as pending,
          case when price.amount is not null and ${gate}::boolean and price.amount > bal.amount - pend.s then 'rejected' else ${requested}::text end as state
        from price left join bal on true cross join pend
      ), ev as (
        insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate_on_balance, metadata, idempotency_key, created_at, updated_at, expires_at)
        select ${eventId}, ${companyId}, dd.account_id, ${input.type}, dd.state, dd.amount, dd.denomination, dd.priced_by, ${gate}::boolean, ${JSON.stringify(metadata)}::jsonb, ${idem}::text,
          ${at}::timestamptz, ${at}::timestamptz, case when dd.state = 'pending' then ${expires}::timestamptz end
        from decide dd where dd.amount is null or dd.balance_id is not null
        on conflict (company_id, idempotency_key) where idempotency_key is not null do nothing
        returning state
      ), upd as (
        update balances b set amount = b.amount - dd.amount, updated_at = ${at}::timestamptz
        from decide dd, ev where b.id = dd.balance_id and ev.state = 'complete' and dd.amount is not null
        returning b.amount
      ), led as (
        insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, created_at)
        select ${newId('tx')}, ${accountId}, ${companyId}, dd.balance_id, dd.denomination, 'event', ${`Event ${input.type}`}, -dd.amount, upd.amount + dd.amount, upd.amount, ${eventId}, null, ${at}::timestamptz
        from upd, decide dd
        returning id
      )
      select dd.account_id, dd.amount::text as cost, dd.denomination, dd.priced_by, dd.state, dd.pending::text as b_pending,
        (select state from ev) as inserted, (select amount::text from upd) as new_amount, (select count(*) from led) as ledger_rows,
        b.id as b_id, b.company_id as b_company_id, b.amount::text as b_amount, b.refill_threshold::text as b_refill_threshold, b.refill_amount::text as b_refill_amount,
        b.refill_usd_amount as b_refill_usd_amount, b.refill_on_day as b_refill_on_day, b.last_periodic_refill as b_last_periodic_refill,
        b.next_periodic_refill as b_next_periodic_refill, b.scheduled_refill as b_scheduled_refill, b.managed_by_plan_id as b_managed_by_plan_id,
        b.included_amount::text as b_included_amount, b.created_at as b_created_at, b.updated_at as b_updated_at,
        (select p.threshold_alert_percentage from plans p where p.id = b.managed_by_plan_id) as plan_pct,
        (select last_plan_renewal from acct) as plan_period
      from decide dd left join bal b on b.id = dd.balance_id`,
    );
    if (!row) return 'not_found';
    if (!row.inserted) return null;

    const state = row.inserted;
    const cost = row.cost;
    const event: EventRow = {
      id: eventId,
      companyId,
      accountId,
      type: input.type,
      state,
      costAmount: cost,
      costDenomination: row.denomination,
      pricedBy: row.priced_by,
      gateOnBalance: gate,
      metadata,
      idempotencyKey: idem,
      createdAt: now,
      updatedAt: now,
      expiresAt: state === 'pending' ? new Date(expires) : null,
    };
    if (!cost || !row.b_id || !row.denomination) return { event, balance: null };

    const startAmount = row.b_amount!;
    const startPending = row.b_pending!;
    const amount: Units = row.new_amount ?? startAmount;
    const pending: Units = state === 'pending' ? add(startPending, cost) : startPending;
    await afterBalancesMoved(
      tx,
      companyId,
      [{ accountId, denomination: row.denomination, id: row.b_id, startAmount, amount, startPending, pending, threshold: row.b_refill_threshold,
        planManaged: row.b_managed_by_plan_id !== null,
        planAlert:
          row.b_managed_by_plan_id && row.plan_pct && row.plan_period && row.b_included_amount && Number(row.b_included_amount) > 0
            ? { included: row.b_included_amount, pct: row.plan_pct, period: new Date(row.plan_period) }
            : null,
      }],
      state === 'rejected' ? [{ accountId, denomination: row.denomination, topic: 'pause_balance', balance: startAmount }] : [],
      now,
    );
    const balance: Balance = {
      id: row.b_id,
      accountId,
      companyId: row.b_company_id!,
      denomination: row.denomination,
      amount,
      pending,
      refillThreshold: row.b_refill_threshold,
      refillAmount: row.b_refill_amount,
      refillUsdAmount: row.b_refill_usd_amount === null ? null : Number(row.b_refill_usd_amount),
      refillOnDay: row.b_refill_on_day,
      lastPeriodicRefill: d(row.b_last_periodic_refill),
      nextPeriodicRefill: d(row.b_next_periodic_refill),
      scheduledRefill: row.b_scheduled_refill ?? null,
      managedByPlanId: row.b_managed_by_plan_id,
      includedAmount: row.b_included_amount,
      createdAt: new Date(row.b_created_at!),
      updatedAt: amount !== startAmount ? now : d(row.b_updated_at),
    };
    return { event, balance };
  });
}
