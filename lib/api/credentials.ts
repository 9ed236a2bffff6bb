import { and, eq, isNull } from 'drizzle-orm';
import type { Db } from '../db/client';
import { apiKeys, companies } from '../db/schema';
import { sha256, safeEqual } from '../crypto';
import { ApiError } from '../errors';
import { setting, testRunnerOnly } from '../env';

export type Company = typeof companies.$inferSelect;

// Process-wide (route handlers and console actions are separate module instances in one
// process), so revoking a key anywhere in the process drops it at once. Other processes keep
// it for at most CACHE_MS, measured in real time (the test clock may stand still). `generation`
// counts the revocations: a lookup under way while a key was revoked does not cache what it read.
type AuthCache = { keys: Map<string, { company: Company; keyId: string; at: number }>; lastUsedWritten: Map<string, number>; generation: number };
const authCache = ((globalThis as { __billingAuthCache?: AuthCache }).__billingAuthCache ??= { keys: new Map(), lastUsedWritten: new Map(), generation: 0 });
authCache.generation ??= 0;
const { keys: cache, lastUsedWritten } = authCache;
const CACHE_MS = 5_000;

/** Tests only: no key cached, as in a new process. */
export function forgetCachedKeysForTests(): void {
  testRunnerOnly('forgetCachedKeysForTests');
  cache.clear();
  lastUsedWritten.clear();
}

export function unauthorized(message = 'Invalid company id or API key.'): ApiError {
  return new ApiError('unauthorized', message, null, {}, { 'WWW-Authenticate': 'Basic realm="billing"' });
}

/** Basic auth: username is the company id, password an API key of that company. */
export async function authenticateCompany(db: Db, header: string | null, nowMs: number): Promise<Company> {
  if (!header || !header.toLowerCase().startsWith('basic ')) {
    throw unauthorized('Authenticate with HTTP Basic: the company id as username and an API key as password.');
  }
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) throw unauthorized();
  const companyId = decoded.slice(0, colon);
  const key = decoded.slice(colon + 1);
  const keyHash = sha256(key);
  const hit = cache.get(keyHash);
  const realMs = performance.now();
  if (hit && realMs - hit.at < CACHE_MS && hit.company.id === companyId) return hit.company;
  const generation = authCache.generation;
  const rows = await db
    .select({ company: companies, keyId: apiKeys.id })
    .from(apiKeys)
    .innerJoin(companies, eq(companies.id, apiKeys.companyId))
    .where(and(eq(apiKeys.keyHash, keyHash), isNull(apiKeys.revokedAt)))
    .limit(1);
  const row = rows[0];
  if (!row || !safeEqual(row.company.id, companyId)) throw unauthorized();
  if (authCache.generation === generation) cache.set(keyHash, { company: row.company, keyId: row.keyId, at: realMs });
  // Last use is informational: write it at most once a minute per key.
  if (nowMs - (lastUsedWritten.get(row.keyId) ?? 0) > 60_000) {
    lastUsedWritten.set(row.keyId, nowMs);
    await db.update(apiKeys).set({ lastUsedAt: new Date(nowMs) }).where(eq(apiKeys.id, row.keyId));
  }
  return row.company;
}

/** Drops cached lookups so a revoked key stops working at once in this process. */
export function forgetCachedKeys(): void {
  authCache.generation++;
  cache.clear();
}

export function authenticateAdmin(header: string | null): void {
  const token = setting('ADMIN_TOKEN');
  if (!token) throw new ApiError('not_found', 'No such route.');
  const given = header?.toLowerCase().startsWith('bearer ') ? header.slice(7).trim() : '';
  if (!given || !safeEqual(given, token)) {
    throw new ApiError('unauthorized', 'This call needs the operator token: Authorization: Bearer <ADMIN_TOKEN>.', null, {}, {
      'WWW-Authenticate': 'Bearer realm="billing-admin"',
    });
  }
}
