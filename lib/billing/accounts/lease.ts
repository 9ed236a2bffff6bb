import { and, eq, isNull, lt, or } from 'drizzle-orm';
import type { Db } from '../../db/client';
import { accounts } from '../../db/schema';
import { ApiError } from '../../errors';
import type { Account } from '../../db/schema';

const LEASE_MS = 10 * 60_000;

/**
 * The account's plan lease (the column renewals claim): a plan start, an upgrade and a renewal of
 * one account never run side by side, so two of them cannot both charge. Held across the
 * processor call, which a row lock must never be; it ends by itself after ten minutes if the
 * process dies. `run` gets the account as read after the lease was taken: what was read before
 * may already be stale.
 */
export async function withAccountLease<T>(
  db: Db,
  accountId: string,
  at: Date,
  run: (fresh: Account) => Promise<T>,
  busy: { message: string; param: string | null } = { message: 'A renewal or another plan change of this account is in progress; try again in a moment.', param: 'plan_id' },
): Promise<T> {
  const lease = new Date(at.getTime() + LEASE_MS);
  const taken = await db
    .update(accounts)
    .set({ renewalLockedUntil: lease })
    .where(and(eq(accounts.id, accountId), or(isNull(accounts.renewalLockedUntil), lt(accounts.renewalLockedUntil, at))))
    .returning();
  // Retry-After: the answer is not kept under the request's Idempotency-Key, so a retry runs again.
  if (!taken.length) throw new ApiError('conflict', busy.message, busy.param, {}, { 'Retry-After': '1' });
  try {
    return await run(taken[0]);
  } finally {
    // Given back only while it is still this run's: a lease that ran out may have been taken by
    // another run, which holds it until it is done.
    await db.update(accounts).set({ renewalLockedUntil: null }).where(and(eq(accounts.id, accountId), eq(accounts.renewalLockedUntil, lease)));
  }
}
