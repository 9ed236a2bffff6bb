import { and, eq } from 'drizzle-orm';
import type { Db } from '../db/client';
import { idempotencyKeys } from '../db/schema';
import { decrypt, encrypt, sha256 } from '../crypto';
import { ApiError } from '../errors';

import { IDEMPOTENCY_TTL_MS } from '../db/retention';

/** How long a key answers with its stored response; after that the worker deletes it (lib/db/retention.ts). */
export { IDEMPOTENCY_TTL_MS };
/**
 * A key whose request shows no sign of life for this long was left by a process that died, and
 * its retry runs the request again. A running request renews its key every third of it
 * (`holdIdempotencyKey`), so however long it runs, a retry meanwhile is told to wait. Mutable for
 * tests only.
 */
export const idempotencyTiming = { abandonedMs: 60_000 };

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
  if (age > IDEMPOTENCY_TTL_MS || (row.status === 'running' && age > idempotencyTiming.abandonedMs)) {
    // Only over the row as it was read: of two retries taking over at once, one runs.
    const taken = await db
      .update(idempotencyKeys)
      .set({ requestHash, method: args.method, path: args.path, status: 'running', createdAt: args.now, responseBody: null, responseStatus: null })
      .where(and(eq(idempotencyKeys.companyId, args.companyId), eq(idempotencyKeys.key, args.key), eq(idempotencyKeys.status, row.status), eq(idempotencyKeys.createdAt, row.createdAt)))
      .returning({ key: idempotencyKeys.key });
    if (!taken.length) return claimIdempotencyKey(db, args);
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

/**
 * Renews a running request's key, claimed (or last renewed) at `since`, to `at`: a sign of life.
 * False when the key is no longer this request's (taken over after it fell silent).
 */
export async function holdIdempotencyKey(db: Db, companyId: string, key: string, since: Date, at: Date): Promise<boolean> {
  const held = await db
    .update(idempotencyKeys)
    .set({ createdAt: at })
    .where(and(eq(idempotencyKeys.companyId, companyId), eq(idempotencyKeys.key, key), eq(idempotencyKeys.status, 'running'), eq(idempotencyKeys.createdAt, since)))
    .returning({ key: idempotencyKeys.key });
  return held.length > 0;
}

/**
 * Stores a request's answer under its key (a 5xx or none deletes the key, so a retry runs
 * afresh). With `since` (when the request claimed or last renewed the key), only while the key
 * is still that request's.
 */
export async function finishIdempotencyKey(db: Db, companyId: string, key: string, response: Stored | null, since?: Date): Promise<void> {
  const where = and(
    eq(idempotencyKeys.companyId, companyId),
    eq(idempotencyKeys.key, key),
    ...(since ? [eq(idempotencyKeys.status, 'running'), eq(idempotencyKeys.createdAt, since)] : []),
  );
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
