import { ApiError } from '../errors';
import { setting, testRunnerOnly } from '../env';
import { clientNetwork } from '../net/client-address';

// Per-process token bucket per company. RATE_LIMIT_PER_SECOND=0 turns it off.
const buckets = new Map<string, { tokens: number; at: number }>();

export function checkRateLimit(companyId: string): void {
  const rate = setting('RATE_LIMIT_PER_SECOND');
  if (!rate) return;
  const burst = rate * 2;
  const t = performance.now();
  const bucket = buckets.get(companyId) ?? { tokens: burst, at: t };
  bucket.tokens = Math.min(burst, bucket.tokens + ((t - bucket.at) / 1000) * rate);
  bucket.at = t;
  if (bucket.tokens < 1) {
    buckets.set(companyId, bucket);
    const retry = Math.max(1, Math.ceil((1 - bucket.tokens) / rate));
    throw new ApiError('rate_limited', `Too many requests: the limit is ${rate} per second.`, null, {}, { 'Retry-After': String(retry) });
  }
  bucket.tokens -= 1;
  buckets.set(companyId, bucket);
}

// Per-process token buckets per client address for calls anyone may make that do work (the card
// collector's and the portal's submits): they must not become a way to test stolen cards in bulk.
// PUBLIC_RATE_LIMIT_PER_MINUTE=0 turns them off.
//
// An address is an IPv4 address or an IPv6 /64 (lib/net/client-address.ts), and each IPv6 /48
// has a budget of its own, NETWORK_FACTOR times the address's: a subscriber often holds a /56 or
// a /48, whose /64s would otherwise each count as a client of its own.
const addressBuckets = new Map<string, { tokens: number; at: number }>();
const NETWORK_FACTOR = 8;
/**
 * Buckets kept at most. A bucket that has refilled holds nothing a fresh one would not, so those
 * are dropped first (least recently seen first) and forgetting one changes no answer; only past
 * this many addresses each seen within the last minute are live buckets dropped.
 */
const MAX_ADDRESSES = 100_000;

type Buckets = Map<string, { tokens: number; at: number }>;

/**
 * Takes one token (`spend`; otherwise only looks) from `key`'s bucket of `capacity` per minute, or
 * says after how many seconds one is free.
 */
function take(key: string, capacity: number, t: number, buckets: Buckets = addressBuckets, spend = true): number | null {
  const perMs = capacity / 60_000;
  const bucket = buckets.get(key) ?? { tokens: capacity, at: t };
  bucket.tokens = Math.min(capacity, bucket.tokens + (t - bucket.at) * perMs);
  bucket.at = t;
  // Re-inserted, so the map's order is least recently seen first.
  buckets.delete(key);
  buckets.set(key, bucket);
  if (bucket.tokens < 1) return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  if (spend) bucket.tokens -= 1;
  return null;
}

/** Drops refilled buckets, least recently seen first, then (past MAX_ADDRESSES) the least recently seen. */
function prune(t: number, buckets: Buckets = addressBuckets): void {
  // A bucket last seen a minute or more ago has refilled, at any capacity.
  for (const [key, bucket] of buckets) {
    if (t - bucket.at < 60_000 || buckets.size <= MAX_ADDRESSES / 2) break;
    buckets.delete(key);
  }
  while (buckets.size > MAX_ADDRESSES) buckets.delete(buckets.keys().next().value!);
}

export function checkAddressRateLimit(address: string): void {
  const perMinute = setting('PUBLIC_RATE_LIMIT_PER_MINUTE');
  if (!perMinute) return;
  const t = performance.now();
  const network = clientNetwork(address);
  // The address first: a client over its own limit does not spend its network's budget.
  const retry = take(address, perMinute, t) ?? (network ? take(network, perMinute * NETWORK_FACTOR, t) : null);
  if (addressBuckets.size > MAX_ADDRESSES / 2) prune(t);
  if (retry !== null) {
    throw new ApiError('rate_limited', `Too many requests from this address: the limit is ${perMinute} per minute.`, null, {}, { 'Retry-After': String(retry) });
  }
}

// Per-process budgets of wrong API credentials per client address (and IPv6 /48, NETWORK_FACTOR
// times that), kept like the buckets above: only a refused credential spends one, and an address
// whose budget is spent is answered 429 before its key is looked up, so a flood of guesses costs
// no database work. AUTH_FAILURES_PER_MINUTE=0 turns it off.
// Process-wide: every route's module instance spends the same budget.
const authFailureBuckets: Buckets = ((globalThis as { __billingAuthFailures?: Buckets }).__billingAuthFailures ??= new Map());

/** Refuses, with 429 and Retry-After, a request from an address that has spent its budget of wrong credentials. */
export function checkAuthFailures(address: string): void {
  const perMinute = setting('AUTH_FAILURES_PER_MINUTE');
  if (!perMinute) return;
  const t = performance.now();
  const network = clientNetwork(address);
  const retry = take(address, perMinute, t, authFailureBuckets, false) ?? (network ? take(network, perMinute * NETWORK_FACTOR, t, authFailureBuckets, false) : null);
  if (retry !== null) {
    throw new ApiError('rate_limited', `Too many requests with wrong credentials from this address: at most ${perMinute} a minute.`, null, {}, { 'Retry-After': String(retry) });
  }
}

/** Spends one of the address's (and its network's) budget of wrong credentials. */
export function recordAuthFailure(address: string): void {
  const perMinute = setting('AUTH_FAILURES_PER_MINUTE');
  if (!perMinute) return;
  const t = performance.now();
  const network = clientNetwork(address);
  take(address, perMinute, t, authFailureBuckets);
  if (network) take(network, perMinute * NETWORK_FACTOR, t, authFailureBuckets);
  if (authFailureBuckets.size > MAX_ADDRESSES / 2) prune(t, authFailureBuckets);
}

// Requests of one company in flight at once in this process (COMPANY_CONCURRENCY; 0 = no cap):
// one company's burst of slow calls (large batches, exports) cannot take every database connection
// and event-loop turn of the process from the others. Process-wide, like the budgets above.
const inFlight: Map<string, number> = ((globalThis as { __billingCompanyInFlight?: Map<string, number> }).__billingCompanyInFlight ??= new Map());

/** Takes one of the company's slots, or refuses with 429 and Retry-After; the answer gives it back (once). */
export function holdCompanySlot(companyId: string): () => void {
  const cap = setting('COMPANY_CONCURRENCY');
  if (!cap) return () => {};
  const held = inFlight.get(companyId) ?? 0;
  if (held >= cap) {
    throw new ApiError('rate_limited', `Too many requests of this company at once: at most ${cap} in flight in each process; retry when some have been answered.`, null, {}, { 'Retry-After': '1' });
  }
  inFlight.set(companyId, held + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (inFlight.get(companyId) ?? 1) - 1;
    if (left > 0) inFlight.set(companyId, left);
    else inFlight.delete(companyId);
  };
}

/** Forgets every address (tests). */
export function resetAddressRateLimits(): void {
  addressBuckets.clear();
  authFailureBuckets.clear();
}

/** Tests only: the requests still holding a company's slot (not answered yet), as `company: count`. */
export function companySlotsHeld(): string[] {
  return [...inFlight].map(([company, n]) => `${company}: ${n}`);
}

/** Tests only: every bucket and budget full and no slot held, as in a new process. */
export function resetRateLimitsForTests(): void {
  testRunnerOnly('resetRateLimitsForTests');
  buckets.clear();
  resetAddressRateLimits();
  inFlight.clear();
}
