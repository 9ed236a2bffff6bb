import { query, sql, type Db } from '../../db/client';
import { Decimal, unitsOut } from '../../money';

/** Ledger types that make a grant, that draw from one, and that take what is left of one. */
const GRANTED = ['deposit', 'refill', 'refill_threshold', 'plan_grant', 'grant'];
const SPENT = ['event', 'refill_cancelled'];

type Split = { paid: ReturnType<typeof unitsOut>; promotional: ReturnType<typeof unitsOut> };

/**
 * The company's credit in [from, to), per denomination: units granted, spent (drawn from grants)
 * and expired and voided, each split paid / promotional, and `expired_paid_cents`: what the
 * paid units that expired had cost (units × cost basis, rounded half up): revenue of credit that
 * will never be used. Draws past every grant (below zero) are no grant's and are not counted.
 */
export async function creditsReport(db: Db, companyId: string, from: Date, to: Date) {
  const rows = await query<{ denomination: string; category: string; kind: string; units: string; cents: string | null }>(
    db,
    sql`select t.denomination, g.category,
        case when t.type in (${sql.join(GRANTED.map((x) => sql`${x}`), sql`, `)}) then 'granted'
             when t.type in (${sql.join(SPENT.map((x) => sql`${x}`), sql`, `)}) then 'spent' else t.type end as kind,
        sum(abs(t.amount))::text as units,
        sum(case when t.type = 'expire' and g.category = 'paid' then -t.amount * coalesce(g.cost_basis, 0) end)::text as cents
      from transactions t join credit_grants g on g.id = t.grant_id
      where t.company_id = ${companyId} and t.created_at >= ${from.toISOString()}::timestamptz and t.created_at < ${to.toISOString()}::timestamptz
        and t.type in (${sql.join([...GRANTED, ...SPENT, 'expire', 'void'].map((x) => sql`${x}`), sql`, `)})
      group by 1, 2, 3 order by 1`,
  );
  const byDenomination = new Map<string, { granted: Record<string, Decimal>; spent: Record<string, Decimal>; expired: Record<string, Decimal>; voided: Record<string, Decimal>; cents: Decimal }>();
  const zero = () => ({ paid: new Decimal(0), promotional: new Decimal(0) });
  for (const r of rows) {
    let d = byDenomination.get(r.denomination);
    if (!d) byDenomination.set(r.denomination, (d = { granted: zero(), spent: zero(), expired: zero(), voided: zero(), cents: new Decimal(0) }));
    const bucket = r.kind === 'granted' ? d.granted : r.kind === 'spent' ? d.spent : r.kind === 'expire' ? d.expired : d.voided;
    bucket[r.category] = bucket[r.category].plus(r.units);
    if (r.cents) d.cents = d.cents.plus(r.cents);
  }
  const out = (s: Record<string, Decimal>): Split => ({ paid: unitsOut(s.paid.toFixed()), promotional: unitsOut(s.promotional.toFixed()) });
  return {
    from: from.toISOString(),
    to: to.toISOString(),
    denominations: [...byDenomination.entries()].map(([denomination, d]) => ({
      denomination,
      granted: out(d.granted),
      spent: out(d.spent),
      expired: out(d.expired),
      voided: out(d.voided),
      expired_paid_cents: d.cents.toDecimalPlaces(0, Decimal.ROUND_HALF_UP).toNumber(),
    })),
  };
}

/** Units granted, spent and expired on one UTC day in one denomination (exact decimal strings). */
export type CreditDay = { day: string; granted: string; spent: string; expired: string };

/**
 * The same figures per UTC day, for the `days` days up to and including `now`'s, per
 * denomination; every day is present (zeros when nothing happened).
 */
export async function dailyCredits(db: Db, companyId: string, now: Date, days = 30): Promise<Map<string, CreditDay[]>> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const first = today - (days - 1) * 86_400_000;
  const rows = await query<{ denomination: string; day: string; kind: string; units: string }>(
    db,
    sql`select t.denomination, to_char(date_trunc('day', t.created_at at time zone 'UTC'), 'YYYY-MM-DD') as day,
        case when t.type in (${sql.join(GRANTED.map((x) => sql`${x}`), sql`, `)}) then 'granted'
             when t.type in (${sql.join(SPENT.map((x) => sql`${x}`), sql`, `)}) then 'spent' else 'expired' end as kind,
        sum(abs(t.amount))::text as units
      from transactions t
      where t.company_id = ${companyId} and t.grant_id is not null
        and t.created_at >= ${new Date(first).toISOString()}::timestamptz and t.created_at < ${new Date(today + 86_400_000).toISOString()}::timestamptz
        and t.type in (${sql.join([...GRANTED, ...SPENT, 'expire'].map((x) => sql`${x}`), sql`, `)})
      group by 1, 2, 3`,
  );
  const out = new Map<string, CreditDay[]>();
  for (const r of rows) {
    let list = out.get(r.denomination);
    if (!list) {
      list = Array.from({ length: days }, (_, i) => ({ day: new Date(first + i * 86_400_000).toISOString().slice(0, 10), granted: '0', spent: '0', expired: '0' }));
      out.set(r.denomination, list);
    }
    const d = list.find((x) => x.day === r.day);
    if (d) d[r.kind as 'granted' | 'spent' | 'expired'] = new Decimal(d[r.kind as 'granted' | 'spent' | 'expired']).plus(r.units).toFixed();
  }
  return new Map([...out.entries()].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)));
}
