import { ApiError } from '../errors';
import { setting } from '../env';

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

// Per-process token bucket per client address for calls anyone may make that do work (the card
// collector's submit): they must not become a way to test stolen cards in bulk.
// PUBLIC_RATE_LIMIT_PER_MINUTE=0 turns it off.
const addressBuckets = new Map<string, { tokens: number; at: number }>();
/** Addresses remembered at most; the least recently seen are forgotten first. */
const MAX_ADDRESSES = 10_000;

export function checkAddressRateLimit(address: string): void {
  const perMinute = setting('PUBLIC_RATE_LIMIT_PER_MINUTE');
  if (!perMinute) return;
  const perMs = perMinute / 60_000;
  const t = performance.now();
  const bucket = addressBuckets.get(address) ?? { tokens: perMinute, at: t };
  bucket.tokens = Math.min(perMinute, bucket.tokens + (t - bucket.at) * perMs);
  bucket.at = t;
  // Re-inserted, so the map's order is least recently seen first.
  addressBuckets.delete(address);
  addressBuckets.set(address, bucket);
  if (addressBuckets.size > MAX_ADDRESSES) addressBuckets.delete(addressBuckets.keys().next().value!);
  if (bucket.tokens < 1) {
    const retry = Math.max(1, Math.ceil((1 - bucket.tokens) / perMs / 1000));
    throw new ApiError('rate_limited', `Too many requests from this address: the limit is ${perMinute} per minute.`, null, {}, { 'Retry-After': String(retry) });
  }
  bucket.tokens -= 1;
}
