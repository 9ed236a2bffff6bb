import { createCipheriv, createHash, randomBytes, scrypt, scryptSync } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { decrypt, encrypt, hashingSaturated, hashPassword, isSealedWithCurrentKey, MAX_WAITING_HASHES, needsRehash, PASSWORD_PARAMS, passwordParams, setHashGateForTests, setPasswordCostForTests, verifyPassword } from './crypto';
import { ApiError } from './errors';
import { appSecret, consoleSessionSecret } from './secrets';
import { withSettings, type Settings } from './env';

// Every scrypt call is recorded, so a test can see which work a check did.
vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  return { ...real, scrypt: vi.fn(real.scrypt) };
});

const OLD = 'old-secret-of-at-least-32-bytes-aaaaaaaaaa';
const NEW = 'new-secret-of-at-least-32-bytes-bbbbbbbbbb';
/** Runs `fn` with these secrets (and no others) set: the process's own are left as they are. */
const secrets = <T>(values: Settings, fn: () => T) => withSettings({ APP_SECRET: undefined, APP_SECRET_PREVIOUS: undefined, NEXTAUTH_SECRET: undefined, ...values }, fn);

afterEach(() => {
  vi.mocked(scrypt).mockClear();
});

/** A value sealed the way stored values were sealed before they carried a key id. */
function sealWithoutKeyId(plain: string, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', createHash('sha256').update(`processor-keys:${secret}`).digest(), iv);
  const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
  return [iv, cipher.getAuthTag(), data].map((b) => b.toString('base64url')).join('.');
}

describe('APP_SECRET', () => {
  it('must be at least 32 bytes: a shorter one stops with a message naming it', () => {
    expect(() => secrets({ APP_SECRET: 'test-secret' }, appSecret)).toThrow(/^APP_SECRET must be at least 32 bytes long \(it has 11\)/);
    expect(() => secrets({ APP_SECRET: 'x'.repeat(31) }, appSecret)).toThrow(/APP_SECRET must be at least 32 bytes/);
    expect(secrets({ APP_SECRET: 'x'.repeat(32) }, appSecret)).toBe('x'.repeat(32));
  });

  it('console sessions are signed with a key derived from it under a label, never with it', () => {
    const a = secrets({ APP_SECRET: OLD }, consoleSessionSecret);
    expect(a).not.toBe(OLD);
    expect(a).not.toContain(OLD);
    expect(a).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(secrets({ APP_SECRET: OLD }, consoleSessionSecret)).toBe(a);
    expect(secrets({ APP_SECRET: NEW }, consoleSessionSecret)).not.toBe(a);
    expect(secrets({ APP_SECRET: NEW, NEXTAUTH_SECRET: 'set-by-the-operator-0123456789abcdef' }, consoleSessionSecret)).toBe('set-by-the-operator-0123456789abcdef');
    // A short one would let a single session cookie give the key away to an offline search.
    expect(() => secrets({ APP_SECRET: NEW, NEXTAUTH_SECRET: 'abc' }, consoleSessionSecret)).toThrow('NEXTAUTH_SECRET must be at least 32 bytes long (it has 3)');
  });
});

describe('sealed values and key rotation', () => {
  it('carry the id of the key that sealed them; APP_SECRET_PREVIOUS opens old ones until they are sealed again', () => {
    const before = { APP_SECRET: OLD };
    const sealed = secrets(before, () => encrypt('sk_test_rotate'));
    const parts = sealed.split('.');
    expect(parts).toHaveLength(4);
    const legacy = sealWithoutKeyId('whsec_legacy', OLD);
    secrets(before, () => {
      expect(isSealedWithCurrentKey(sealed)).toBe(true);
      expect(decrypt(sealed)).toBe('sk_test_rotate');
      expect(decrypt(legacy)).toBe('whsec_legacy');
      expect(isSealedWithCurrentKey(legacy)).toBe(false);
    });

    // A new secret alone cannot open what the old one sealed, and says why.
    secrets({ APP_SECRET: NEW }, () => {
      expect(() => decrypt(sealed)).toThrow(`sealed with key ${parts[0]}, which is neither APP_SECRET nor APP_SECRET_PREVIOUS`);
      expect(() => decrypt(legacy)).toThrow();
    });

    const resealed = secrets({ APP_SECRET: NEW, APP_SECRET_PREVIOUS: OLD }, () => {
      expect(decrypt(sealed)).toBe('sk_test_rotate');
      expect(decrypt(legacy)).toBe('whsec_legacy');
      expect(isSealedWithCurrentKey(sealed)).toBe(false);
      const again = encrypt(decrypt(sealed));
      expect(again.split('.')[0]).not.toBe(parts[0]);
      expect(isSealedWithCurrentKey(again)).toBe(true);
      return again;
    });

    expect(secrets({ APP_SECRET: NEW }, () => decrypt(resealed))).toBe('sk_test_rotate');
  });

  it('a short secret being retired is accepted as APP_SECRET_PREVIOUS', () => {
    const legacy = sealWithoutKeyId('rk_test_short', 'test-secret');
    expect(secrets({ APP_SECRET: NEW, APP_SECRET_PREVIOUS: 'test-secret' }, () => decrypt(legacy))).toBe('rk_test_short');
  });
});

describe('password hashes', () => {
  it('are made with async scrypt at N=2^17 and store their parameters; the event loop keeps turning meanwhile', async () => {
    let ticks = 0;
    const timer = setInterval(() => ticks++, 5);
    const hash = await hashPassword('correct horse battery');
    clearInterval(timer);
    expect(ticks).toBeGreaterThan(3);
    expect(hash).toMatch(/^scrypt\$n=131072,r=8,p=1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(PASSWORD_PARAMS.N).toBeGreaterThanOrEqual(2 ** 17);
    expect(passwordParams()).toBe(PASSWORD_PARAMS);
    expect(needsRehash(hash)).toBe(false);
    expect(vi.mocked(scrypt).mock.calls.at(-1)?.[3]).toMatchObject({ N: 2 ** 17, r: 8, p: 1 });
    expect(await verifyPassword('correct horse battery', hash)).toBe(true);
    expect(await verifyPassword('correct horse batterY', hash)).toBe(false);
  });

  it('cannot be made cheaper or held outside the test runner', () => {
    const runner = process.env.VITEST;
    delete process.env.VITEST;
    try {
      expect(() => setPasswordCostForTests({ N: 2 ** 10, r: 1, p: 1 })).toThrow(/test runner only/);
      expect(() => setHashGateForTests(() => new Promise(() => {}))).toThrow(/test runner only/);
    } finally {
      process.env.VITEST = runner;
    }
    expect(passwordParams()).toBe(PASSWORD_PARAMS);
  });

  it('made before parameters were stored (scrypt$salt$hash, N=2^14) still verify and ask to be upgraded', async () => {
    const salt = randomBytes(16);
    const legacy = `scrypt$${salt.toString('base64url')}$${scryptSync('old password 1', salt, 32).toString('base64url')}`;
    expect(needsRehash(legacy)).toBe(true);
    expect(await verifyPassword('old password 1', legacy)).toBe(true);
    expect(await verifyPassword('old password 2', legacy)).toBe(false);
  });

  it('an unknown account is checked against a dummy hash at full cost, and never matches', async () => {
    vi.mocked(scrypt).mockClear();
    expect(await verifyPassword('anything at all', null)).toBe(false);
    expect(vi.mocked(scrypt)).toHaveBeenCalledTimes(1);
    expect(vi.mocked(scrypt).mock.calls[0][3]).toMatchObject({ N: PASSWORD_PARAMS.N, r: PASSWORD_PARAMS.r, p: PASSWORD_PARAMS.p });
  });

  it('queue behind two running hashes up to a bound; past it a check is refused at once with 503 and Retry-After, and the queue serves again once it drains', async () => {
    const hash = await hashPassword('queued password 1');
    expect(hashingSaturated()).toBe(false);
    const queued = Array.from({ length: 2 + MAX_WAITING_HASHES }, () => verifyPassword('queued password 1', hash));
    expect(hashingSaturated()).toBe(true);
    const started = performance.now();
    const refused = await verifyPassword('queued password 1', hash).then(
      () => null,
      (err: unknown) => err,
    );
    // Refused without waiting for the queue: well before even one hash could finish.
    expect(performance.now() - started).toBeLessThan(100);
    expect(refused).toBeInstanceOf(ApiError);
    expect(refused).toMatchObject({ type: 'service_unavailable', status: 503 });
    expect(Number((refused as ApiError).headers['Retry-After'])).toBeGreaterThanOrEqual(1);
    expect(await Promise.all(queued)).toEqual(queued.map(() => true));
    expect(hashingSaturated()).toBe(false);
    expect(await verifyPassword('queued password 1', hash)).toBe(true);
  });
});
