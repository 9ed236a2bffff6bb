import { and, count, eq, gt, inArray, isNull, lt, lte, notInArray, or, sql } from 'drizzle-orm';
import type { Db } from '../db/client';
import { admins, companies, signInAttempts } from '../db/schema';
import { hashPassword, needsRehash, verifyPassword } from '../crypto';
import { now } from '../clock';

/** Failed attempts allowed per scope within the window; the next ones are refused for LOCK_MS. */
export const SIGN_IN_LIMITS = { email: 10, address: 50 } as const;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;
export const SIGN_IN_LOCK_MS = 15 * 60_000;

type Scope = keyof typeof SIGN_IN_LIMITS;

export type SignedInAdmin = { id: string; email: string; companyId: string; companyName: string; role: string; sessionVersion: number };
export type SignInResult = { status: 'ok'; admin: SignedInAdmin } | { status: 'failed' } | { status: 'locked' };

/** The lower-cased email, as the admins' unique index compares them. */
const lockEnd = (at: Date) => new Date(at.getTime() + SIGN_IN_LOCK_MS);

function emailKey(email: string): string {
  return email.trim().toLowerCase().slice(0, 320);
}

function scopesOf(email: string, address: string | null): { scope: Scope; key: string }[] {
  return [{ scope: 'email' as const, key: emailKey(email) }, ...(address ? [{ scope: 'address' as const, key: address }] : [])];
}

function matchAny(scopes: { scope: Scope; key: string }[]) {
  return or(...scopes.map((s) => and(eq(signInAttempts.scope, s.scope), eq(signInAttempts.key, s.key))));
}

async function countRecent(db: Db, scopes: { scope: Scope; key: string }[], since: Date): Promise<Record<Scope, number>> {
  const rows = await db
    .select({ scope: signInAttempts.scope, n: count() })
    .from(signInAttempts)
    .where(and(matchAny(scopes), gt(signInAttempts.at, since)))
    .groupBy(signInAttempts.scope);
  const counts = { email: 0, address: 0 };
  for (const r of rows) counts[r.scope as Scope] = Number(r.n);
  return counts;
}

/**
 * One console sign-in. Refused while the email or the client address is locked out, or when
 * more attempts than the limit are under way or have failed within the window (which locks
 * it); otherwise the password is checked (against a dummy hash for an unknown email, so that costs the same). A
 * failure that reaches a limit locks its scope for SIGN_IN_LOCK_MS. A success forgets the
 * email's failures and (unless `rehash` is false) upgrades a hash made with older parameters.
 */
export async function attemptSignIn({ db, email, password, address, rehash = true }: { db: Db; email: string; password: string; address: string | null; rehash?: boolean }): Promise<SignInResult> {
  const at = now();
  const since = new Date(at.getTime() - SIGN_IN_WINDOW_MS);
  const scopes = scopesOf(email, address);
  const [lock] = await db
    .select({ id: signInAttempts.id })
    .from(signInAttempts)
    .where(and(matchAny(scopes), gt(signInAttempts.lockedUntil, at)))
    .limit(1);
  if (lock) return { status: 'locked' };

  const mine = await db
    .insert(signInAttempts)
    .values(scopes.map((s) => ({ ...s, at })))
    .returning({ id: signInAttempts.id, scope: signInAttempts.scope });
  const ids = mine.map((r) => r.id);
  const before = await countRecent(db, scopes, since);
  const over = mine.filter((r) => before[r.scope as Scope] > SIGN_IN_LIMITS[r.scope as Scope]).map((r) => r.id);
  if (over.length) {
    // More attempts at once than the limit allows: this one is not checked, and locks its scope.
    await db.update(signInAttempts).set({ lockedUntil: lockEnd(at) }).where(inArray(signInAttempts.id, over));
    await db.delete(signInAttempts).where(and(inArray(signInAttempts.id, ids), notInArray(signInAttempts.id, over)));
    return { status: 'locked' };
  }

  const [row] = await db
    .select({ admin: admins, companyName: companies.name })
    .from(admins)
    .innerJoin(companies, eq(companies.id, admins.companyId))
    .where(eq(sql`lower(${admins.email})`, emailKey(email)));
  const stored = row?.admin.passwordHash ?? null;
  const ok = await verifyPassword(password, stored);

  if (ok && row) {
    await db
      .delete(signInAttempts)
      .where(or(inArray(signInAttempts.id, ids), and(eq(signInAttempts.scope, 'email'), eq(signInAttempts.key, emailKey(email)), isNull(signInAttempts.lockedUntil))));
    if (rehash && needsRehash(row.admin.passwordHash)) {
      // Only if the hash is still the one just checked: a password change in between wins.
      await db
        .update(admins)
        .set({ passwordHash: await hashPassword(password) })
        .where(and(eq(admins.id, row.admin.id), eq(admins.passwordHash, row.admin.passwordHash)));
    }
    const a = row.admin;
    return { status: 'ok', admin: { id: a.id, email: a.email, companyId: a.companyId, companyName: row.companyName, role: a.role, sessionVersion: a.sessionVersion } };
  }

  const after = await countRecent(db, scopes, since);
  const reached = mine.filter((r) => after[r.scope as Scope] >= SIGN_IN_LIMITS[r.scope as Scope]).map((r) => r.id);
  if (reached.length) {
    await db
      .update(signInAttempts)
      .set({ lockedUntil: lockEnd(at) })
      .where(inArray(signInAttempts.id, reached));
  }
  // Attempts that no longer count and hold no lock.
  await db.delete(signInAttempts).where(and(lt(signInAttempts.at, since), or(isNull(signInAttempts.lockedUntil), lte(signInAttempts.lockedUntil, at))));
  return { status: 'failed' };
}
