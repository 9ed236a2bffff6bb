import { compile, runCompiled, sql, type Compiled, type Db } from '../../db/client';
import { ledgerId, newId } from '../../ids';
import { add, type Units } from '../../money';
import type { events, EventState, PricedBy, StoredRefillChange } from '../../db/schema';
import type { Balance } from '../balances/balances';
import { HOLD_MS } from './constants';
import type { EventInput } from './input';
import { eventPrice, pricingPlanId } from './pricing';
import { crossingRules, leavesStateSql, planPeriodKey } from '../balances/crossings';
import { insertDeliveries } from '../webhooks/outbox';

type EventRow = typeof events.$inferSelect;

type Row = {
  account_id: string;
  cost: string | null;
  denomination: string | null;
  priced_by: PricedBy;
  state: EventState;
  inserted: EventState | null;
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
  b_scheduled_refill: StoredRefillChange | null;
  b_managed_by_plan_id: string | null;
  b_included_amount: string | null;
  b_created_at: string | Date | null;
  b_updated_at: string | Date | null;
  crossing: boolean | null;
};

/** How often the statement wrote its event, and how often it handed it to the general path (observable by tests). */
export const singleStatement = { wrote: 0, handedOver: 0 };

const d = (x: string | Date | null) => (x === null ? null : new Date(x));
const v = (name: string) => sql.placeholder(name);
/** The statement below as SQL text: built on first use, then prepared once per connection. */
let singleEvent: Compiled | undefined;
/** The crossing rules over the `decide` row: what the general path would notify, this statement leaves to it. */
const crosses = crossingRules({
  before: sql`dd.before_avail`,
  after: sql`dd.after_avail`,
  threshold: sql`dd.refill_threshold`,
  startAmount: sql`dd.start_amount`,
  amount: sql`dd.after_amount`,
  included: sql`dd.included_amount`,
  pct: sql`(select pct from alert)`,
  period: sql`(select last_plan_renewal from acct)`,
});

/**
 * One event in one statement: price (override or the plan's rule), lock the balance, gate on
 * `available`, insert the event, move the balance, write its ledger row and its balance_change
 * outbox rows. Returns null when the general path must take over: the balance does not exist
 * yet, the idempotency key was already used, or the event crosses something that notifies.
 */
export async function recordSingleEvent({ db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date }): Promise<{ event: EventRow; balance: Balance | null } | 'not_found' | null> {
  const ovrAmount = input.cost_override?.amount ?? null;
  const ovrDenomination = input.cost_override?.denomination ?? null;
  const gate = input.gate_on_balance ?? false;
  const requested = input.state ?? 'complete';
  const eventId = newId('ev');
  const metadata = input.metadata ?? {};
  const idem = input.idempotency_key ?? null;
  const at = now.toISOString();
  const expires = new Date(now.getTime() + HOLD_MS).toISOString();

  // One autocommit statement: no BEGIN/COMMIT round trips. It only writes when the event
  // crosses nothing (no drop below zero or a threshold, no refusal), so the outbox rows it
  // needs are just `balance_change`, written by the same statement. Anything else returns
  // `crossing` and the transactional path records the event with all its notifications.
  {
    const [row] = await runCompiled<Row>(db, (singleEvent ??= compile(sql`with acct as (
        select a.id, ${pricingPlanId(sql`a`)} as plan_id, a.last_plan_renewal from accounts a where a.id = ${v('accountId')} and a.company_id = ${v('companyId')}
      ), price as (
        select acct.id as account_id, pr.amount, pr.denomination, pr.priced_by
        from acct cross join lateral ${eventPrice({ planId: sql`acct.plan_id`, type: sql`${v('type')}::text`, overrideAmount: sql`${v('ovrAmount')}::numeric`, overrideDenomination: sql`${v('ovrDenomination')}::text` })} pr
      ), bal as materialized (
        select b.* from balances b join price on b.account_id = price.account_id and b.denomination = price.denomination
        for update of b
      ), pend as (
        -- Read on the locked row with a fresh snapshot (live_pending is volatile): holds that
        -- other transactions committed while this statement waited for the lock count.
        select coalesce((select live_pending(bal.account_id, bal.denomination, ${v('at')}::timestamptz) from bal), 0) as s
      ), alert as (
        select p.threshold_alert_percentage::numeric as pct from bal join plans p on p.id = bal.managed_by_plan_id
      ), decide0 as (
        select price.*, bal.id as balance_id, bal.amount as start_amount, pend.s as pending, bal.refill_threshold, bal.included_amount,
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
            dd.state = 'rejected' or ${crosses.belowZero} or ${crosses.belowRefillThreshold}
            or (${crosses.planAlert} and not exists (select 1 from notification_states ns where ns.balance_id = dd.balance_id and ns.kind = 'plan_threshold'
              and ns.period = ${planPeriodKey(sql`(select last_plan_renewal from acct)`)}))
            -- A state the move leaves behind is cleared by the general path: a hold that lapsed
            -- unswept raised the balance without clearing what its placing had entered.
            or exists (select 1 from notification_states ns where ns.balance_id = dd.balance_id
              and (${leavesStateSql({ kind: sql`ns.kind`, after: sql`dd.after_avail`, threshold: sql`dd.refill_threshold` })}))
          ), false) as crossing
        from decide dd
      ), ev as (
        insert into events (id, company_id, account_id, type, state, cost_amount, cost_denomination, priced_by, gate_on_balance, metadata, idempotency_key, created_at, updated_at, expires_at)
        select ${v('eventId')}, ${v('companyId')}, f.account_id, ${v('type')}, f.state, f.amount, f.denomination, f.priced_by, ${v('gate')}::boolean, ${v('metadata')}::jsonb, ${v('idem')}::text,
          ${v('at')}::timestamptz, ${v('at')}::timestamptz, case when f.state = 'pending' then ${v('expires')}::timestamptz end
        from flags f where (f.amount is null or f.balance_id is not null) and not f.crossing
        on conflict (company_id, idempotency_key) where idempotency_key is not null do nothing
        returning state
      ), upd as (
        update balances b set amount = b.amount - f.amount, updated_at = ${v('at')}::timestamptz
        from flags f, ev where b.id = f.balance_id and ev.state = 'complete' and f.amount is not null
        returning b.amount
      ), led as (
        insert into transactions (id, account_id, company_id, balance_id, denomination, type, description, amount, starting_balance, ending_balance, event_id, charge_id, created_at)
        select ${ledgerId(sql`st.s`, sql`1`)}, ${v('accountId')}, ${v('companyId')}, f.balance_id, f.denomination, 'event', ${v('description')}, -f.amount, upd.amount + f.amount, upd.amount, ${v('eventId')}, null, ${v('at')}::timestamptz
        -- The id is stamped per moved row, so once the balance is locked and moved.
        from upd cross join lateral (select ledger_stamp() as s where upd.amount is not null) st, flags f
        returning id
      ), hook as (
        ${insertDeliveries(
          v('companyId'),
          v('at'),
          sql`(select ${v('accountId')}::text as account_id, f.denomination, 'balance_change' as topic, f.after_amount::text as balance, '{}' as detail,
            ${v('deliveryId')}::text as base_id, 1 as ord
            -- An event that costs nothing changes neither the amount nor what is available.
            from ev cross join flags f where f.amount is not null and f.amount <> 0 and ev.state in ('complete', 'pending')) v`,
        )}
        returning id
      )
      select f.account_id, f.amount::text as cost, f.denomination, f.priced_by, f.state, f.pending::text as b_pending, f.crossing,
        (select state from ev) as inserted, (select amount::text from upd) as new_amount, (select count(*) from led) as ledger_rows, (select count(*) from hook) as hooks,
        b.id as b_id, b.company_id as b_company_id, b.amount::text as b_amount, b.refill_threshold::text as b_refill_threshold, b.refill_amount::text as b_refill_amount,
        b.refill_usd_amount as b_refill_usd_amount, b.refill_on_day as b_refill_on_day, b.last_periodic_refill as b_last_periodic_refill,
        b.next_periodic_refill as b_next_periodic_refill, b.scheduled_refill as b_scheduled_refill, b.managed_by_plan_id as b_managed_by_plan_id,
        b.included_amount::text as b_included_amount, b.created_at as b_created_at, b.updated_at as b_updated_at
      from flags f left join bal b on b.id = f.balance_id`)), {
      accountId,
      companyId,
      type: input.type,
      ovrAmount,
      ovrDenomination,
      at,
      gate,
      requested,
      eventId,
      metadata: JSON.stringify(metadata),
      idem,
      expires,
      description: `Event ${input.type}`,
      deliveryId: newId('whd'),
    });
    if (!row) return 'not_found';
    // Nothing written: a new balance, a repeated idempotency key, or a crossing.
    if (!row.inserted) {
      singleStatement.handedOver++;
      return null;
    }
    singleStatement.wrote++;

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
  }
}
