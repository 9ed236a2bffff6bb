import type { SQL } from 'drizzle-orm';
import { query, sql, textArray, type Db } from '../../db/client';
import type { Units } from '../../money';
import type { PricedBy, StoredPricing } from '../../db/schema';

export type Cost = { amount: Units; denomination: string } | null;
export type { PricedBy };

/**
 * How an event is priced: a caller's override wins, then the plan's rate card (the first rule of
 * its type whose filters match, priced from its quantities: `rateCardPrice` below, the SQL form of
 * rate-card.ts), else it is not billed. The single-event statement and the batch path both price
 * through this fragment, so they cannot disagree.
 *
 * A subquery of one row (amount, denomination, priced_by, pricing, graduated), to join laterally:
 * `planId` may be NULL (no plan), `overrideAmount` is NULL when the caller sent no override (the
 * override's denomination always comes with it). `used` is the account's graduated counts
 * (`counterKey` → quantity; NULL: none read). `graduated` says the price hangs on those counts,
 * so a path that has not read them under the balance's lock must not write it.
 */
export function eventPrice(p: { planId: SQL; type: SQL; overrideAmount: SQL; overrideDenomination: SQL; quantities: SQL; properties: SQL; used?: SQL }): SQL {
  return sql`(
    select case when ${p.overrideAmount} is not null then ${p.overrideAmount} else (x.p->>'amount')::numeric end as amount,
      case when ${p.overrideAmount} is not null then ${p.overrideDenomination} else x.p->>'denomination' end as denomination,
      case when ${p.overrideAmount} is not null then 'override' when x.p is not null then 'plan' else 'none' end as priced_by,
      case when ${p.overrideAmount} is null and x.p is not null then jsonb_build_object('rule', x.p->'rule', 'components', x.p->'components') end as pricing,
      coalesce(${p.overrideAmount} is null and (x.p->>'graduated')::boolean, false) as graduated
    from (select) one left join lateral (
      select ${rateCardPrice({ rules: sql`pl.billing_rules`, type: p.type, quantities: p.quantities, properties: p.properties, used: p.used })} as p
      from plans pl where pl.id = ${p.planId}
    ) x on true
  )`;
}

/**
 * The SQL form of rate-card.ts's `priceEvent`: a scalar subquery answering what `rate_card_event`
 * answers (drizzle/0031_usage_functions.sql), NULL when no rule matches. The first rule of the
 * type whose filters match is picked inline (`rate_card_match` is asked only of a rule that has
 * filters), and a flat rule (an amount, no components) is priced inline too, exactly as
 * `rate_card_price` would price it: an event of a flat-priced plan calls no pricing function.
 * `rules` is an expression of the rules (jsonb array), written twice.
 */
export function rateCardPrice(p: { rules: SQL; type: SQL; quantities: SQL; properties: SQL; used?: SQL }): SQL {
  // The rule is picked first (LIMIT in a subquery of its own), then priced: only that one.
  return sql`(
    select case when m.rule ? 'components' then rate_card_price(${p.rules}, m.i, ${p.quantities}, ${p.used ?? sql`null::jsonb`})
        else jsonb_build_object('rule', m.i, 'denomination', m.rule->>'denomination', 'amount', trim_scale(coalesce((m.rule->>'amount')::numeric, 0))::text,
          'components', '[]'::jsonb, 'graduated', false) end
    from (
      select r.rule, (r.n - 1)::integer as i from jsonb_array_elements(${p.rules}) with ordinality as r(rule, n)
      where r.rule->>'type' = ${p.type}
        and (not (r.rule ? 'filters') or rate_card_match(jsonb_build_array(r.rule), ${p.type}, coalesce(${p.properties}, '{}'::jsonb)) is not null)
      order by r.n limit 1
    ) m
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

/** How the batch path saw an item priced: its cost, how, the rule's breakdown, and what its writing hangs on. */
export type ItemPrice = {
  found: boolean;
  cost: Cost;
  pricedBy: PricedBy;
  hasBalance: boolean;
  pricing: StoredPricing | null;
  /** The price hangs on the account's graduated counts: priced again under the balance's lock. */
  graduated: boolean;
  /** The balance it moves has spend limits: decided under the balance's lock. */
  limited: boolean;
};

type PriceRow = { found: boolean; amount: string | null; denomination: string | null; priced_by: PricedBy; has_balance: boolean; pricing: StoredPricing | string | null; graduated: boolean; limited: boolean };

const json = <T>(v: T | string | null): T | null => (typeof v === 'string' ? (JSON.parse(v) as T) : v);

/**
 * Prices a batch's items in one statement, in request order. `found` is false for an account
 * that is not the company's; `hasBalance` tells whether the balance the item moves exists.
 */
export async function priceEvents(db: Db, companyId: string, items: PricedItem[]): Promise<ItemPrice[]> {
  const jsonCol = (f: (i: PricedItem) => object | undefined) => textArray(items.map((i) => (f(i) ? JSON.stringify(f(i)) : null)));
  const rows = await query<PriceRow>(
    db,
    // Priced once per distinct (plan, type, override, quantities, properties), not once per item:
    // a batch of a thousand events usually has far fewer of those.
    sql`with v as (
        select v.ord, v.type, coalesce(v.override_amount, '') as override_amount, coalesce(v.override_denomination, '') as override_denomination,
          coalesce(v.quantities, '') as quantities, coalesce(v.properties, '') as properties,
          a.id as account_id, coalesce(${pricingPlanId(sql`a`)}, '') as plan_id
        from unnest(${textArray(items.map((i) => i.account_id))}, ${textArray(items.map((i) => i.type))},
          ${textArray(items.map((i) => i.cost_override?.amount ?? null))}, ${textArray(items.map((i) => i.cost_override?.denomination ?? null))},
          ${jsonCol((i) => i.quantities)}, ${jsonCol((i) => i.properties)})
          with ordinality as v(account_id, type, override_amount, override_denomination, quantities, properties, ord)
        left join accounts a on a.id = v.account_id and a.company_id = ${companyId}
      ), combos as (
        select distinct plan_id, type, override_amount, override_denomination, quantities, properties from v where account_id is not null
      ), priced as (
        select c.*, price.amount, price.denomination, price.priced_by, price.pricing, price.graduated from combos c
        left join lateral ${eventPrice({
          planId: sql`nullif(c.plan_id, '')`,
          type: sql`c.type`,
          overrideAmount: sql`nullif(c.override_amount, '')::numeric`,
          overrideDenomination: sql`nullif(c.override_denomination, '')`,
          quantities: sql`nullif(c.quantities, '')::jsonb`,
          properties: sql`nullif(c.properties, '')::jsonb`,
        })} price on true
      )
      select v.account_id is not null as found, p.amount::text as amount, p.denomination, coalesce(p.priced_by, 'none') as priced_by, p.pricing, coalesce(p.graduated, false) as graduated,
        -- Whether the balance the event moves exists already (balances are never deleted): then no insert is needed.
        exists (select 1 from balances b where b.account_id = v.account_id and b.denomination = p.denomination) as has_balance,
        exists (select 1 from spend_limits l where l.account_id = v.account_id and l.denomination = p.denomination) as limited
      from v left join priced p on p.plan_id = v.plan_id and p.type = v.type and p.override_amount = v.override_amount and p.override_denomination = v.override_denomination
        and p.quantities = v.quantities and p.properties = v.properties
      order by v.ord`,
  );
  return rows.map(itemPrice);
}

function itemPrice(r: PriceRow): ItemPrice {
  return {
    found: r.found,
    cost: r.amount !== null && r.denomination !== null ? { amount: r.amount, denomination: r.denomination } : null,
    pricedBy: r.priced_by,
    hasBalance: r.has_balance,
    pricing: json(r.pricing),
    graduated: r.graduated,
    limited: r.limited,
  };
}

export type PricedItem = { account_id: string; type: string; cost_override?: { amount: Units; denomination: string }; quantities?: Record<string, Units>; properties?: Record<string, unknown> };

/**
 * Prices items whose rule has graduated tiers, in request order, from the accounts' counters as
 * they stand now: the caller holds the balances' locks, so no other writer moves them. Each
 * item counts from the counter plus the quantities of the items before it that `counts` (they
 * complete); the rest (holds, and items refused) add nothing. Same SQL form as every price.
 */
export async function priceGraduated(db: Db, companyId: string, items: (PricedItem & { counts: boolean })[]): Promise<ItemPrice[]> {
  const jsonCol = (f: (i: PricedItem) => object | undefined) => textArray(items.map((i) => (f(i) ? JSON.stringify(f(i)) : null)));
  const rows = await query<PriceRow>(
    db,
    sql`with v as (
        select v.ord, v.account_id, v.type, v.quantities::jsonb as quantities, v.properties::jsonb as properties, v.counts::boolean as counts,
          a.plan_id, a.last_plan_renewal as period_start, pl.billing_rules as rules,
          rate_card_match(pl.billing_rules, v.type, coalesce(v.properties::jsonb, '{}'::jsonb)) as rule
        from unnest(${textArray(items.map((i) => i.account_id))}, ${textArray(items.map((i) => i.type))}, ${jsonCol((i) => i.quantities)}, ${jsonCol((i) => i.properties)},
          ${textArray(items.map((i) => String(i.counts)))}) with ordinality as v(account_id, type, quantities, properties, counts, ord)
        join accounts a on a.id = v.account_id and a.company_id = ${companyId}
        join plans pl on pl.id = ${pricingPlanId(sql`a`)}
      ), comp as (
        select v.ord, v.account_id, v.plan_id, v.period_start, v.rule, c.n - 1 as component, v.counts,
          coalesce((v.quantities->>(c.c->>'quantity'))::numeric, 0) as q
        from v cross join lateral jsonb_array_elements(v.rules->v.rule->'components') with ordinality as c(c, n)
        where c.c->>'tiers_mode' = 'graduated'
      ), run as (
        select comp.ord, comp.rule || '.' || comp.component as key,
          coalesce(u.used, 0) + coalesce(sum(case when comp.counts then comp.q end) over (
            partition by comp.account_id, comp.plan_id, comp.rule, comp.component order by comp.ord rows between unbounded preceding and 1 preceding), 0) as used
        from comp left join usage_counters u on u.account_id = comp.account_id and u.plan_id = comp.plan_id and u.period_start = comp.period_start
          and u.rule = comp.rule and u.component = comp.component
      ), used as (
        select ord, jsonb_object_agg(key, trim_scale(used)::text) as used from run group by ord
      )
      select true as found, (p.p->>'amount') as amount, p.p->>'denomination' as denomination, 'plan' as priced_by,
        jsonb_build_object('rule', p.p->'rule', 'components', p.p->'components') as pricing, true as graduated, true as has_balance, false as limited
      from v left join used on used.ord = v.ord
      cross join lateral (select rate_card_price(v.rules, v.rule, v.quantities, used.used) as p) p
      order by v.ord`,
  );
  return rows.map(itemPrice);
}

/**
 * Adds completed events' graduated quantities to their accounts' counters for the plan period
 * under way. Called in the transaction that debits them, under their balances' locks.
 */
export async function addUsage(db: Db, companyId: string, items: { account_id: string; rule: number; quantities: Record<string, Units> | null }[]): Promise<void> {
  if (!items.length) return;
  await query(
    db,
    sql`insert into usage_counters (account_id, plan_id, period_start, rule, component, used)
      select a.id, a.plan_id, a.last_plan_renewal, v.rule::integer, c.n - 1, sum(coalesce((v.quantities::jsonb->>(c.c->>'quantity'))::numeric, 0))
      from unnest(${textArray(items.map((i) => i.account_id))}, ${textArray(items.map((i) => String(i.rule)))}, ${textArray(items.map((i) => (i.quantities ? JSON.stringify(i.quantities) : null)))})
        as v(account_id, rule, quantities)
      join accounts a on a.id = v.account_id and a.company_id = ${companyId}
      join plans pl on pl.id = a.plan_id
      cross join lateral jsonb_array_elements(pl.billing_rules->(v.rule::integer)->'components') with ordinality as c(c, n)
      where c.c->>'tiers_mode' = 'graduated' and a.last_plan_renewal is not null
      group by 1, 2, 3, 4, 5
      on conflict (account_id, plan_id, period_start, rule, component) do update set used = usage_counters.used + excluded.used`,
  );
}

/**
 * What rule `rule` of the account's running plan charges for `quantities` now (a graduated
 * tier from the account's count so far): the actual a hold that rule priced settles at. Null
 * when the account runs no plan with that rule. The caller holds the balance's lock.
 */
export async function priceByRule(db: Db, companyId: string, accountId: string, rule: number, quantities: Record<string, Units>): Promise<{ amount: Units; denomination: string; pricing: StoredPricing } | null> {
  const [row] = await query<{ p: { amount: string; denomination: string; rule: number; components: StoredPricing['components'] } | string | null }>(
    db,
    sql`select case when pl.billing_rules->${rule}::integer is not null then rate_card_price(pl.billing_rules, ${rule}::integer, ${JSON.stringify(quantities)}::jsonb,
        (select jsonb_object_agg(u.rule || '.' || u.component, trim_scale(u.used)::text) from usage_counters u
          where u.account_id = a.id and u.plan_id = a.plan_id and u.period_start = a.last_plan_renewal and u.rule = ${rule}::integer)) end as p
      from accounts a join plans pl on pl.id = ${pricingPlanId(sql`a`)}
      where a.id = ${accountId} and a.company_id = ${companyId}`,
  );
  const p = row ? json(row.p) : null;
  return p ? { amount: p.amount, denomination: p.denomination, pricing: { rule: p.rule, components: p.components } } : null;
}
