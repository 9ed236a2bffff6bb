import { describe, expect, it } from 'vitest';
import { clientAddress } from './client-address';

const from = (forwarded?: string) => clientAddress(new Request('http://localhost/', { headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } }));

describe('the client address of an unauthenticated call', () => {
  it('is the X-Forwarded-For entry written by the hop next to the service', () => {
    expect(from('198.51.100.7')).toBe('198.51.100.7');
    // Entries in front were written by the client (or hops further out): a client cannot pick its address.
    expect(from('203.0.113.1, 10.0.0.8, 198.51.100.7')).toBe('198.51.100.7');
    expect(from(' 198.51.100.7 ')).toBe('198.51.100.7');
    expect(from('::ffff:127.0.0.1')).toBe('127.0.0.1');
  });

  it('takes IPv6 clients by their /64 network', () => {
    expect(from('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(from('2001:db8:1:2::9')).toBe(from('2001:db8:1:2:ffff::1'));
    expect(from('2001:0db8::1')).toBe('2001:db8:0:0::/64');
    expect(from('[::1]')).toBe('0:0:0:0::/64');
    expect(from('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64');
    expect(from('64:ff9b::198.51.100.7')).toBe('64:ff9b:0:0::/64');
  });

  it('is one shared "unknown" without a usable header', () => {
    expect(from()).toBe('unknown');
    expect(from('')).toBe('unknown');
    expect(from('not-an-address')).toBe('unknown');
  });
});
