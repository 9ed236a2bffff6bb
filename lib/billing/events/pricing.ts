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
 * Prices a batch's items in one statement, in request order. `found` is false for an account
 * that is not the company's.
 */
export async function priceEvents(
  db: Db,
  companyId: string,
  items: { account_id: string; type: string; cost_override?: { amount: Units; denomination: string } }[],
): Promise<{ found: boolean; cost: Cost; pricedBy: PricedBy }[]> {
  const rows = await query<{ found: boolean; amount: string | null; denomination: string | null; priced_by: PricedBy }>(
    db,
    sql`select a.id is not null as found, price.amount::text as amount, price.denomination, price.priced_by
      from unnest(${textArray(items.map((i) => i.account_id))}, ${textArray(items.map((i) => i.type))},
        ${textArray(items.map((i) => i.cost_override?.amount ?? null))}, ${textArray(items.map((i) => i.cost_override?.denomination ?? null))})
        with ordinality as v(account_id, type, override_amount, override_denomination, ord)
      left join accounts a on a.id = v.account_id and a.company_id = ${companyId}
      left join lateral ${eventPrice({ planId: sql`a.plan_id`, type: sql`v.type`, overrideAmount: sql`v.override_amount::numeric`, overrideDenomination: sql`v.override_denomination` })} price on true
      order by v.ord`,
  );
  return rows.map((r) => ({
    found: r.found,
    cost: r.amount !== null && r.denomination !== null ? { amount: r.amount, denomination: r.denomination } : null,
    pricedBy: r.priced_by,
  }));
}
