import { describe, expect, it } from 'vitest';
import { clientAddress, clientNetwork } from './client-address';

const from = (forwarded?: string) => clientAddress(new Request('http://localhost/', { headers: forwarded === undefined ? {} : { 'x-forwarded-for': forwarded } }).headers);

describe('the client address', () => {
  it('is the X-Forwarded-For entry written by the hop next to the service', () => {
    expect(from('198.51.100.7')).toBe('198.51.100.7');
    // Entries in front were written by the client (or hops further out): a client cannot pick its address.
    expect(from('203.0.113.1, 10.0.0.8, 198.51.100.7')).toBe('198.51.100.7');
    expect(from(' 198.51.100.7 ')).toBe('198.51.100.7');
    expect(from('::ffff:127.0.0.1')).toBe('127.0.0.1');
    expect(clientAddress({ 'x-forwarded-for': '203.0.113.9' })).toBe('203.0.113.9');
    expect(clientAddress({ 'x-forwarded-for': ['10.0.0.1', '203.0.113.9'] })).toBe('203.0.113.9');
  });

  it('leaves out a port or a zone a proxy wrote', () => {
    expect(from('spoofed, 203.0.113.9:4711')).toBe('203.0.113.9');
    expect(from('[2001:DB8:1:2::9]:443')).toBe('2001:db8:1:2::/64');
    expect(from('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
  });

  it('takes IPv6 clients by their /64 network', () => {
    expect(from('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(from('2001:db8:1:2::9')).toBe(from('2001:db8:1:2:ffff::1'));
    expect(from('2001:0db8::1')).toBe('2001:db8:0:0::/64');
    expect(from('2001:db8::7')).toBe('2001:db8:0:0::/64');
    expect(from('[::1]')).toBe('0:0:0:0::/64');
    expect(from('::1')).toBe('0:0:0:0::/64');
    expect(from('fe80::1:2:3:4')).toBe('fe80:0:0:0::/64');
    expect(from('64:ff9b::198.51.100.7')).toBe('64:ff9b:0:0::/64');
  });

  it('is null without a usable last entry', () => {
    expect(from()).toBeNull();
    expect(from('')).toBeNull();
    expect(from('not-an-address')).toBeNull();
    expect(from('1.2.3.4, not-an-address')).toBeNull();
    expect(clientAddress({})).toBeNull();
  });

  it('puts an IPv6 /64 in its /48, and has no wider network for IPv4', () => {
    expect(clientNetwork(from('2001:db8:1:2:3:4:5:6')!)).toBe('2001:db8:1::/48');
    expect(clientNetwork(from('2001:db8:1:ff00::1')!)).toBe('2001:db8:1::/48');
    expect(clientNetwork(from('2001:db8:2::1')!)).toBe('2001:db8:2::/48');
    expect(clientNetwork(from('::1')!)).toBe('0:0:0::/48');
    expect(clientNetwork(from('198.51.100.7')!)).toBeNull();
  });
});
