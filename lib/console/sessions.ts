import { and, eq, gt, isNotNull, isNull, lte, or, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client';
import { consoleSessions } from '../db/schema';
import { wallClock } from '../clock';
import { newSecret } from '../ids';

/** A console session lasts this long from its sign-in, however often its cookie is renewed. */
export const SESSION_MAX_AGE_S = 12 * 60 * 60;

/**
 * Opens a session for an admin who just signed in and returns its id, which the session cookie
 * carries. Real time, as the cookie's own expiry: the test clock does not end sessions. The
 * admin's sessions that are over go at the same time, so their rows do not pile up.
 */
export async function openConsoleSession(db: Db, adminId: string): Promise<string> {
  const at = wallClock();
  const id = newSecret('cs_', 24);
  await db.delete(consoleSessions).where(and(eq(consoleSessions.adminId, adminId), or(isNotNull(consoleSessions.endedAt), lte(consoleSessions.expiresAt, at))));
  await db.insert(consoleSessions).values({ id, adminId, createdAt: at, expiresAt: new Date(at.getTime() + SESSION_MAX_AGE_S * 1000) });
  return id;
}

/** The condition on `console_sessions` that the session is still open: not signed out of, within its 12 hours. */
export function openSession(id: string): SQL | undefined {
  return and(eq(consoleSessions.id, id), isNull(consoleSessions.endedAt), gt(consoleSessions.expiresAt, wallClock()));
}

/** Ends a session (sign-out): its cookie, wherever it was copied, no longer signs anyone in. */
export async function endConsoleSession(db: Db, id: string): Promise<void> {
  await db.update(consoleSessions).set({ endedAt: wallClock() }).where(and(eq(consoleSessions.id, id), isNull(consoleSessions.endedAt)));
}
