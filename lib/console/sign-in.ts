import { and, count, eq, gt, inArray, isNull, lt, lte, min, notInArray, or, sql } from 'drizzle-orm';
import type { Db } from '../db/client';
import { admins, companies, signInAttempts } from '../db/schema';
import { hashingRetryAfterS, hashingSaturated, hashPassword, needsRehash, verifyPassword } from '../crypto';
import { now } from '../clock';
import { ApiError } from '../errors';
import { clientNetwork } from '../net/client-address';

/**
 * Failed attempts allowed per scope within the window; the failure that reaches a limit refuses
 * its scope for SIGN_IN_LOCK_MS. The lockout is keyed on the email together with the client
 * address, so nobody can lock an owner out from elsewhere with a few wrong passwords; the email
 * alone has a cap ten times looser, so guesses spread over many addresses stay slow.
 */
export const SIGN_IN_LIMITS = {
  /** One email from one client address. */
  email_address: 10,
  /** One email, from anywhere. */
  email: 100,
  /** One client address (IPv4, or an IPv6 /64), whichever the emails. */
  address: 50,
  /** One IPv6 /48: a site's 65,536 /64s, of which a subscriber often holds 256 or all. */
  network: 200,
} as const;
/**
 * Failed attempts across the whole service within the window. Past it, attempts are answered
 * "busy, try again" (503 with Retry-After) before any password is hashed, with no lock (it ends
 * as the window moves on): a flood from many networks can take this much hashing and no more.
 */
export const SIGN_IN_GLOBAL_LIMIT = 1000;
export const SIGN_IN_WINDOW_MS = 15 * 60_000;
export const SIGN_IN_LOCK_MS = 15 * 60_000;

type Scope = keyof typeof SIGN_IN_LIMITS | 'global';
type Keyed = { scope: Scope; key: string };

export type SignedInAdmin = { id: string; email: string; companyId: string; companyName: string; role: string; sessionVersion: number };
export type SignInResult = { status: 'ok'; admin: SignedInAdmin } | { status: 'failed' } | { status: 'locked' } | { status: 'busy'; retryAfterS: number };

const lockEnd = (at: Date) => new Date(at.getTime() + SIGN_IN_LOCK_MS);

/** The lower-cased email, as the admins' unique index compares them. */
function emailKey(email: string): string {
  return email.trim().toLowerCase().slice(0, 320);
}

function scopesOf(email: string, address: string | null): Keyed[] {
  const e = emailKey(email);
  const network = address && clientNetwork(address);
  return [
    { scope: 'email_address', key: `${e} ${address ?? '-'}` },
    { scope: 'email', key: e },
    ...(address ? [{ scope: 'address' as const, key: address }] : []),
    ...(network ? [{ scope: 'network' as const, key: network }] : []),
  ];
}

const GLOBAL: Keyed = { scope: 'global', key: '*' };

function matchAny(scopes: Keyed[]) {
  return or(...scopes.map((s) => and(eq(signInAttempts.scope, s.scope), eq(signInAttempts.key, s.key))));
}

async function countRecent(db: Db, scopes: Keyed[], since: Date): Promise<Record<Scope, number>> {
  const rows = await db
    .select({ scope: signInAttempts.scope, n: count() })
    .from(signInAttempts)
    .where(and(matchAny(scopes), gt(signInAttempts.at, since)))
    .groupBy(signInAttempts.scope);
  const counts: Record<Scope, number> = { email_address: 0, email: 0, address: 0, network: 0, global: 0 };
  for (const r of rows) counts[r.scope as Scope] = Number(r.n);
  return counts;
}

/** Busy while the service's failures in the window are at the global budget: seconds until the oldest leaves it. */
async function globalBudgetWait(db: Db, at: Date, since: Date): Promise<number | null> {
  const [row] = await db
    .select({ n: count(), oldest: min(signInAttempts.at) })
    .from(signInAttempts)
    .where(and(eq(signInAttempts.scope, 'global'), gt(signInAttempts.at, since)));
  if (Number(row?.n ?? 0) < SIGN_IN_GLOBAL_LIMIT) return null;
  const oldest = row?.oldest ? new Date(row.oldest).getTime() : at.getTime();
  return Math.max(1, Math.ceil((oldest + SIGN_IN_WINDOW_MS - at.getTime()) / 1000));
}

/**
 * One console sign-in. Refused while a scope of it (the email from this address, the email, the
 * address, its IPv6 /48) is locked out, or when more attempts than a limit are under way or have
 * failed within the window (which locks that scope). Answered "busy" (no lock, nothing counted)
 * while the service's failures are at the global budget or every password-hashing slot and its
 * queue are taken. Otherwise the password is checked (against a dummy hash for an unknown email,
 * so that costs the same). A failure that reaches a limit locks its scope for SIGN_IN_LOCK_MS. A
 * success forgets the email's failures (not the address's) and (unless `rehash` is false)
 * upgrades a hash made with older parameters.
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
  if (hashingSaturated()) return { status: 'busy', retryAfterS: hashingRetryAfterS() };
  const wait = await globalBudgetWait(db, at, since);
  if (wait !== null) return { status: 'busy', retryAfterS: wait };

  const counted = [...scopes, GLOBAL];
  const mine = await db
    .insert(signInAttempts)
    .values(counted.map((s) => ({ ...s, at })))
    .returning({ id: signInAttempts.id, scope: signInAttempts.scope });
  const ids = mine.map((r) => r.id);
  const forget = () => db.delete(signInAttempts).where(inArray(signInAttempts.id, ids));
  const before = await countRecent(db, counted, since);
  const over = mine.filter((r) => r.scope !== 'global' && before[r.scope as Scope] > SIGN_IN_LIMITS[r.scope as keyof typeof SIGN_IN_LIMITS]).map((r) => r.id);
  if (over.length) {
    // More attempts at once than the limit allows: this one is not checked, and locks its scope.
    await db.update(signInAttempts).set({ lockedUntil: lockEnd(at) }).where(inArray(signInAttempts.id, over));
    await db.delete(signInAttempts).where(and(inArray(signInAttempts.id, ids), notInArray(signInAttempts.id, over)));
    return { status: 'locked' };
  }
  if (before.global > SIGN_IN_GLOBAL_LIMIT) {
    // Parallel attempts took the last of the global budget.
    await forget();
    return { status: 'busy', retryAfterS: (await globalBudgetWait(db, at, since)) ?? 1 };
  }

  const [row] = await db
    .select({ admin: admins, companyName: companies.name })
    .from(admins)
    .innerJoin(companies, eq(companies.id, admins.companyId))
    .where(eq(sql`lower(${admins.email})`, emailKey(email)));
  const stored = row?.admin.passwordHash ?? null;
  let ok: boolean;
  try {
    ok = await verifyPassword(password, stored);
  } catch (err) {
    // The hashing queue filled up meanwhile: not an attempt, nothing counted.
    if (err instanceof ApiError && err.type === 'service_unavailable') {
      await forget();
      return { status: 'busy', retryAfterS: Number(err.headers['Retry-After']) || hashingRetryAfterS() };
    }
    throw err;
  }

  if (ok && row) {
    const unlocked = (s: Keyed) => and(eq(signInAttempts.scope, s.scope), eq(signInAttempts.key, s.key), isNull(signInAttempts.lockedUntil));
    await db.delete(signInAttempts).where(or(inArray(signInAttempts.id, ids), unlocked(scopes[0]), unlocked(scopes[1])));
    if (rehash && needsRehash(row.admin.passwordHash)) {
      // Only if the hash is still the one just checked: a password change in between wins.
      await db
        .update(admins)
        .set({ passwordHash: await hashPassword(password).catch(() => row.admin.passwordHash) })
        .where(and(eq(admins.id, row.admin.id), eq(admins.passwordHash, row.admin.passwordHash)));
    }
    const a = row.admin;
    return { status: 'ok', admin: { id: a.id, email: a.email, companyId: a.companyId, companyName: row.companyName, role: a.role, sessionVersion: a.sessionVersion } };
  }

  const after = await countRecent(db, counted, since);
  const reached = mine.filter((r) => r.scope !== 'global' && after[r.scope as Scope] >= SIGN_IN_LIMITS[r.scope as keyof typeof SIGN_IN_LIMITS]).map((r) => r.id);
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
