import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/client';
import { idempotencyKeys } from '../db/schema';
import { decrypt, encrypt, sha256 } from '../crypto';
import { ApiError } from '../errors';

import { IDEMPOTENCY_TTL_MS } from '../db/retention';

/** How long a key answers with its stored response; after that the worker deletes it (lib/db/retention.ts). */
export { IDEMPOTENCY_TTL_MS };
const ABANDONED_MS = 60_000;

export type Stored = { status: number; body: string };

/**
 * Claims an Idempotency-Key for a request. Returns the stored response of an earlier identical
 * request, or null when this request should run (and later call `finish`).
 */
export async function claimIdempotencyKey(
  db: Db,
  args: { companyId: string; key: string; method: string; path: string; rawBody: string; now: Date },
): Promise<Stored | null> {
  const requestHash = sha256(`${args.method} ${args.path}\n${args.rawBody}`);
  const inserted = await db
    .insert(idempotencyKeys)
    .values({
      companyId: args.companyId,
      key: args.key,
      method: args.method,
      path: args.path,
      requestHash,
      status: 'running',
      createdAt: args.now,
    })
    .onConflictDoNothing()
    .returning({ key: idempotencyKeys.key });
  if (inserted.length) return null;
  const [row] = await db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.companyId, args.companyId), eq(idempotencyKeys.key, args.key)));
  if (!row) return claimIdempotencyKey(db, args);
  const age = args.now.getTime() - row.createdAt.getTime();
  if (age > IDEMPOTENCY_TTL_MS || (row.status === 'running' && age > ABANDONED_MS)) {
    await db
      .update(idempotencyKeys)
      .set({ requestHash, method: args.method, path: args.path, status: 'running', createdAt: args.now, responseBody: null, responseStatus: null })
      .where(and(eq(idempotencyKeys.companyId, args.companyId), eq(idempotencyKeys.key, args.key)));
    return null;
  }
  if (row.requestHash !== requestHash) {
    throw new ApiError('conflict', 'This Idempotency-Key was already used with a different request.', null);
  }
  if (row.status === 'running') {
    throw new ApiError('conflict', 'A request with this Idempotency-Key is still in progress; retry shortly.', null);
  }
  return { status: Number(row.responseStatus), body: row.responseBody ? decrypt(row.responseBody) : '' };
}

export async function finishIdempotencyKey(db: Db, companyId: string, key: string, response: Stored | null): Promise<void> {
  const where = and(eq(idempotencyKeys.companyId, companyId), eq(idempotencyKeys.key, key));
  // A server error is not remembered, so the caller's retry runs again.
  if (!response || response.status >= 500) {
    await db.delete(idempotencyKeys).where(where);
    return;
  }
  await db
    .update(idempotencyKeys)
    // Sealed like processor keys: a stored response may hold a secret shown once (a new API key,
    // a webhook's signing secret).
    .set({ status: 'done', responseStatus: String(response.status), responseBody: encrypt(response.body) })
    .where(where);
}
