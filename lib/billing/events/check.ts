import type { Db } from '../../db/client';
import { notFound } from '../../errors';
import { add, cmp, sub, unitsOut, type Units } from '../../money';
import { spendFacts, spendKey } from '../balances/spend-limits';
import { findBalance, settleGrants, type Balance } from '../balances/balances';
import { priceEvents, priceGraduated, type Cost } from './pricing';
import type { EventInput } from './input';

export type CheckResult = { allowed: boolean; cost: Cost; available: Units | null; reason: 'insufficient_balance' | 'spend_limit' | null };

class Rollback extends Error {
  constructor(readonly balance: Balance | null) {
    super('check rolled back');
  }
}

/**
 * Would this event pass if it were recorded now? Priced as recording prices it (override, then
 * the plan's rate card; a graduated tier from the account's count as it stands) and gated on
 * `available` as recording gates it: gated unless the body says `gate_on_balance: false`; a
 * `reject` spend limit it would pass refuses it first, gated or not.
 * Records nothing: a balance with a grant due (expiring or taking effect) is read as that
 * grant's time leaves it, inside a transaction that is rolled back.
 */
export async function checkEvent({ db, companyId, accountId, input, now }: { db: Db; companyId: string; accountId: string; input: EventInput; now: Date }): Promise<CheckResult> {
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
  // A reject limit refuses first, gated or not, as the balance move decides (move-decision.ts).
  if (cmp(cost.amount, '0') > 0) {
    const limits = (await spendFacts(db, [{ accountId, denomination: cost.denomination, pending: balance?.pending ?? '0' }], now)).get(spendKey(accountId, cost.denomination)) ?? [];
    if (limits.some((l) => l.action === 'reject' && cmp(add(l.spent, cost.amount), l.limit) > 0)) return { allowed: false, cost, available, reason: 'spend_limit' };
  }
  const refused = (input.gate_on_balance ?? true) && cmp(cost.amount, available) > 0;
  return { allowed: !refused, cost, available, reason: refused ? 'insufficient_balance' : null };
}

export function serializeCheck(r: CheckResult) {
  return {
    allowed: r.allowed,
    cost: r.cost ? { amount: unitsOut(r.cost.amount), denomination: r.cost.denomination } : null,
    available: r.available === null ? null : unitsOut(r.available),
    reason: r.reason,
  };
}
