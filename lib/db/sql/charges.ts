import { and, eq, gt, inArray, isNull, lte, not, or, sql } from 'drizzle-orm';
import type { Db } from '../client';
import { accounts, charges, companies } from '../schema';

// The statements of a charge's life. Each state change is one conditional UPDATE that only the
// first writer wins (`status = 'pending'`, or the `updated_at` a claim read), so an effect is
// applied once however many requests, workers and reconcilers race on the same charge.

type Charge = typeof charges.$inferSelect;

/** A new charge row; with a work key already taken, nothing (the caller reads the existing one). */
export async function insertCharge(db: Db, values: typeof charges.$inferInsert): Promise<Charge | null> {
  const [row] = await db.insert(charges).values(values).onConflictDoNothing().returning();
  return row ?? null;
}

export async function chargeById(db: Db, id: string): Promise<Charge> {
  const [row] = await db.select().from(charges).where(eq(charges.id, id));
  return row;
}

export async function chargeByWorkKey(db: Db, companyId: string, workKey: string): Promise<Charge | null> {
  const [row] = await db.select().from(charges).where(and(eq(charges.companyId, companyId), eq(charges.workKey, workKey)));
  return row ?? null;
}

/** A request's charge that its retry may carry on with: pending, or paid after `paidSince`. */
function reusable(paidSince: Date) {
  return or(eq(charges.status, 'pending'), and(eq(charges.status, 'succeeded'), gt(charges.createdAt, paidSince)))!;
}

export async function reusableChargeByWorkKey(db: Db, companyId: string, workKey: string, paidSince: Date): Promise<Charge | null> {
  const [row] = await db.select().from(charges).where(and(eq(charges.companyId, companyId), eq(charges.workKey, workKey), reusable(paidSince)));
  return row ?? null;
}

/**
 * The charge holding a work key gives it up unless a retry of its request may still reuse it:
 * pending or paid within the key's life (`paidSince`), whatever account it is for (another run of
 * the same request may have made it, for an account of its own), or pending for this account.
 */
export async function releaseWorkKey(db: Db, companyId: string, accountId: string, workKey: string, paidSince: Date): Promise<void> {
  const kept = or(and(inArray(charges.status, ['pending', 'succeeded']), gt(charges.createdAt, paidSince)), and(eq(charges.accountId, accountId), eq(charges.status, 'pending')))!;
  await db
    .update(charges)
    .set({ workKey: sql`${charges.workKey} || '#' || ${charges.id}` })
    .where(and(eq(charges.companyId, companyId), eq(charges.workKey, workKey), not(kept)));
}

/** Adds cents to what the account's next renewal charges (a computed amount below the smallest card payment). */
export async function carryCents(db: Db, accountId: string, cents: number): Promise<void> {
  await db.update(accounts).set({ carriedCents: sql`${accounts.carriedCents} + ${cents}` }).where(eq(accounts.id, accountId));
}

/** pending → succeeded; null when the charge was no longer pending (someone else settled it). */
export async function markPaid(db: Db, id: string, intentId: string, now: Date): Promise<Charge | null> {
  const [row] = await db
    .update(charges)
    .set({ status: 'succeeded', processorPaymentIntentId: intentId, updatedAt: now })
    .where(and(eq(charges.id, id), eq(charges.status, 'pending')))
    .returning();
  return row ?? null;
}

/**
 * pending → failed; null when the charge was no longer pending, or, with `sends`, when another
 * send was made since the one whose answer this is (that one may still be paid).
 */
export async function markFailed(db: Db, id: string, failure: { code: string; message: string; intentId: string | null; sends?: number }, now: Date): Promise<Charge | null> {
  const [row] = await db
    .update(charges)
    .set({ status: 'failed', failureCode: failure.code, failureMessage: failure.message, processorPaymentIntentId: failure.intentId, updatedAt: now })
    .where(and(eq(charges.id, id), eq(charges.status, 'pending'), failure.sends === undefined ? undefined : eq(charges.sendCount, failure.sends)))
    .returning();
  return row ?? null;
}

/**
 * Records, before it is made, a send of a pending charge's payment at real time `wall`: the first
 * send sets first_sent_at. `sends`: how many sends there were with this one. Null when the charge
 * is no longer pending.
 */
export async function markSent(db: Db, id: string, wall: Date): Promise<{ charge: Charge; sends: number } | null> {
  const [row] = await db
    .update(charges)
    .set({ firstSentAt: sql`coalesce(${charges.firstSentAt}, ${wall.toISOString()}::timestamptz)`, lastSentAt: wall, sendCount: sql`${charges.sendCount} + 1` })
    .where(and(eq(charges.id, id), eq(charges.status, 'pending')))
    .returning();
  return row ? { charge: row, sends: row.sendCount } : null;
}

/** Records the PaymentIntent of a charge still pending; null when it no longer is. */
export async function setIntent(db: Db, id: string, intentId: string): Promise<Charge | null> {
  const [row] = await db
    .update(charges)
    .set({ processorPaymentIntentId: intentId })
    .where(and(eq(charges.id, id), eq(charges.status, 'pending')))
    .returning();
  return row ?? null;
}

/** When a pending charge is looked at next: a minute after the last look, backing off to hourly. */
const lastLook = sql`coalesce(${charges.updatedAt}, ${charges.createdAt})`;
const nextLook = sql`(${lastLook} + least(interval '1 hour', greatest(interval '60 seconds', ${lastLook} - ${charges.createdAt})))`;

export async function nextChargeCheck(db: Db, after: Date): Promise<Date | null> {
  const [row] = await db
    .select({ at: sql<string | Date | null>`min(${nextLook})` })
    .from(charges)
    .where(and(eq(charges.status, 'pending'), gt(nextLook, sql`${after.toISOString()}::timestamptz`)));
  return row?.at ? new Date(row.at) : null;
}

/** Pending charges due for a look, oldest first. */
export async function dueChargeChecks(db: Db, now: Date, limit: number): Promise<{ id: string; updatedAt: Date | null }[]> {
  return db
    .select({ id: charges.id, updatedAt: charges.updatedAt })
    .from(charges)
    .where(and(eq(charges.status, 'pending'), lte(nextLook, sql`${now.toISOString()}::timestamptz`)))
    .orderBy(charges.createdAt)
    .limit(limit);
}

/**
 * Claims one due look: moving updated_at is both the claim (a second worker's update, made with
 * the updated_at it read, matches nothing) and the back-off.
 */
export async function claimChargeCheck(db: Db, due: { id: string; updatedAt: Date | null }, now: Date): Promise<Charge | null> {
  const [row] = await db
    .update(charges)
    .set({ updatedAt: now })
    .where(and(eq(charges.id, due.id), eq(charges.status, 'pending'), due.updatedAt ? eq(charges.updatedAt, due.updatedAt) : isNull(charges.updatedAt)))
    .returning();
  return row ?? null;
}

/** The company (with its processor key) and processor customer of a charge's account. */
export async function chargeContext(db: Db, charge: Pick<Charge, 'accountId'>) {
  const [row] = await db
    .select({ company: companies, customer: accounts.processorId })
    .from(accounts)
    .innerJoin(companies, eq(companies.id, accounts.companyId))
    .where(eq(accounts.id, charge.accountId));
  return row ?? null;
}
