import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ApiError } from '../errors';
import { checkAddressRateLimit, resetAddressRateLimits } from './rate-limit';

/** The answer to one submit from `address`: 'ok', or the refusal's Retry-After. */
function submit(address: string): string {
  try {
    checkAddressRateLimit(address);
    return 'ok';
  } catch (err) {
    if (!(err instanceof ApiError) || err.type !== 'rate_limited') throw err;
    return `retry after ${err.headers?.['Retry-After']}`;
  }
}

describe('the per-address limit of public submits', () => {
  beforeEach(() => {
    vi.stubEnv('PUBLIC_RATE_LIMIT_PER_MINUTE', '2');
    resetAddressRateLimits();
  });
  afterEach(() => {
    vi.unstubAllEnvs();
  });

  it('does not forget an address over its limit when many other addresses come by', () => {
    expect([submit('192.0.2.1'), submit('192.0.2.1'), submit('192.0.2.1')]).toEqual(['ok', 'ok', 'retry after 30']);
    // Twenty thousand other addresses, each seen once within the minute: the first is still over its limit.
    for (let i = 0; i < 20_000; i++) submit(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    expect(submit('192.0.2.1')).toMatch(/^retry after/);
  });

  it('counts an IPv6 /48 as well as each of its /64s', () => {
    // Sixteen /64s of one /48, two submits each: the /48's budget (8 times an address's, 16) is spent.
    const answers = Array.from({ length: 16 }, (_, i) => [submit(`2001:db8:1:${i.toString(16)}::/64`), submit(`2001:db8:1:${i.toString(16)}::/64`)]).flat();
    expect(answers.filter((a) => a === 'ok')).toHaveLength(16);
    expect(answers.slice(16).every((a) => a.startsWith('retry after'))).toBe(true);
    // Another /48 is not affected, nor is an IPv4 address.
    expect(submit('2001:db8:2:0::/64')).toBe('ok');
    expect(submit('192.0.2.9')).toBe('ok');
  });
});
