import type { SQL } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import type { Units } from '../../money';
import type { PricedBy } from '../../db/schema';

export type Cost = { amount: Units; denomination: string } | null;
export type { PricedBy };

/**
 * How an event is priced: a caller's override wins, then the first of the plan's billing rules
 * for its type, else it is not billed. The rule exists only here, as SQL: the single-event
 * statement and the batch path both price through it, so they cannot disagree.
 *
 * A subquery of one row (amount, denomination, priced_by), to join laterally: `planId` may be
 * NULL (no plan), `overrideAmount` is NULL when the caller sent no override (the override's
 * denomination always comes with it).
 */
export function eventPrice(p: { planId: SQL; type: SQL; overrideAmount: SQL; overrideDenomination: SQL }): SQL {
  return sql`(
    select case when ${p.overrideAmount} is not null then ${p.overrideAmount} else rule.amount end as amount,
      case when ${p.overrideAmount} is not null then ${p.overrideDenomination} else rule.denomination end as denomination,
      case when ${p.overrideAmount} is not null then 'override' when rule.amount is not null then 'plan' else 'none' end as priced_by
    from (select) one left join lateral (
      select (r.rule->>'amount')::numeric as amount, r.rule->>'denomination' as denomination
      from plans pl cross join lateral jsonb_array_elements(pl.billing_rules) with ordinality as r(rule, n)
      where pl.id = ${p.planId} and r.rule->>'type' = ${p.type}
      order by r.n limit 1
    ) rule on true
  )`;
}

/**
 * The plan whose rules price an account's events: its plan while it runs (ACTIVE, or PAST_DUE while
 * the renewal is retried). A plan waiting for the card collector is not attached yet, so it
 * prices nothing: the account's events are unbilled until the card starts it.
 */
export function pricingPlanId(account: SQL): SQL {
  return sql`case when ${account}.plan_status in ('ACTIVE', 'PAST_DUE') then ${account}.plan_id end`;
}

/**
 * Prices a batch's items in one statement, in request order. `found` is false for an account
 * that is not the company's; `hasBalance` tells whether the balance the item moves exists.
 */
export async function priceEvents(
  db: Db,
  companyId: string,
  items: { account_id: string; type: string; cost_override?: { amount: Units; denomination: string } }[],
): Promise<{ found: boolean; cost: Cost; pricedBy: PricedBy; hasBalance: boolean }[]> {
  const rows = await query<{ found: boolean; amount: string | null; denomination: string | null; priced_by: PricedBy; has_balance: boolean }>(
    db,
    // Priced once per distinct (plan, type, override), not once per item: a batch of a thousand
    // events usually has a handful of those.
    sql`with v as (
        select v.ord, v.type, coalesce(v.override_amount, '') as override_amount, coalesce(v.override_denomination, '') as override_denomination,
          a.id as account_id, coalesce(${pricingPlanId(sql`a`)}, '') as plan_id
        from unnest(${textArray(items.map((i) => i.account_id))}, ${textArray(items.map((i) => i.type))},
          ${textArray(items.map((i) => i.cost_override?.amount ?? null))}, ${textArray(items.map((i) => i.cost_override?.denomination ?? null))})
          with ordinality as v(account_id, type, override_amount, override_denomination, ord)
        left join accounts a on a.id = v.account_id and a.company_id = ${companyId}
      ), combos as (
        select distinct plan_id, type, override_amount, override_denomination from v where account_id is not null
      ), priced as (
        select c.*, price.amount, price.denomination, price.priced_by from combos c
        left join lateral ${eventPrice({ planId: sql`nullif(c.plan_id, '')`, type: sql`c.type`, overrideAmount: sql`nullif(c.override_amount, '')::numeric`, overrideDenomination: sql`nullif(c.override_denomination, '')` })} price on true
      )
      select v.account_id is not null as found, p.amount::text as amount, p.denomination, coalesce(p.priced_by, 'none') as priced_by,
        -- Whether the balance the event moves exists already (balances are never deleted): then no insert is needed.
        exists (select 1 from balances b where b.account_id = v.account_id and b.denomination = p.denomination) as has_balance
      from v left join priced p on p.plan_id = v.plan_id and p.type = v.type and p.override_amount = v.override_amount and p.override_denomination = v.override_denomination
      order by v.ord`,
  );
  return rows.map((r) => ({
    found: r.found,
    cost: r.amount !== null && r.denomination !== null ? { amount: r.amount, denomination: r.denomination } : null,
    pricedBy: r.priced_by,
    hasBalance: r.has_balance,
  }));
}
