import { eq } from 'drizzle-orm';
import { query, sql, type Db } from '../../db/client';
import { balances } from '../../db/schema';
import { cmp } from '../../money';
import { costBasisOf, DEFAULT_PRIORITY, moveBalances } from '../balances/balances';
import { newId } from '../../ids';
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
  let expiresAfterDays = b.refillExpiresAfterDays;
  if (args.config) {
    // Settings travel through the charge record as JSON: dates come back as strings.
    const { cancel_remaining, ...cols } = args.config as Record<string, unknown> & { cancel_remaining?: string };
    cancel = cancel_remaining;
    if (cols.refillExpiresAfterDays !== undefined) expiresAfterDays = (cols.refillExpiresAfterDays as number | null) ?? null;
    for (const k of ['nextPeriodicRefill', 'lastPeriodicRefill']) if (typeof cols[k] === 'string') cols[k] = new Date(cols[k] as string);
    await db.update(balances).set({ ...(cols as object), updatedAt: args.now }).where(eq(balances.id, b.id));
  }
  // The units as a grant: paid when a charge bought them, expiring `refill_expires_after_days`
  // after it is made (never without it), and a mid-month change's remaining units taken back
  // first, as one move.
  const expiresAt = expiresAfterDays ? new Date(args.now.getTime() + expiresAfterDays * 86_400_000) : null;
  const grant = {
    op: { kind: 'grant' as const, grant: { id: newId('cg'), amount: args.amount, priority: DEFAULT_PRIORITY, effectiveAt: args.now, expiresAt } },
    ledger: { type: args.periodic ? ('refill' as const) : ('refill_threshold' as const), description: args.description, chargeId: args.charge?.id ?? null },
    grant: { category: args.charge ? ('paid' as const) : ('promotional' as const), source: 'refill' as const, costBasis: args.charge ? costBasisOf(args.charge.amount, args.amount) : null },
  };
  const cancelled = cancel && cmp(cancel, '0') > 0 ? [{ op: { kind: 'draw' as const, amount: cancel }, ledger: { type: 'refill_cancelled' as const, description: `${cancel} remaining ${b.denomination} cancelled by a mid-month change`, chargeId: args.charge?.id ?? null } }] : [];
  const [moved] = await moveBalances(db, b.companyId, [{ accountId: b.accountId, denomination: b.denomination, ops: [...cancelled, grant] }], args.now);
  const row = moved.rows[moved.rows.length - 1];
  if (args.periodic) await db.update(balances).set({ lastPeriodicRefill: args.now }).where(eq(balances.id, b.id));
  await enqueueNotifications(db, b.companyId, [{ accountId: b.accountId, denomination: b.denomination, topic: 'auto_refill', balance: row.endingBalance, detail: { amount: args.amount, usd_charge: args.charge?.amount ?? 0, charge_id: args.charge?.id ?? null } }], args.now);
}
