import { eq } from 'drizzle-orm';
import { query, sql, type Db } from '../../db/client';
import { balances } from '../../db/schema';
import { cmp } from '../../money';
import { moveBalance, moveBalanceInSteps } from '../balances/balances';
import { thresholdRefillKeys } from '../balances/crossings';
import type { Charge } from '../charges/charges';
import { enqueueNotifications } from '../webhooks/outbox';

/** What a refill charge pays for: units on the balance, and with `config` the new refill settings. */
export type RefillEffect = {
  kind: 'refill';
  balance_id: string;
  amount: string;
  description: string;
  periodic: boolean;
  config?: Record<string, unknown>;
  /** A mid-month change's credit in cents, shown again to a retried request. */
  credit?: number;
};

/** A refill was paid. */
export async function applyRefill(db: Db, charge: Charge, effect: RefillEffect, now: Date): Promise<void> {
  await completeRefill(db, { charge, balanceId: effect.balance_id, amount: effect.amount, description: effect.description, periodic: effect.periodic, config: effect.config, now });
  await wakeWaitingThresholdRefills(db, effect.balance_id, now);
}

/**
 * A threshold refill that waits for this balance's refill charge to be settled (runThresholdRefill
 * defers itself meanwhile) runs as soon as it is: in the settling transaction, its job is due now.
 */
async function wakeWaitingThresholdRefills(db: Db, balanceId: string, now: Date): Promise<void> {
  await query(
    db,
    sql`update jobs set run_at = ${now.toISOString()}::timestamptz
      where kind = 'threshold_refill' and dedupe_key in (${sql.join(thresholdRefillKeys(balanceId).map((k) => sql`${k}`), sql`, `)})
        and status = 'queued' and run_at > ${now.toISOString()}::timestamptz`,
  );
}

/** A refill charge failed, whenever that becomes known (at once, or when a pending charge is reconciled): refill_failed. */
export async function applyRefillFailure(db: Db, charge: Charge, effect: RefillEffect, now: Date): Promise<void> {
  await wakeWaitingThresholdRefills(db, effect.balance_id, now);
  const [b] = await db.select({ denomination: balances.denomination, amount: balances.amount }).from(balances).where(eq(balances.id, effect.balance_id));
  if (b) {
    await enqueueNotifications(db, charge.companyId, [{ accountId: charge.accountId, denomination: b.denomination, topic: 'refill_failed', balance: b.amount, detail: { charge_id: charge.id, amount: effect.amount, usd_charge: charge.amount, failure_code: charge.failureCode } }], now);
  }
}

/** A refill's effect: grant the units (one ledger row), apply any new settings, notify. */
export async function completeRefill(
  db: Db,
  args: { charge: Charge | null; balanceId: string; amount: string; description: string; periodic: boolean; now: Date; config?: Record<string, unknown> },
): Promise<void> {
  const [b] = await db.select().from(balances).where(eq(balances.id, args.balanceId));
  let cancel: string | undefined;
  if (args.config) {
    // Settings travel through the charge record as JSON: dates come back as strings.
    const { cancel_remaining, ...cols } = args.config as Record<string, unknown> & { cancel_remaining?: string };
    cancel = cancel_remaining;
    for (const k of ['nextPeriodicRefill', 'lastPeriodicRefill']) if (typeof cols[k] === 'string') cols[k] = new Date(cols[k] as string);
    await db.update(balances).set({ ...(cols as object), updatedAt: args.now }).where(eq(balances.id, b.id));
  }
  const on = { accountId: b.accountId, companyId: b.companyId, denomination: b.denomination, chargeId: args.charge?.id ?? null };
  const grant = { ...on, amount: args.amount, type: args.periodic ? ('refill' as const) : ('refill_threshold' as const), description: args.description };
  // A mid-month change cancels the remaining units and grants the new ones as one move.
  const row =
    cancel && cmp(cancel, '0') > 0
      ? (await moveBalanceInSteps(db, [{ ...on, amount: `-${cancel}`, type: 'refill_cancelled', description: `${cancel} remaining ${b.denomination} cancelled by a mid-month change` }, grant], args.now))[1]
      : await moveBalance(db, grant, args.now);
  if (args.periodic) await db.update(balances).set({ lastPeriodicRefill: args.now }).where(eq(balances.id, b.id));
  await enqueueNotifications(db, b.companyId, [{ accountId: b.accountId, denomination: b.denomination, topic: 'auto_refill', balance: row.endingBalance, detail: { amount: args.amount, usd_charge: args.charge?.amount ?? 0, charge_id: args.charge?.id ?? null } }], args.now);
}
