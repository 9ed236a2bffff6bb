import { ApiError } from '../errors';

// Per-process token bucket per company. RATE_LIMIT_PER_SECOND=0 turns it off.
const buckets = new Map<string, { tokens: number; at: number }>();

export function checkRateLimit(companyId: string): void {
  const rate = Number(process.env.RATE_LIMIT_PER_SECOND ?? 5000);
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
