import type { Db } from '../../db/client';
import { now } from '../../clock';
import type { Account } from '../../db/schema';
import { ApiError } from '../../errors';
import type { Company } from '../companies/companies';
import { chargeFor } from '../settlement';
import type { Withdrawal } from '../charges/charges';
import { startPlanPeriod, type Measured } from '../effects/plan-period';
import type { Plan } from '../catalog/plans';

/** The 502 for a plan charge whose outcome is not known yet: the account keeps it pending. */
export function pendingPlanError(account: Pick<Account, 'id'>, chargeId: string, reason: 'start' | 'upgrade'): ApiError {
  return new ApiError(
    'processor_error',
    `The payment processor did not confirm charge ${chargeId} in time. Account ${account.id} keeps it pending and its outcome is settled automatically: the plan ${reason === 'start' ? 'starts' : 'changes'} only if it was paid, and a retry with the same Idempotency-Key never charges twice.`,
    null,
    { account_id: account.id, charge_id: chargeId, charge_pending: true },
  );
}

/** Starts a plan: free plans at once, chargeable ones when their charge succeeded. */
export async function activatePlan({
  db,
  company,
  account,
  plan,
  chosen,
  charge,
  reason,
  credit = 0,
  overage = { cents: 0, lines: [] },
  measured,
  idempotencyKey = null,
  withdraw,
}: {
  db: Db;
  company: Company;
  account: Account;
  plan: Plan;
  chosen: Record<string, string> | null;
  charge: number;
  reason: 'start' | 'upgrade';
  /** Cents of unused time of the old plan already taken off `charge` (upgrades). */
  credit?: number;
  /** Postpaid overage of the old plan already included in `charge` (upgrades). */
  overage?: { cents: number; lines: string[] };
  /** The old plan's balances the charge was priced on (upgrades): the new period starts from them. */
  measured?: Measured;
  /** The API request's Idempotency-Key: its retry finds this charge. */
  idempotencyKey?: string | null;
  /** What the caller takes back if the charge fails in this call (see Withdrawal). */
  withdraw?: Withdrawal;
}) {
  const at = now();
  if (charge <= 0) {
    await db.transaction((tx) => startPlanPeriod(tx, { accountId: account.id, companyId: company.id, plan, chosen, reason, measured, now: at }));
    return;
  }
  const outcome = await chargeFor({
    db,
    company,
    account,
    amount: charge,
    reason: reason === 'start' ? 'plan_start' : 'plan_change',
    description:
      reason === 'start'
        ? `Plan ${plan.name}: first period`
        : [`Plan change to ${plan.name}: ${charge - overage.cents + credit} cents less ${credit} cents credit for unused time`, ...overage.lines].join('; '),
    effects: [{ kind: 'activate_plan', plan_id: plan.id, chosen, reason, ...(measured && { measured }) }],
    now: at,
    idempotencyKey,
    withdraw,
    computed: true,
  });
  if (!outcome.ok && outcome.charge.status === 'pending') throw pendingPlanError(account, outcome.charge.id, reason);
  if (!outcome.ok) throw outcome.error!;
}
