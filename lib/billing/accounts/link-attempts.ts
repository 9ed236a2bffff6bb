import { eq, lt, sql, type SQL } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import type { Db } from '../../db/client';
import { ApiError } from '../../errors';

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
