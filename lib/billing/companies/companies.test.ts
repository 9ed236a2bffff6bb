import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { eq } from 'drizzle-orm';
import { api, newCompany, underSettings, useTestDatabase } from '../../testing/harness';
import { withSettings } from '../../env';
import { admins, apiKeys, companies, idempotencyKeys } from '../../db/schema';
import { decrypt, encrypt, verifyPassword } from '../../crypto';
import { authenticateCompany } from '../../api/credentials';
import { testSettingsRefusedByStoredKeys } from './live-keys';
import { atRealPasswordCost, holdHashing } from '../../testing/password-cost';

const t = useTestDatabase();
const ADMIN = { ADMIN_TOKEN: 'admin-secret-for-tests' };

describe('registering companies', () => {
  it('registers with the operator token and returns the API key once', underSettings(ADMIN, async () => {
    const res = await api('POST', '/v1/companies', {
      auth: 'admin',
      body: { name: 'Globex', email: 'ops@globex.io', processor_key: 'rk_test_abc123', processor_publishable_key: 'pk_test_abc123', password: 'correct horse' },
    });
    expect(res.status).toBe(200);
    const c = res.body.data;
    expect(c.id).toMatch(/^c_/);
    expect(c.api_key).toMatch(/^sk_/);
    expect(c).toMatchObject({ name: 'Globex', email: 'ops@globex.io', processor_configured: true });
    // The key works for Basic auth.
    const me = await api('GET', '/v1/companies', { auth: { companyId: c.id, apiKey: c.api_key } });
    expect(me.status).toBe(200);
    expect(me.body.data[0]).not.toHaveProperty('api_key');
    // Stored hashed and encrypted, never in the clear.
    const [row] = await t.database.db.select().from(companies).where(eq(companies.id, c.id));
    expect(row.processorKeyEnc).not.toContain('rk_test_abc123');
    expect(decrypt(row.processorKeyEnc!)).toBe('rk_test_abc123');
    const keys = await t.database.db.select().from(apiKeys).where(eq(apiKeys.companyId, c.id));
    expect(keys).toHaveLength(1);
    expect(keys[0].keyHash).not.toContain(c.api_key);
  }));

  it("hashes a keyed registration's password before its transaction, so the database goes on answering meanwhile", underSettings(ADMIN, () => atRealPasswordCost(async () => {
    // Loaded and warm first, so that the keyed request below claims its key within the 100 ms.
    expect((await api('POST', '/v1/companies', { auth: 'admin', body: { name: 'Warm', email: 'warm@hooli.io' } })).status).toBe(200);
    const order: string[] = [];
    const registering = api('POST', '/v1/companies', {
      auth: 'admin',
      body: { name: 'Hooli', email: 'ops@hooli.io', password: 'correct horse battery' },
      headers: { 'Idempotency-Key': 'register-hooli' },
    }).then((res) => {
      order.push('registered');
      return res;
    });
    // The hash takes most of a second (the real cost, here). On the embedded database a statement outside the request's
    // transaction waits for its commit: had the hash been inside, this read would come last.
    await new Promise((r) => setTimeout(r, 100));
    await t.database.db.select().from(companies).where(eq(companies.email, 'nobody@hooli.io'));
    order.push('read');
    const res = await registering;
    expect(res.status).toBe(200);
    expect(order).toEqual(['read', 'registered']);
    // And the owner signs in with that password: the hash made beforehand is the one stored.
    const [owner] = await t.database.db.select().from(admins).where(eq(admins.email, 'ops@hooli.io'));
    expect(await verifyPassword('correct horse battery', owner.passwordHash)).toBe(true);
  })));

  it('refuses a second console owner with the same email (409), and replays a registration sent again with its Idempotency-Key', underSettings(ADMIN, async () => {
    const body = { name: 'Initech', email: 'ops@initech.io', password: 'correct horse' };
    const first = await api('POST', '/v1/companies', { auth: 'admin', body, headers: { 'Idempotency-Key': 'register-initech' } });
    expect(first.status).toBe(200);
    const again = await api('POST', '/v1/companies', { auth: 'admin', body, headers: { 'Idempotency-Key': 'register-initech' } });
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.data).toEqual(first.body.data);
    expect(await t.database.db.select().from(companies).where(eq(companies.email, 'ops@initech.io'))).toHaveLength(1);
    // The stored response holds the API key shown once: it is sealed, not kept in the clear.
    const stored = await t.database.db.select().from(idempotencyKeys).where(eq(idempotencyKeys.key, 'register-initech'));
    expect(stored).toHaveLength(1);
    expect(stored[0].responseBody).not.toContain(first.body.data.api_key);

    const dup = await api('POST', '/v1/companies', { auth: 'admin', body });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ type: 'conflict', param: 'email' });
    expect(await t.database.db.select().from(companies).where(eq(companies.email, 'ops@initech.io'))).toHaveLength(1);
    // Without a password there is no console owner, so the email may be shared.
    expect((await api('POST', '/v1/companies', { auth: 'admin', body: { name: 'Initech EU', email: 'ops@initech.io' } })).status).toBe(200);
  }));

  it('answers 503 with Retry-After while every password-hashing slot and its queue are taken, and registers nothing', underSettings(ADMIN, async () => {
    // The slots and the queue stay taken until released, however fast a hash is here.
    const hashing = await holdHashing();
    const body = { name: 'Busy Co', email: 'ops@busy.io', password: 'correct horse battery' };
    const res = await api('POST', '/v1/companies', { auth: 'admin', body });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ type: 'service_unavailable', param: null });
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await t.database.db.select().from(companies).where(eq(companies.email, 'ops@busy.io'))).toEqual([]);
    await hashing.release();
    expect((await api('POST', '/v1/companies', { auth: 'admin', body })).status).toBe(200);
  }));

  it('answers 404 without ADMIN_TOKEN configured and 401 with a wrong token', underSettings(ADMIN, async () => {
    const wrong = await api('POST', '/v1/companies', { body: { name: 'X', email: 'x@x.io' }, headers: { authorization: 'Bearer nope' } });
    expect(wrong.status).toBe(401);
    const off = await withSettings({ ADMIN_TOKEN: undefined }, () => api('POST', '/v1/companies', { body: { name: 'X', email: 'x@x.io' }, headers: { authorization: 'Bearer nope' } }));
    expect(off.status).toBe(404);
  }));

  it('validates the registration body', underSettings(ADMIN, async () => {
    const cases: [unknown, string][] = [
      [{ email: 'x@x.io' }, 'name'],
      [{ name: 'X' }, 'email'],
      [{ name: 'X', email: 'not-an-email' }, 'email'],
      [{ name: 7, email: 'x@x.io' }, 'name'],
      [{ name: 'X', email: 'x@x.io', processor_key: 'pk_test_1' }, 'processor_key'],
      [{ name: 'X', email: 'x@x.io', password: 'short' }, 'password'],
      [{ name: 'X', email: 'x@x.io', extra: true }, 'extra'],
    ];
    for (const [body, param] of cases) {
      const res = await api('POST', '/v1/companies', { auth: 'admin', body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request', param });
      expect(res.body.error.message).toBeTruthy();
    }
  }));

  it('a console password has at least 12 characters', underSettings(ADMIN, async () => {
    const short = await api('POST', '/v1/companies', { auth: 'admin', body: { name: 'X', email: 'short@x.io', password: 'elevenchars' } });
    expect(short.status).toBe(400);
    expect(short.body.error).toMatchObject({ type: 'invalid_request', param: 'password', message: 'password must be at least 12 characters' });
    const long = await api('POST', '/v1/companies', { auth: 'admin', body: { name: 'X', email: 'long@x.io', password: 'twelve chars' } });
    expect(long.status).toBe(200);
  }));
});

describe('live processor keys', () => {
  it('are refused at registration while the processor is a stand-in (STRIPE_API_URL), and nothing is stored', underSettings({ ...ADMIN, STRIPE_API_URL: 'http://127.0.0.1:9' }, async () => {
    const cases: [Record<string, string>, string][] = [
      [{ processor_key: 'sk_live_abc123' }, 'processor_key'],
      [{ processor_key: 'rk_live_abc123' }, 'processor_key'],
      [{ processor_key: 'sk_test_abc123', processor_publishable_key: 'pk_live_abc123' }, 'processor_publishable_key'],
    ];
    for (const [keys, param] of cases) {
      const res = await api('POST', '/v1/companies', { auth: 'admin', body: { name: 'Live Co', email: 'ops@live.io', password: 'correct horse', ...keys } });
      expect(res.status, JSON.stringify(keys)).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request', param });
      expect(res.body.error.message).toMatch(/live key.*STRIPE_API_URL/);
    }
    expect(await t.database.db.select().from(companies).where(eq(companies.email, 'ops@live.io'))).toEqual([]);
    const testKeys = await api('POST', '/v1/companies', { auth: 'admin', body: { name: 'Test Co', email: 'ops@test.io', processor_key: 'sk_test_abc123', processor_publishable_key: 'pk_test_abc123' } });
    expect(testKeys.status).toBe(200);
  }));

  it("are accepted for Stripe's own API", underSettings({ ...ADMIN, STRIPE_API_URL: undefined }, async () => {
    const res = await api('POST', '/v1/companies', { auth: 'admin', body: { name: 'Live Co', email: 'ops@live.io', processor_key: 'rk_live_abc123', processor_publishable_key: 'pk_live_abc123' } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toMatchObject({ processor_configured: true, processor_publishable_key: 'pk_live_abc123' });
  }));

  it('stored before a stand-in was configured, are never sent to it', async () => {
    const live = await withSettings({ STRIPE_API_URL: undefined }, () => newCompany(t, { processor_key: 'sk_live_stored', processor_publishable_key: 'pk_live_stored' }));
    // Anything that answered here would be the stand-in; a live key must not reach it.
    const seen: string[] = [];
    const server = http.createServer((req, res) => {
      seen.push(`${req.method} ${req.url}`);
      res.writeHead(500).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const standIn = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const res = await withSettings({ STRIPE_API_URL: standIn }, () => live.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@x.io' } }));
      expect(res.status).toBe(502);
      expect(res.body.error).toMatchObject({ type: 'processor_error' });
      expect(res.body.error.message).toMatch(/live key/);
      expect(seen).toEqual([]);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

describe('API keys', () => {
  it('issues further keys and revokes them at once', async () => {
    const acme = await newCompany(t);
    const issued = await acme.call('POST', '/v1/companies/{company}/api_keys');
    expect(issued.status).toBe(200);
    const second = { companyId: acme.company.id, apiKey: issued.body.data.api_key };
    expect((await api('GET', '/v1/companies', { auth: second })).status).toBe(200);
    const listed = await acme.call('GET', '/v1/companies/{company}/api_keys');
    expect(listed.body.data).toHaveLength(2);
    expect(JSON.stringify(listed.body)).not.toContain(second.apiKey);
    const revoked = await acme.call('DELETE', `/v1/companies/{company}/api_keys/${issued.body.data.id}`);
    expect(revoked.status).toBe(200);
    expect(revoked.body.data.revoked_at).toBeTruthy();
    expect((await api('GET', '/v1/companies', { auth: second })).status).toBe(401);
    expect((await acme.call('GET', '/v1/companies')).status).toBe(200);
  });

  it('a lookup under way while its key is revoked does not keep the key working from the cache', async () => {
    const acme = await newCompany(t);
    const issued = await acme.call('POST', '/v1/companies/{company}/api_keys');
    const header = `Basic ${Buffer.from(`${acme.company.id}:${issued.body.data.api_key}`).toString('base64')}`;
    // The key's lookup reads the key as valid, then its answer is held back until after the revocation.
    let read!: () => void;
    const wasRead = new Promise<void>((r) => (read = r));
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const held = (query: any): any =>
      new Proxy(query, {
        get(target, prop) {
          if (prop === 'then') {
            return (ok: any, fail: any) =>
              target
                .then(async (rows: unknown) => {
                  read();
                  await released;
                  return rows;
                })
                .then(ok, fail);
          }
          const v = Reflect.get(target, prop);
          return typeof v === 'function' ? (...args: unknown[]) => held(v.apply(target, args)) : v;
        },
      });
    const db = t.database.db;
    const slow = new Proxy(db, { get: (target, prop) => (prop === 'select' ? (...args: any[]) => held((target.select as any)(...args)) : Reflect.get(target, prop)) });
    const inFlight = authenticateCompany(slow as typeof db, header, Date.now());
    await wasRead;
    const revoked = await acme.call('DELETE', `/v1/companies/{company}/api_keys/${issued.body.data.id}`);
    expect(revoked.status).toBe(200);
    release();
    expect((await inFlight).id).toBe(acme.company.id); // it was valid when it was read
    await expect(authenticateCompany(db, header, Date.now())).rejects.toMatchObject({ status: 401 });
    expect((await api('GET', '/v1/companies', { auth: { companyId: acme.company.id, apiKey: issued.body.data.api_key } })).status).toBe(401);
  });

  it("never touches another company's keys", async () => {
    const acme = await newCompany(t);
    const other = await newCompany(t);
    const issued = await other.call('POST', '/v1/companies/{company}/api_keys');
    const res = await acme.call('DELETE', `/v1/companies/{company}/api_keys/${issued.body.data.id}`);
    expect(res.status).toBe(404);
    const cross = await acme.call('POST', `/v1/companies/${other.company.id}/api_keys`);
    expect(cross.status).toBe(404);
    expect((await api('GET', '/v1/companies', { auth: { companyId: other.company.id, apiKey: issued.body.data.api_key } })).status).toBe(200);
  });
});

describe('test settings beside live keys', () => {
  const refusedNow = (settings: Record<string, string | undefined>) => withSettings(settings, () => testSettingsRefusedByStoredKeys(t.database.db));

  it('refuses the test clock and private webhook destinations once a company has a live key stored, whatever else is set', underSettings(ADMIN, async () => {
    const on = { BILLING_TEST_CLOCK: '1', WEBHOOK_ALLOW_PRIVATE: '1', ALLOW_TEST_SETTINGS_IN_PRODUCTION: '1' };
    // Test keys only, as a database made for development and tests holds.
    await t.database.db.update(companies).set({ processorKeyEnc: encrypt('sk_test_abc123'), processorPublishableKey: 'pk_test_abc123' });
    expect(await refusedNow(on)).toEqual([]);
    // Registered against Stripe's own API, where live keys are taken.
    const res = await withSettings({ STRIPE_API_URL: undefined }, () =>
      api('POST', '/v1/companies', { auth: 'admin', body: { name: 'Live Co', email: 'ops@live.io', processor_key: 'rk_live_abc123', processor_publishable_key: 'pk_test_abc123' } }),
    );
    expect(res.status).toBe(200);
    const refused = await refusedNow(on);
    expect(refused).toHaveLength(2);
    expect(refused[0]).toMatch(/^BILLING_TEST_CLOCK=1 is refused while a company of this database holds a live Stripe key/);
    expect(refused[1]).toMatch(/^WEBHOOK_ALLOW_PRIVATE=1 is refused while a company of this database holds a live Stripe key/);
    expect(refused.join(' ')).not.toContain('rk_live_abc123');
    expect(await refusedNow({ BILLING_TEST_CLOCK: '1', WEBHOOK_ALLOW_PRIVATE: '0' })).toHaveLength(1);
    // Off, nothing is refused (and the keys are not even read).
    expect(await refusedNow({ BILLING_TEST_CLOCK: '0', WEBHOOK_ALLOW_PRIVATE: '0' })).toEqual([]);
    // A live publishable key alone counts too.
    await t.database.db.update(companies).set({ processorKeyEnc: null, processorPublishableKey: 'pk_live_abc123' }).where(eq(companies.id, res.body.data.id));
    expect(await refusedNow(on)).toHaveLength(2);
    await t.database.db.update(companies).set({ processorPublishableKey: null }).where(eq(companies.id, res.body.data.id));
    expect(await refusedNow(on)).toEqual([]);
  }));
});
