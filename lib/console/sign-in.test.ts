import { randomBytes, scryptSync } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { now, setTestTime } from '../clock';
import { admins, signInAttempts } from '../db/schema';
import { verifyPassword } from '../crypto';
import { attemptSignIn, SIGN_IN_LIMITS, SIGN_IN_LOCK_MS } from './sign-in';
import { inviteAdmin } from './team';

process.env.BILLING_TEST_CLOCK = '1';

const t = useTestDatabase();
const PASSWORD = 'owner password 1';

async function owner(password = PASSWORD) {
  const c = await newCompany(t, { name: 'Sign-in Co', password });
  return { email: c.company.email, companyId: c.company.id };
}

const attempt = (email: string, password: string, address: string | null = '198.51.100.7') => attemptSignIn({ db: t.database.db, email, password, address });
/** Moves the test clock by `ms` in this process, running nothing (not the API's advance). */
const passTime = (ms: number) => setTestTime(now().getTime() + ms);

describe('console sign-in lockout', () => {
  it('after 10 failures for one email, that email is refused for 15 minutes, right password or not, from any address', async () => {
    const { email } = await owner();
    expect(await attempt(email, PASSWORD)).toMatchObject({ status: 'ok', admin: { email, role: 'owner', sessionVersion: 1 } });
    for (let i = 0; i < SIGN_IN_LIMITS.email; i++) expect((await attempt(email.toUpperCase(), `wrong ${i}`, `203.0.113.${i}`)).status).toBe('failed');
    expect(await attempt(email, PASSWORD)).toEqual({ status: 'locked' });
    expect(await attempt(email, PASSWORD, '192.0.2.99')).toEqual({ status: 'locked' });
    // Another email from the same addresses is not affected.
    const other = await owner('other password 1');
    expect((await attempt(other.email, 'other password 1', '203.0.113.1')).status).toBe('ok');
    passTime(SIGN_IN_LOCK_MS - 1000);
    expect(await attempt(email, PASSWORD)).toEqual({ status: 'locked' });
    passTime(1000);
    expect((await attempt(email, PASSWORD)).status).toBe('ok');
  });

  it('a success forgets the email’s earlier failures', async () => {
    const { email } = await owner();
    // Nine failures a minute ago (the first test makes real ones).
    const earlier = new Date(now().getTime() - 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: SIGN_IN_LIMITS.email - 1 }, () => ({ scope: 'email' as const, key: email.toLowerCase(), at: earlier })));
    expect((await attempt(email, PASSWORD)).status).toBe('ok');
    expect((await attempt(email, 'wrong')).status).toBe('failed');
    expect((await attempt(email, PASSWORD)).status).toBe('ok');
  });

  it('after 50 failures from one address, that address is refused for 15 minutes, whichever email', async () => {
    const { email } = await owner();
    const address = '198.51.100.50';
    // 49 earlier failures from the address, each for another (unknown) email, 10 minutes ago…
    const earlier = new Date(now().getTime() - 10 * 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: SIGN_IN_LIMITS.address - 1 }, () => ({ scope: 'address' as const, key: address, at: earlier })));
    // …and the 50th, an unknown email, counts as one too.
    expect(await attempt(`nobody-${randomBytes(3).toString('hex')}@nowhere.test`, 'guess', address)).toEqual({ status: 'failed' });
    expect(await attempt(email, PASSWORD, address)).toEqual({ status: 'locked' });
    expect((await attempt(email, PASSWORD, '198.51.100.51')).status).toBe('ok');
    passTime(SIGN_IN_LOCK_MS);
    expect((await attempt(email, PASSWORD, address)).status).toBe('ok');
  });

  it('parallel guesses count while they run: at most 10 are checked', async () => {
    const { email } = await owner();
    const results = await Promise.all(Array.from({ length: 14 }, (_, i) => attempt(email, `guess ${i}`, `192.0.2.${i}`)));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 'failed').length).toBeLessThanOrEqual(SIGN_IN_LIMITS.email);
    expect(statuses.filter((s) => s === 'locked').length).toBeGreaterThanOrEqual(4);
    expect(await attempt(email, PASSWORD)).toEqual({ status: 'locked' });
    passTime(SIGN_IN_LOCK_MS);
  });

  it('an unknown email and a wrong password answer alike', async () => {
    const { email } = await owner();
    expect(await attempt(`nobody-${randomBytes(3).toString('hex')}@nowhere.test`, PASSWORD)).toEqual({ status: 'failed' });
    expect(await attempt(email, 'not it at all')).toEqual({ status: 'failed' });
  });

  it('a hash from before stored parameters is upgraded at the next successful sign-in', async () => {
    const { email } = await owner();
    const salt = randomBytes(16);
    const legacy = `scrypt$${salt.toString('base64url')}$${scryptSync(PASSWORD, salt, 32).toString('base64url')}`;
    await t.database.db.update(admins).set({ passwordHash: legacy }).where(eq(admins.email, email));
    expect((await attempt(email, 'wrong password 1')).status).toBe('failed');
    expect((await t.database.db.select().from(admins).where(eq(admins.email, email)))[0].passwordHash).toBe(legacy);
    expect((await attempt(email, PASSWORD)).status).toBe('ok');
    const [row] = await t.database.db.select().from(admins).where(eq(admins.email, email));
    expect(row.passwordHash).toMatch(/^scrypt\$n=131072,r=8,p=1\$/);
    expect(await verifyPassword(PASSWORD, row.passwordHash)).toBe(true);
    expect(row.sessionVersion).toBe(1);
    expect((await attempt(email, PASSWORD)).status).toBe('ok');
  });

  it('an invited admin signs in like the owner', async () => {
    const { companyId } = await owner();
    const invited = await inviteAdmin({ db: t.database.db, companyId, inviterRole: 'owner', input: { email: `ops-${randomBytes(3).toString('hex')}@team.test`, password: 'invited password' } });
    expect(await attempt(invited.email, 'invited password')).toMatchObject({ status: 'ok', admin: { id: invited.id, role: 'admin', companyId } });
  });
});
