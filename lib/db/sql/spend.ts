import { query, sql, textArray, type Db } from '../client';

// Spend counters: what completed events cost per account, denomination and period, kept only
// where a spend limit is set. Read and moved under the balance's row lock, by the statement
// (or the transaction) that debits the event.

/** A balance's spend limit with what completed events cost in its period so far. */
export type SpendStateRow = { account_id: string; denomination: string; period: 'day' | 'week' | 'month'; action: 'reject' | 'notify'; limit_amount: string; period_start: string | Date; spent: string };

/**
 * The spend limits of (account, denomination) pairs, each with its period's completed spend
 * (`spend_state`, volatile: read with a fresh snapshot, so counters moved by a transaction the
 * caller's lock waited for count).
 */
export async function readSpendStates(db: Db, pairs: (readonly [string, string])[], now: Date): Promise<SpendStateRow[]> {
  if (!pairs.length) return [];
  return query<SpendStateRow>(
    db,
    sql`select v.account_id, v.denomination, s.period, s.action, s.limit_amount::text as limit_amount, s.period_start, s.spent::text as spent
      from unnest(${textArray(pairs.map(([a]) => a))}, ${textArray(pairs.map(([, d]) => d))}) as v(account_id, denomination)
      cross join lateral spend_state(v.account_id, v.denomination, ${now.toISOString()}::timestamptz) s
      order by v.account_id, v.denomination, s.period, s.action`,
  );
}

/** Completed costs added to the counters of the periods (holding `now`) their balances have limits in; none: nothing. */
export async function addSpend(db: Db, costs: { accountId: string; denomination: string; amount: string }[], now: Date): Promise<void> {
  if (!costs.length) return;
  await query(
    db,
    sql`insert into spend_counters (account_id, denomination, period, period_start, spent)
      select v.account_id, v.denomination, p.period, spend_period_start(p.period, ${now.toISOString()}::timestamptz), sum(v.amount::numeric)
      from unnest(${textArray(costs.map((c) => c.accountId))}, ${textArray(costs.map((c) => c.denomination))}, ${textArray(costs.map((c) => c.amount))}) as v(account_id, denomination, amount)
      join (select distinct account_id, denomination, period from spend_limits) p on p.account_id = v.account_id and p.denomination = v.denomination
      group by 1, 2, 3, 4
      order by 1, 2, 3, 4
      on conflict (account_id, denomination, period, period_start) do update set spent = spend_counters.spent + excluded.spent`,
  );
}

/**
 * The counters of an account's limited periods under way, counted again from its completed
 * events (a hold counts in the period it completed in). `sinceId`: an event id no counted event
 * is older than (the ids are time-ordered), so the count reads the account's recent events only.
 */
export async function recountSpend(db: Db, accountId: string, now: Date, sinceId: string | null): Promise<void> {
  const at = sql`${now.toISOString()}::timestamptz`;
  await query(db, sql`delete from spend_counters where account_id = ${accountId}`);
  await query(
    db,
    sql`insert into spend_counters (account_id, denomination, period, period_start, spent)
      select p.account_id, p.denomination, p.period, spend_period_start(p.period, ${at}),
        coalesce((select sum(e.cost_amount) from events e
          where e.account_id = p.account_id and e.cost_denomination = p.denomination and e.state = 'complete'
            and e.updated_at >= spend_period_start(p.period, ${at}) ${sinceId ? sql`and e.id >= ${sinceId}` : sql``}), 0)
      from (select distinct account_id, denomination, period from spend_limits where account_id = ${accountId}) p
      order by p.denomination, p.period`,
  );
}
