import { and, count, eq, gt, lte, min } from 'drizzle-orm';
import type { Db } from '../db/client';
import { signInAttempts } from '../db/schema';
import { now } from '../clock';
import { ApiError } from '../errors';
import { SIGN_IN_WINDOW_MS } from './sign-in';

/**
 * Console actions that hash a password (about half a second of a core each, and one of the few
 * hashing slots): how many each may make within the sign-in window, counted in the database so
 * every process sees the same count. Each try counts, whatever its outcome.
 */
export const ACTION_BUDGETS = {
  /** Admins invited per company. */
  invite: 20,
  /** Password changes tried per admin (a wrong current password also counts as a failed sign-in). */
  password_change: 5,
} as const;

type Action = keyof typeof ACTION_BUDGETS;

const WHAT: Record<Action, string> = {
  invite: 'invitations from this company',
  password_change: 'password changes for this admin',
};

/**
 * Counts one try of `action` for `key` (a company or admin id), or refuses it with 429
 * rate_limited and Retry-After once the budget of the window is spent.
 */
export async function spendActionBudget(db: Db, action: Action, key: string): Promise<void> {
  const at = now();
  const since = new Date(at.getTime() - SIGN_IN_WINDOW_MS);
  await db.delete(signInAttempts).where(and(eq(signInAttempts.scope, action), eq(signInAttempts.key, key), lte(signInAttempts.at, since)));
  const [row] = await db.insert(signInAttempts).values({ scope: action, key, at }).returning({ id: signInAttempts.id });
  const [{ n, oldest }] = await db
    .select({ n: count(), oldest: min(signInAttempts.at) })
    .from(signInAttempts)
    .where(and(eq(signInAttempts.scope, action), eq(signInAttempts.key, key), gt(signInAttempts.at, since)));
  if (Number(n) <= ACTION_BUDGETS[action]) return;
  // Over the budget (parallel tries included): this one does not count.
  await db.delete(signInAttempts).where(eq(signInAttempts.id, row.id));
  const minutes = SIGN_IN_WINDOW_MS / 60_000;
  // When the oldest try leaves the window.
  const retry = Math.max(1, Math.ceil(((oldest ? new Date(oldest).getTime() : at.getTime()) + SIGN_IN_WINDOW_MS - at.getTime()) / 1000));
  throw new ApiError('rate_limited', `Too many ${WHAT[action]}: at most ${ACTION_BUDGETS[action]} in ${minutes} minutes. Try again in ${Math.ceil(retry / 60)} minute${retry > 60 ? 's' : ''}.`, null, {}, { 'Retry-After': String(retry) });
}
