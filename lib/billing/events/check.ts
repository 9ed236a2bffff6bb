import { compile, runCompiled, sql, type Compiled, type Db } from '../../db/client';
import { notFound } from '../../errors';
import { add, cmp, sub, unitsOut, type Units } from '../../money';
import type { SpendStateRow } from '../../db/sql/spend';
import { spendFactOf, spendFacts, spendKey, type SpendLimitFact } from '../balances/spend-limits';
import { findBalance, settleGrants, type Balance } from '../balances/balances';
import { eventPrice, pricingPlanId, priceEvents, priceGraduated, type Cost } from './pricing';
import type { EventInput } from './input';

export type CheckResult = { allowed: boolean; cost: Cost; available: Units | null; reason: 'insufficient_balance' | 'spend_limit' | null };

class Rollback extends Error {
  constructor(readonly balance: Balance | null) {
    super('check rolled back');
  }
}

const v = (name: string) => sql.placeholder(name);

/** What the one-statement check reads: the price, the balance it would move, and that balance's spend limits. */
type CheckRow = {
  amount: string | null;
  denomination: string | null;
  graduated: boolean;
  balance_amount: string | null;
  pending: string | null;
  grants_due_at: string | Date | null;
  limits: SpendStateRow[] | string | null;
};

/** How often a check was answered by the one statement, and how often in steps (observable by tests). */
export const checkPaths = { oneStatement: 0, inSteps: 0 };

/** The statement below as SQL text: built on first use, then prepared once per connection. */
let checkStatement: Compiled | undefined;

/**
 * The check's reads in one statement, as the steps of `checkEventInSteps` make them: the price
 * (the same fragment that prices a recorded event), the balance of its denomination with its live
 * holds, and, for a cost above zero, the balance's spend limits with their periods' spend. No
 * row: the account is not the company's.
 */
function statement() {
  return sql`select pr.amount::text as amount, pr.denomination, pr.graduated,
      b.amount::text as balance_amount, b.grants_due_at,
      case when b.id is not null then coalesce((select sum(e.cost_amount) from events e
        where e.account_id = b.account_id and e.cost_denomination = b.denomination
          and e.state = 'pending' and e.expires_at > ${v('at')}::timestamptz), 0)::text end as pending,
      case when pr.amount > 0 and exists (select 1 from spend_limits l where l.account_id = a.id and l.denomination = pr.denomination) then (
        select jsonb_agg(jsonb_build_object('account_id', a.id, 'denomination', pr.denomination, 'period', s.period, 'action', s.action,
          'limit_amount', s.limit_amount::text, 'period_start', s.period_start, 'spent', s.spent::text))
        from spend_state(a.id, pr.denomination, ${v('at')}::timestamptz) s) end as limits
    from accounts a
    cross join lateral ${eventPrice({
      planId: pricingPlanId(sql`a`),
      type: sql`${v('type')}::text`,
      overrideAmount: sql`${v('ovrAmount')}::numeric`,
      overrideDenomination: sql`${v('ovrDenomination')}::text`,
      quantities: sql`${v('quantities')}::jsonb`,
      properties: sql`${v('properties')}::jsonb`,
    })} pr
    left join balances b on b.account_id = a.id and b.denomination = pr.denomination
    where a.id = ${v('accountId')} and a.company_id = ${v('companyId')}`;
}

/**
 * Would this event pass if it were recorded now? Priced as recording prices it (override, then
 * the plan's rate card; a graduated tier from the account's count as it stands) and gated on
 * `available` as recording gates it: gated unless the body says `gate_on_balance: false`; a
 * `reject` spend limit it would pass refuses it first, gated or not. Records nothing.
 *
 * One statement reads all it needs. A graduated price (it hangs on the account's counts) and a
 * balance with a grant due (expiring or taking effect) are answered by `checkEventInSteps`,
 * which reads them as recording would.
 */
export async function checkEvent({ db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date }): Promise<CheckResult> {
  const quantities = input.quantities ?? null;
  const properties = input.properties ?? null;
  const [row] = await runCompiled<CheckRow>(db, (checkStatement ??= compile(statement())), {
    accountId,
    companyId,
    type: input.type,
    ovrAmount: input.cost_override?.amount ?? null,
    ovrDenomination: input.cost_override?.denomination ?? null,
    quantities: quantities && JSON.stringify(quantities),
    properties: properties && JSON.stringify(properties),
    at: now.toISOString(),
  });
  if (!row) throw notFound('account', 'account_id');
  const dueAt = row.grants_due_at === null ? null : new Date(row.grants_due_at);
  if (row.graduated || (dueAt && dueAt.getTime() <= now.getTime())) {
    checkPaths.inSteps++;
    return checkEventInSteps({ db, companyId, accountId, input, now });
  }
  checkPaths.oneStatement++;
  if (row.amount === null || row.denomination === null) return { allowed: true, cost: null, available: null, reason: null };
  const cost = { amount: row.amount, denomination: row.denomination };
  const pending = row.pending ?? '0';
  const available = row.balance_amount !== null ? sub(row.balance_amount, pending) : '0';
  const stored = typeof row.limits === 'string' ? (JSON.parse(row.limits) as SpendStateRow[]) : row.limits;
  return decide(cost, available, (stored ?? []).map((r) => spendFactOf(r, pending)), input);
}

/** The answer from the price, what is available and the balance's spend limits: a reject limit first, then the gate. */
function decide(cost: NonNullable<Cost>, available: Units, limits: SpendLimitFact[], input: EventInput): CheckResult {
  // A reject limit refuses first, gated or not, as the balance move decides (move-decision.ts).
  if (cmp(cost.amount, '0') > 0 && limits.some((l) => l.action === 'reject' && cmp(add(l.spent, cost.amount), l.limit) > 0)) return { allowed: false, cost, available, reason: 'spend_limit' };
  const refused = (input.gate_on_balance ?? true) && cmp(cost.amount, available) > 0;
  return { allowed: !refused, cost, available, reason: refused ? 'insufficient_balance' : null };
}

/**
 * The check in steps: the price, then (for a graduated price) the price from the account's
 * counts, then the balance, then its spend limits. A balance with a grant due is read as that
 * grant's time leaves it, inside a transaction that is rolled back.
 */
export async function checkEventInSteps({ db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date }): Promise<CheckResult> {
  const item = { ...input, account_id: accountId };
  const [p] = await priceEvents(db, companyId, [item]);
  if (!p.found) throw notFound('account', 'account_id');
  let cost = p.cost;
  if (cost && p.graduated) cost = (await priceGraduated(db, companyId, [{ ...item, counts: true }]))[0].cost;
  if (!cost) return { allowed: true, cost: null, available: null, reason: null };
  let balance = await findBalance({ db, accountId, denomination: cost.denomination, now });
  if (balance?.grantsDueAt && balance.grantsDueAt.getTime() <= now.getTime()) {
    const denomination = cost.denomination;
    balance = await db
      .transaction(async (tx) => {
        await settleGrants(tx, companyId, [{ accountId, denomination }], now);
        throw new Rollback(await findBalance({ db: tx, accountId, denomination, now }));
      })
      .catch((err) => {
        if (err instanceof Rollback) return err.balance;
        throw err;
      });
  }
  const available = balance ? sub(balance.amount, balance.pending) : '0';
  const limits = cmp(cost.amount, '0') > 0 ? ((await spendFacts(db, [{ accountId, denomination: cost.denomination, pending: balance?.pending ?? '0' }], now)).get(spendKey(accountId, cost.denomination)) ?? []) : [];
  return decide(cost, available, limits, input);
}

export function serializeCheck(r: CheckResult) {
  return {
    allowed: r.allowed,
    cost: r.cost ? { amount: unitsOut(r.cost.amount), denomination: r.cost.denomination } : null,
    available: r.available === null ? null : unitsOut(r.available),
    reason: r.reason,
  };
}
