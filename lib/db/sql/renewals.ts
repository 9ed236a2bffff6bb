import { and, eq, inArray } from 'drizzle-orm';
import { query, sql, type Db } from '../client';
import { accounts } from '../schema';

// The renewal leases: an account's renewal runs under a lease on its row (renewal_locked_until),
// taken with SKIP LOCKED, so two workers (or a worker and a new card) never renew it twice.

/** Leases up to `limit` accounts whose renewal (or retry) is due at `at`, soonest first, until `lease`. */
export async function leaseDueRenewals(db: Db, at: Date, lease: Date, limit: number): Promise<string[]> {
  const t = at.toISOString();
  const rows = await query<{ id: string }>(
    db,
    // RETURNING follows no order of its own: the claimed rows are put in order after.
    sql`with claimed as (
        update accounts set renewal_locked_until = ${lease.toISOString()}::timestamptz
        where id in (
          select id from accounts
          where plan_status in ('ACTIVE', 'PAST_DUE') and next_plan_renewal is not null
            and coalesce(renewal_retry_at, next_plan_renewal) <= ${t}::timestamptz
            and (renewal_locked_until is null or renewal_locked_until < ${t}::timestamptz)
          order by coalesce(renewal_retry_at, next_plan_renewal) limit ${limit}
          for update skip locked)
        returning id, coalesce(renewal_retry_at, next_plan_renewal) as due)
      select id from claimed order by due, id`,
  );
  return rows.map((r) => r.id);
}

/** Leases one PAST_DUE account whose renewal is due at `at`, unless another holds it: whether it did. */
export async function leasePastDueRenewal(db: Db, accountId: string, at: Date, lease: Date): Promise<boolean> {
  const t = at.toISOString();
  const rows = await query<{ id: string }>(
    db,
    sql`update accounts set renewal_locked_until = ${lease.toISOString()}::timestamptz
      where id = ${accountId} and plan_status = 'PAST_DUE' and next_plan_renewal <= ${t}::timestamptz
        and (renewal_locked_until is null or renewal_locked_until < ${t}::timestamptz)
      returning id`,
  );
  return rows.length > 0;
}

/** Gives back the leases taken until `lease`: one that ran out and was taken by another run is left to it. */
export async function releaseRenewalLeases(db: Db, ids: string[], lease: Date): Promise<void> {
  if (!ids.length) return;
  await db.update(accounts).set({ renewalLockedUntil: null }).where(and(inArray(accounts.id, ids), eq(accounts.renewalLockedUntil, lease)));
}

/** When the next renewal (or retry) falls due after `after`. */
export async function nextRenewalDue(db: Db, after: Date): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(
    db,
    sql`select min(coalesce(renewal_retry_at, next_plan_renewal)) as at from accounts where plan_status in ('ACTIVE', 'PAST_DUE')
      and next_plan_renewal is not null and coalesce(renewal_retry_at, next_plan_renewal) > ${after.toISOString()}::timestamptz`,
  );
  return row?.at ? new Date(row.at) : null;
}
