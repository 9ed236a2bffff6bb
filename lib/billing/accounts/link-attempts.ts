import { and, eq, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from '../../db/client';
import { ApiError, conflict } from '../../errors';

/**
 * Card attempts through a link anyone holding its URL may use (the card collector; a customer
 * portal keeps the same rules). Whoever holds a link can try card after card, so after a few
 * failures the link is spent: a site testing stolen cards gets five tries, and the company makes
 * a new link for a real customer.
 */
export const MAX_FAILED_ATTEMPTS = 5;

/** A link table that counts failed attempts (an integer column `failed_attempts`, default 0). */
export type AttemptCountingTable = PgTable & { id: PgColumn; failedAttempts: PgColumn };

/**
 * Whether a failure counts against the link: the processor declined the card, or refused its
 * token. Processor outages and our own errors say nothing about the card, so they do not.
 */
export function isFailedCardAttempt(err: unknown): err is ApiError {
  return err instanceof ApiError && (err.type === 'card_declined' || (err.type === 'invalid_request' && err.param === 'token'));
}

export function isSpent(link: { failedAttempts: number }): boolean {
  return link.failedAttempts >= MAX_FAILED_ATTEMPTS;
}

/** Condition for the claim of a link: it still takes attempts. */
export function takesAttempts(table: AttemptCountingTable): SQL {
  return lt(table.failedAttempts, MAX_FAILED_ATTEMPTS);
}

/** How long one card submission holds its link; a process that died mid-way frees it after this. */
export const SUBMISSION_LEASE_MS = 2 * 60_000;

/** A link table whose card submissions take a lease (a timestamp column `busy_until`). */
export type LeasedLinkTable = AttemptCountingTable & { busyUntil: PgColumn };

/**
 * Claims a link for one card submission until `at` + SUBMISSION_LEASE_MS: it still takes attempts,
 * no other submission holds it, and `also` holds. One at a time per link, so failed attempts are
 * counted before the next one starts. True when claimed.
 */
export async function claimSubmission(db: Db, table: LeasedLinkTable, linkId: string, at: Date, also?: SQL): Promise<boolean> {
  const claimed = await db
    .update(table)
    .set({ busyUntil: new Date(at.getTime() + SUBMISSION_LEASE_MS) } as never)
    .where(and(eq(table.id, linkId), or(isNull(table.busyUntil), lt(table.busyUntil, at)), takesAttempts(table), also))
    .returning({ id: table.id });
  return claimed.length > 0;
}

/** What a second card submission through a link gets while one is under way. */
export function submissionBusyError(): ApiError {
  return conflict('A card is being saved through this link; wait a moment and reload the page.');
}

const spentWords = (issuer: string) => `can no longer be used: ${MAX_FAILED_ATTEMPTS} card attempts through it failed. Ask ${issuer} for a new link.`;

export function linkSpentError(issuer: string): ApiError {
  return new ApiError('link_expired', `This link ${spentWords(issuer)}`);
}

/**
 * Counts one failed attempt in one statement (with `also`, further columns set in the same
 * update) and returns the error to answer: the attempt's own, saying so when it spent the link.
 */
export async function recordFailedAttempt(db: Db, table: AttemptCountingTable, linkId: string, err: ApiError, issuer: string, also: Record<string, unknown> = {}): Promise<ApiError> {
  const [row] = await db
    .update(table)
    .set({ ...also, failedAttempts: sql`${table.failedAttempts} + 1` } as never)
    .where(eq(table.id, linkId))
    .returning({ failed: table.failedAttempts });
  if (!row || Number(row.failed) < MAX_FAILED_ATTEMPTS) return err;
  // Not "try another card", as the attempt's own message would say: no card can be tried here now.
  return new ApiError(err.type, `The card was refused, and this link ${spentWords(issuer)}`, err.param, { ...err.extra, link_spent: true }, err.headers);
}
