import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/client';
import { idempotencyKeys } from '../db/schema';
import { decrypt, encrypt, sha256 } from '../crypto';
import { ApiError } from '../errors';
import { now as clockNow } from '../clock';

import { IDEMPOTENCY_TTL_MS } from '../db/retention';

/** How long a key answers with its stored response; after that the worker deletes it (lib/db/retention.ts). */
export { IDEMPOTENCY_TTL_MS };
/**
 * A key whose request shows no sign of life for this long was left by a process that died, and
 * its retry runs the request again. A running request renews its key every third of it
 * (`holdIdempotencyKey`), so however long it runs, a retry is told to wait. Counted on the
 * service clock, as the key's 24 hours and the reuse of its charges are: under a test clock that
 * jumps, a retry right after a jump of over a minute may run a request still running (its charge
 * is still reused: never a second payment). Mutable for tests only.
 */
export const idempotencyTiming = { abandonedMs: 60_000 };

/** An answer to keep under a key; `retry`: it asks to be retried, so it is not kept. */
export type Stored = { status: number; body: string; retry?: boolean };

/**
 * Claims an Idempotency-Key for a request, under `token` (the claim's own, which renewing and
 * finishing the key are guarded by). Returns the stored response of an earlier identical
 * request, or null when this request should run (and later call `finish`).
 */
export async function claimIdempotencyKey(
  db: Db,
  args: { companyId: string; key: string; method: string; path: string; rawBody: string; now: Date; token?: string },
): Promise<Stored | null> {
  const requestHash = sha256(`${args.method} ${args.path}\n${args.rawBody}`);
  const token = args.token ?? null;
  const aliveAt = args.now;
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
      claimToken: token,
      aliveAt,
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
  // Silence since the last sign of life; a key from before claims were renewed counts from its start.
  const silent = args.now.getTime() - (row.aliveAt ?? row.createdAt).getTime();
  // A stored answer lasts its 24 hours; a running request keeps its key while it shows it is alive.
  // A retryable key's own 24 hours run from when it was marked (its created_at is set back, see finishIdempotencyKey).
  const expired = row.status === 'running' ? silent > idempotencyTiming.abandonedMs : row.status === 'retryable' ? silent > IDEMPOTENCY_TTL_MS : age > IDEMPOTENCY_TTL_MS;
  // A request that ended without an answer to keep (a 5xx, or "try again in a moment") runs again,
  // for the same request only: a charge it left pending is picked up under the key by that request.
  if (expired || (row.status === 'retryable' && row.requestHash === requestHash)) {
    // Only over the row as it was read: of two retries taking over at once, one runs.
    const taken = await db
      .update(idempotencyKeys)
      .set({ requestHash, method: args.method, path: args.path, status: 'running', createdAt: args.now, claimToken: token, aliveAt, responseBody: null, responseStatus: null })
      .where(
        and(
          eq(idempotencyKeys.companyId, args.companyId),
          eq(idempotencyKeys.key, args.key),
          eq(idempotencyKeys.status, row.status),
          eq(idempotencyKeys.createdAt, row.createdAt),
          row.aliveAt ? eq(idempotencyKeys.aliveAt, row.aliveAt) : isNull(idempotencyKeys.aliveAt),
        ),
      )
      .returning({ key: idempotencyKeys.key });
    if (!taken.length) return claimIdempotencyKey(db, args);
    return null;
  }
  if (row.requestHash !== requestHash) {
    throw new ApiError('conflict', 'This Idempotency-Key was already used with a different request.', null);
  }
  if (row.status === 'running') {
    throw new ApiError('conflict', 'A request with this Idempotency-Key is still in progress; retry shortly.', null, {}, { 'Retry-After': '1' });
  }
  return { status: Number(row.responseStatus), body: row.responseBody ? decrypt(row.responseBody) : '' };
}

/** Shows the request that claimed the key under `token` is alive. False when the key is no longer its own. */
export async function holdIdempotencyKey(db: Db, companyId: string, key: string, token: string): Promise<boolean> {
  const held = await db
    .update(idempotencyKeys)
    .set({ aliveAt: clockNow() })
    .where(and(eq(idempotencyKeys.companyId, companyId), eq(idempotencyKeys.key, key), eq(idempotencyKeys.status, 'running'), eq(idempotencyKeys.claimToken, token)))
    .returning({ key: idempotencyKeys.key });
  return held.length > 0;
}

/**
 * Stores a request's answer under its key. A 5xx, or an answer that asks to be retried
 * (Retry-After: work on the same thing was under way), is not kept: the key stays `retryable`, so
 * a retry of the same request runs again and another request with the key is refused (409). No
 * answer at all deletes the key. With `token`, only while the key is still that claim's.
 */
export async function finishIdempotencyKey(db: Db, companyId: string, key: string, response: Stored | null, token?: string): Promise<void> {
  const where = and(
    eq(idempotencyKeys.companyId, companyId),
    eq(idempotencyKeys.key, key),
    ...(token ? [eq(idempotencyKeys.status, 'running'), eq(idempotencyKeys.claimToken, token)] : []),
  );
  if (!response) {
    await db.delete(idempotencyKeys).where(where);
    return;
  }
  if (response.status >= 500 || response.retry) {
    // created_at is set back past the 24 hours, alive_at keeps the time: a process of the version
    // before (which knows no `retryable`) takes the key for an expired one and runs the retry,
    // as it did, instead of replaying an answer that is not there.
    const at = clockNow();
    await db
      .update(idempotencyKeys)
      .set({ status: 'retryable', responseStatus: null, responseBody: null, claimToken: null, aliveAt: at, createdAt: new Date(at.getTime() - IDEMPOTENCY_TTL_MS - 1000) })
      .where(where);
    return;
  }
  await db
    .update(idempotencyKeys)
    // Sealed like processor keys: a stored response may hold a secret shown once (a new API key,
    // a webhook's signing secret).
    .set({ status: 'done', responseStatus: String(response.status), responseBody: encrypt(response.body) })
    .where(where);
}
