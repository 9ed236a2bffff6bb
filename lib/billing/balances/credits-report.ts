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
