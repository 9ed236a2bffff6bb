import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { eq } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { startAppServer, type AppServer } from '../testing/servers';
import { admins, signInAttempts } from '../db/schema';
import { SIGN_IN_GLOBAL_LIMIT, SIGN_IN_LIMITS } from './sign-in';
import { changePassword, inviteAdmin, removeAdmin } from './team';

const t = useTestDatabase();
const onPostgres = process.env.TEST_DB === 'postgres';

type Jar = Map<string, string>;
const cookieHeader = (jar: Jar) => [...jar].map(([k, v]) => `${k}=${v}`).join('; ');
function keepCookies(jar: Jar, res: Response) {
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(';');
    const i = pair.indexOf('=');
    jar.set(pair.slice(0, i), pair.slice(i + 1));
  }
}

/** next-auth's credentials sign-in over HTTP, as the sign-in form does it: null on success, else the error code. */
async function signIn(base: string, email: string, password: string, jar: Jar = new Map(), forwardedFor = '192.0.2.10'): Promise<string | null> {
  const csrf = await fetch(`${base}/api/auth/csrf`, { headers: { 'x-forwarded-for': forwardedFor } });
  keepCookies(jar, csrf);
  const { csrfToken } = (await csrf.json()) as { csrfToken: string };
  const res = await fetch(`${base}/api/auth/callback/credentials`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar), 'x-forwarded-for': forwardedFor },
    body: new URLSearchParams({ email, password, csrfToken, json: 'true', callbackUrl: `${base}/console` }),
  });
  keepCookies(jar, res);
  const { url } = (await res.json()) as { url: string };
  return new URL(url).searchParams.get('error');
}

/** A console page with this session: its status, and where a redirect leads. */
async function page(base: string, jar: Jar, p = '/console/team') {
  const res = await fetch(`${base}${p}`, { redirect: 'manual', headers: { cookie: cookieHeader(jar) } });
  return { status: res.status, location: res.headers.get('location'), body: res.status === 200 ? await res.text() : '' };
}

describe.skipIf(onPostgres)('APP_SECRET at start', () => {
  it('a server with an APP_SECRET shorter than 32 bytes stops with a message naming it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'short-secret-'));
    try {
      await expect(startAppServer({ DATA_DIR: dir, APP_SECRET: 'test-secret', WORKER: '0' })).rejects.toThrow(/server exited early:[\s\S]*APP_SECRET must be at least 32 bytes long \(it has 11\)/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!onPostgres)('console sign-in and sessions across two app processes on one PostgreSQL', () => {
  const servers: AppServer[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) servers.push(await startAppServer({ DATABASE_URL: t.url!, WORKER: '0' }));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });
  const [a, b] = [() => servers[0].url, () => servers[1].url];

  it('failures on both processes add up: the email is locked out from that address on each, right password or not', async () => {
    const co = await newCompany(t, { password: 'the right password' });
    const email = co.company.email;
    for (let i = 0; i < SIGN_IN_LIMITS.email_address; i++) {
      expect(await signIn(i % 2 ? a() : b(), email, `wrong ${i}`, new Map(), '198.51.100.60')).toBe('CredentialsSignin');
    }
    expect(await signIn(a(), email, 'the right password', new Map(), '198.51.100.60')).toBe('SignInLocked');
    expect(await signIn(b(), email, 'the right password', new Map(), '198.51.100.60')).toBe('SignInLocked');
    const jar: Jar = new Map();
    expect(await page(a(), jar)).toMatchObject({ status: 307, location: expect.stringContaining('/console/sign-in') });
    // From elsewhere the owner still signs in.
    expect(await signIn(b(), email, 'the right password', jar, '198.51.100.61')).toBeNull();
  });

  it('a sign-in that cannot be checked now is answered 503 with Retry-After, and the form reads why', async () => {
    const co = await newCompany(t, { password: 'the right password' });
    const earlier = new Date(Date.now() - 5 * 60_000);
    await t.database.db.insert(signInAttempts).values(Array.from({ length: SIGN_IN_GLOBAL_LIMIT }, () => ({ scope: 'global' as const, key: '*', at: earlier })));
    try {
      const csrf = await fetch(`${a()}/api/auth/csrf`);
      const jar: Jar = new Map();
      keepCookies(jar, csrf);
      const { csrfToken } = (await csrf.json()) as { csrfToken: string };
      const res = await fetch(`${a()}/api/auth/callback/credentials`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar), 'x-forwarded-for': '198.51.100.62' },
        body: new URLSearchParams({ email: co.company.email, password: 'the right password', csrfToken, json: 'true', callbackUrl: `${a()}/console` }),
      });
      expect(res.status).toBe(503);
      const retry = Number(res.headers.get('retry-after'));
      expect(retry).toBeGreaterThan(9 * 60);
      expect(retry).toBeLessThanOrEqual(10 * 60);
      const { url } = (await res.json()) as { url: string };
      expect(new URL(url).searchParams.get('error')).toBe(`SignInBusy:${retry}`);
    } finally {
      await t.database.db.delete(signInAttempts).where(eq(signInAttempts.scope, 'global'));
    }
    expect(await signIn(a(), co.company.email, 'the right password', new Map(), '198.51.100.62')).toBeNull();
  });

  it('the client address is the last X-Forwarded-For entry', async () => {
    const email = `nobody-${randomBytes(3).toString('hex')}@nowhere.test`;
    expect(await signIn(a(), email, 'a guess', new Map(), 'spoofed-by-client, 203.0.113.77')).toBe('CredentialsSignin');
    const rows = await t.database.db.select().from(signInAttempts).where(eq(signInAttempts.key, '203.0.113.77'));
    expect(rows.map((r) => r.scope).sort()).toEqual(['address']);
  });

  it('a session ends at once, in every process, when its admin changes password or is removed', async () => {
    const db = t.database.db;
    const co = await newCompany(t, { name: 'Sessions Co', password: 'owner password 1' });
    const [owner] = await db.select().from(admins).where(eq(admins.companyId, co.company.id));
    const invited = await inviteAdmin({ db, companyId: co.company.id, inviterRole: 'owner', input: { email: `ses-${randomBytes(3).toString('hex')}@team.test`, password: 'first password' } });
    const first: Jar = new Map();
    const second: Jar = new Map();
    expect(await signIn(a(), invited.email, 'first password', first)).toBeNull();
    expect(await signIn(b(), invited.email, 'first password', second)).toBeNull();
    const seen = await page(b(), first);
    expect(seen.status).toBe(200);
    expect(seen.body).toContain(invited.email);
    expect((await page(a(), second)).status).toBe(200);

    await changePassword({ db, companyId: co.company.id, adminId: invited.id, input: { current_password: 'first password', new_password: 'second password' } });
    for (const base of [a(), b()]) {
      for (const jar of [first, second]) expect(await page(base, jar)).toMatchObject({ status: 307, location: expect.stringContaining('/console/sign-in') });
    }
    expect(await signIn(a(), invited.email, 'first password', first)).toBe('CredentialsSignin');
    expect(await signIn(a(), invited.email, 'second password', first)).toBeNull();
    expect((await page(b(), first, '/console')).status).toBe(200);

    await removeAdmin({ db, companyId: co.company.id, actor: { id: owner.id, role: 'owner' }, adminId: invited.id });
    expect(await page(b(), first, '/console')).toMatchObject({ status: 307, location: expect.stringContaining('/console/sign-in') });
    expect(await page(a(), first, '/console/accounts')).toMatchObject({ status: 307 });
    expect(await signIn(a(), invited.email, 'second password')).toBe('CredentialsSignin');
  });
});
