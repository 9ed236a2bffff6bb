import { randomBytes, scryptSync } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { now, setTestTime } from '../clock';
import { admins, signInAttempts } from '../db/schema';
import { hashingSaturated, needsRehash, passwordParams, verifyPassword } from '../crypto';
import { holdHashing } from '../testing/password-cost';
import { attemptSignIn, SIGN_IN_GLOBAL_LIMIT, SIGN_IN_LIMITS, SIGN_IN_LOCK_MS } from './sign-in';
import { changePassword, inviteAdmin } from './team';
import { clientAddress } from '../net/client-address';
import { ACTION_BUDGETS } from './action-budgets';

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
  it('after 10 failures for one email from one address, that email is refused from there for 15 minutes, right password or not; elsewhere it signs in', async () => {
    const { email } = await owner();
    expect(await attempt(email, PASSWORD)).toMatchObject({ status: 'ok', admin: { email, role: 'owner', sessionVersion: 1 } });
    const from = '203.0.113.10';
    for (let i = 0; i < SIGN_IN_LIMITS.email_address; i++) expect((await attempt(email.toUpperCase(), `wrong ${i}`, from)).status).toBe('failed');
    expect(await attempt(email, PASSWORD, from)).toEqual({ status: 'locked' });
    // The owner, somewhere else, is not locked out by whoever guessed from there.
    expect((await attempt(email, PASSWORD, '192.0.2.99')).status).toBe('ok');
    // Another email from the same address is not affected.
    const other = await owner('other password 1');
    expect((await attempt(other.email, 'other password 1', from)).status).toBe('ok');
    passTime(SIGN_IN_LOCK_MS - 1000);
    expect(await attempt(email, PASSWORD, from)).toEqual({ status: 'locked' });
    passTime(1000);
    expect((await attempt(email, PASSWORD, from)).status).toBe('ok');
  });

  it('the email alone is locked after 100 failures from anywhere: a looser cap for guesses spread over many addresses', async () => {
    const { email } = await owner();
    // 99 earlier failures for the email, from all over, 10 minutes ago…
    const earlier = new Date(now().getTime() - 10 * 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: SIGN_IN_LIMITS.email - 1 }, () => ({ scope: 'email' as const, key: email.toLowerCase(), at: earlier })));
    // …and the 100th, from an address that never failed before, locks it everywhere.
    expect(await attempt(email, 'guess', '198.51.100.200')).toEqual({ status: 'failed' });
    expect(await attempt(email, PASSWORD, '192.0.2.200')).toEqual({ status: 'locked' });
    passTime(SIGN_IN_LOCK_MS);
    expect((await attempt(email, PASSWORD, '192.0.2.200')).status).toBe('ok');
  });

  it('a success forgets the email’s earlier failures', async () => {
    const { email } = await owner();
    // Nine failures a minute ago (the first test makes real ones).
    const earlier = new Date(now().getTime() - 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: SIGN_IN_LIMITS.email_address - 1 }, () => ({ scope: 'email_address' as const, key: `${email.toLowerCase()} 198.51.100.7`, at: earlier })));
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
    const results = await Promise.all(Array.from({ length: 14 }, (_, i) => attempt(email, `guess ${i}`, '192.0.2.14')));
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 'failed').length).toBeLessThanOrEqual(SIGN_IN_LIMITS.email_address);
    expect(statuses.filter((s) => s === 'locked').length).toBeGreaterThanOrEqual(4);
    expect(await attempt(email, PASSWORD, '192.0.2.14')).toEqual({ status: 'locked' });
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
    // Upgraded to the parameters new hashes get (lib/testing/password-cost.ts: lower in tests).
    const { N, r, p } = passwordParams();
    expect(row.passwordHash.startsWith(`scrypt$n=${N},r=${r},p=${p}$`)).toBe(true);
    expect(needsRehash(row.passwordHash)).toBe(false);
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

describe('budgets that keep sign-in from being jammed', () => {
  const rows = () => t.database.db.select().from(signInAttempts);

  it('the /64s of one IPv6 /48 share a budget of 200 failures: past it the whole /48 is refused, other /48s are not', async () => {
    const { email } = await owner();
    const site = '2001:db8:7';
    // 199 failures from 199 different /64s of the /48, 5 minutes ago (each /64 far below its own 50)…
    const earlier = new Date(now().getTime() - 5 * 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: SIGN_IN_LIMITS.network - 1 }, () => ({ scope: 'network' as const, key: `${site}::/48`, at: earlier })));
    // …and the 200th from yet another /64.
    // Addresses as the service reads them from a request: an IPv6 client by its /64.
    const from = (raw: string) => clientAddress({ 'x-forwarded-for': raw });
    expect(await attempt(`nobody-${randomBytes(3).toString('hex')}@nowhere.test`, 'guess', from(`${site}:1:2:3:4:5`))).toEqual({ status: 'failed' });
    expect(await attempt(email, PASSWORD, from(`${site}:ff::1`))).toEqual({ status: 'locked' });
    expect((await attempt(email, PASSWORD, from('2001:db8:8:1::1'))).status).toBe('ok');
    passTime(SIGN_IN_LOCK_MS);
    expect((await attempt(email, PASSWORD, from(`${site}:ff::1`))).status).toBe('ok');
  });

  it('at the service-wide budget of failures, attempts are answered busy with when to retry, hash nothing and count nothing; no lock is left', async () => {
    const { email } = await owner();
    const earlier = new Date(now().getTime() - 5 * 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: SIGN_IN_GLOBAL_LIMIT }, () => ({ scope: 'global' as const, key: '*', at: earlier })));
    const before = (await rows()).length;
    const busy = await attempt(email, PASSWORD, '198.51.100.77');
    expect(busy).toEqual({ status: 'busy', retryAfterS: 10 * 60 });
    expect((await rows()).length).toBe(before);
    // As the window moves past them, sign-in works again, unlocked.
    passTime(10 * 60_000 + 1000);
    expect((await attempt(email, PASSWORD, '198.51.100.77')).status).toBe('ok');
    await t.database.db.delete(signInAttempts).where(eq(signInAttempts.scope, 'global'));
  });

  it('while every hashing slot and the queue are taken, a sign-in is answered busy at once and counts nothing', async () => {
    const { email } = await owner();
    // The slots and the queue stay taken until released, however fast a hash is here.
    const hashing = await holdHashing();
    expect(hashingSaturated()).toBe(true);
    const before = (await rows()).length;
    const r = await attempt(email, PASSWORD, '198.51.100.78');
    expect(r.status).toBe('busy');
    expect(r.status === 'busy' && r.retryAfterS).toBeGreaterThanOrEqual(1);
    expect((await rows()).length).toBe(before);
    await hashing.release();
    expect((await attempt(email, PASSWORD, '198.51.100.78')).status).toBe('ok');
  });

  it('invitations are limited per company (each hashes a password): past 20 in 15 minutes, 429 with Retry-After', async () => {
    const { companyId } = await owner();
    const earlier = new Date(now().getTime() - 14 * 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: ACTION_BUDGETS.invite - 1 }, () => ({ scope: 'invite' as const, key: companyId, at: earlier })));
    const invite = (n: number) => inviteAdmin({ db: t.database.db, companyId, inviterRole: 'owner', input: { email: `inv-${n}-${randomBytes(3).toString('hex')}@team.test`, password: 'invited password' } });
    await invite(1);
    const refused = await invite(2).then(() => null, (err: unknown) => err);
    expect(refused).toMatchObject({ type: 'rate_limited', status: 429, headers: { 'Retry-After': '60' } });
    expect((refused as Error).message).toContain('at most 20 in 15 minutes');
    // Another company is not affected.
    const other = await owner('other password 1');
    await expect(inviteAdmin({ db: t.database.db, companyId: other.companyId, inviterRole: 'owner', input: { email: `inv-x-${randomBytes(3).toString('hex')}@team.test`, password: 'invited password' } })).resolves.toMatchObject({ role: 'admin' });
    passTime(60_000);
    await expect(invite(3)).resolves.toMatchObject({ role: 'admin' });
  });

  it('password changes are limited per admin: past 5 tries in 15 minutes, 429, and the password stays', async () => {
    const { email, companyId } = await owner();
    const [admin] = await t.database.db.select().from(admins).where(eq(admins.email, email));
    await t.database.db.insert(signInAttempts).values(Array.from({ length: ACTION_BUDGETS.password_change }, () => ({ scope: 'password_change' as const, key: admin.id, at: now() })));
    const refused = changePassword({ db: t.database.db, companyId, adminId: admin.id, input: { current_password: PASSWORD, new_password: 'a brand new password' }, address: '198.51.100.79' });
    await expect(refused).rejects.toMatchObject({ type: 'rate_limited', headers: { 'Retry-After': String(15 * 60) } });
    expect((await attempt(email, PASSWORD, '198.51.100.79')).status).toBe('ok');
  });

  it('an email in use by another company\'s admin is refused without saying so; the company\'s own admin is named as such', async () => {
    const mine = await owner();
    const theirs = await owner('their password 1');
    const invite = (email: string) => inviteAdmin({ db: t.database.db, companyId: mine.companyId, inviterRole: 'owner', input: { email, password: 'invited password' } });
    const elsewhere = await invite(theirs.email.toUpperCase()).then(() => null, (err: unknown) => err as Error & { param: string });
    expect(elsewhere).toMatchObject({ type: 'conflict', param: 'email', message: 'This email cannot be used for an admin here. Ask them for another address.' });
    expect(elsewhere!.message).not.toMatch(/exist|already|other compan/i);
    await expect(invite(mine.email)).rejects.toMatchObject({ type: 'conflict', param: 'email', message: 'This email is already an admin of your company.' });
  });
});
