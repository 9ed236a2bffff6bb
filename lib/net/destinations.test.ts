import { describe, expect, it } from 'vitest';
import type { LookupAddress } from 'node:dns';
import { guardedLookup, isPublicAddress, literalHostProblem, type Resolver } from './destinations';
import { INTERNAL_URLS, PUBLIC_URLS } from '../testing/destinations';
import { withSettings } from '../env';

// The test projects allow private destinations (their receivers listen on 127.0.0.1): here, as
// a deployment runs, WEBHOOK_ALLOW_PRIVATE is unset unless a test says otherwise.
const deployed = <T>(fn: () => T) => () => withSettings({ WEBHOOK_ALLOW_PRIVATE: undefined }, fn);
const allowing = (value: string) => <T>(fn: () => T) => withSettings({ WEBHOOK_ALLOW_PRIVATE: value }, fn);

describe('destination addresses', () => {
  it('refuses every literal spelling of an address inside the network', deployed(() => {
    for (const url of INTERNAL_URLS) expect(literalHostProblem(new URL(url)), url).not.toBeNull();
  }));

  it('lets public addresses and names through (names are judged when they resolve)', deployed(() => {
    for (const url of PUBLIC_URLS) expect(literalHostProblem(new URL(url)), url).toBeNull();
  }));

  it('WEBHOOK_ALLOW_PRIVATE=1 allows them, and any other value is refused rather than read as either', () => {
    allowing('1')(() => {
      for (const url of INTERNAL_URLS) expect(literalHostProblem(new URL(url)), url).toBeNull();
    });
    expect(allowing('0')(() => literalHostProblem(new URL('http://127.0.0.1/')))).not.toBeNull();
    expect(() => allowing('yes')(() => literalHostProblem(new URL('http://127.0.0.1/')))).toThrow(
      'WEBHOOK_ALLOW_PRIVATE must be 1 (webhooks may reach non-public addresses) or 0; got "yes".',
    );
  });

  it('classifies resolved addresses as DNS answers carry them', deployed(() => {
    const internal = ['127.0.0.1', '10.1.2.3', '169.254.169.254', '100.64.1.1', '0.0.0.0', '::1', '::', 'fe80::1%eth0', 'fd00::1', 'ff05::2', '::ffff:127.0.0.1', '::ffff:7f00:1', '64:ff9b::a00:1', '2001::1', '2001:db8::5', '3fff::1'];
    const external = ['93.184.216.34', '1.1.1.1', '2606:4700::1111', '2a00:1450:4001:80b::200e', '::ffff:93.184.216.34', '2001:4860:4860::8888'];
    for (const a of internal) expect(isPublicAddress(a), a).toBe(false);
    for (const a of external) expect(isPublicAddress(a), a).toBe(true);
    expect(isPublicAddress('not-an-address')).toBe(false);
  }));
});

describe('the guarded lookup', () => {
  function lookup(resolver: Resolver, all: boolean) {
    return new Promise<{ err: NodeJS.ErrnoException | null; address: string | LookupAddress[]; family?: number }>((resolve) => {
      guardedLookup(resolver)('hooks.example.test', { all } as never, ((err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) =>
        resolve({ err, address, family })) as never);
    });
  }
  const answering = (...addresses: string[]): Resolver => async () => addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

  it('passes public answers on, in the form the socket asked for', deployed(async () => {
    expect(await lookup(answering('93.184.216.34', '2606:4700::1111'), true)).toMatchObject({
      err: null,
      address: [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:4700::1111', family: 6 },
      ],
    });
    expect(await lookup(answering('93.184.216.34'), false)).toMatchObject({ err: null, address: '93.184.216.34', family: 4 });
  }));

  it('refuses a name when any address it resolves to is inside the network', deployed(async () => {
    for (const answer of [['127.0.0.1'], ['10.0.0.5'], ['169.254.169.254'], ['::1'], ['::ffff:127.0.0.1'], ['93.184.216.34', '192.168.0.10']]) {
      const r = await lookup(answering(...answer), true);
      expect(r.err?.code, answer.join()).toBe('EDESTINATIONNOTALLOWED');
    }
    expect((await allowing('1')(() => lookup(answering('127.0.0.1'), true))).err).toBeNull();
  }));

  it('passes resolution failures through', deployed(async () => {
    const failing: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND hooks.example.test'), { code: 'ENOTFOUND', syscall: 'getaddrinfo' });
    };
    expect((await lookup(failing, true)).err?.code).toBe('ENOTFOUND');
    expect((await lookup(answering(), true)).err?.code).toBe('ENOTFOUND');
  }));
});
