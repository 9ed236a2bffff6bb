import { ApiError } from '../errors';
import { setting } from '../env';
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

/** Takes one token from `key`'s bucket of `capacity` per minute, or says after how many seconds one is free. */
function take(key: string, capacity: number, t: number): number | null {
  const perMs = capacity / 60_000;
  const bucket = addressBuckets.get(key) ?? { tokens: capacity, at: t };
  bucket.tokens = Math.min(capacity, bucket.tokens + (t - bucket.at) * perMs);
  bucket.at = t;
  // Re-inserted, so the map's order is least recently seen first.
  addressBuckets.delete(key);
  addressBuckets.set(key, bucket);
  if (bucket.tokens < 1) return Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
  bucket.tokens -= 1;
  return null;
}

/** Drops refilled buckets, least recently seen first, then (past MAX_ADDRESSES) the least recently seen. */
function prune(t: number): void {
  // A bucket last seen a minute or more ago has refilled, at any capacity.
  for (const [key, bucket] of addressBuckets) {
    if (t - bucket.at < 60_000 || addressBuckets.size <= MAX_ADDRESSES / 2) break;
    addressBuckets.delete(key);
  }
  while (addressBuckets.size > MAX_ADDRESSES) addressBuckets.delete(addressBuckets.keys().next().value!);
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

/** Forgets every address (tests). */
export function resetAddressRateLimits(): void {
  addressBuckets.clear();
}
