import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { type Co } from '../../testing/scenario';
import { INTERNAL_URLS, PUBLIC_URLS, withoutPrivateDestinations } from '../../testing/destinations';
import { query } from '../../db/client';
import { createWebhook, MAX_WEBHOOKS_PER_COMPANY, registerByType, updateWebhook } from './webhooks';

process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
const t = useTestDatabase();


// 1000 distinct CJK characters, about 3000 UTF-8 bytes: under a 2048-character limit, over 2048 bytes.
const WIDE_PATH = Array.from({ length: 1000 }, (_, i) => String.fromCodePoint(0x4e00 + i)).join('');

describe('registering webhooks', () => {
  let co: Co;
  let other: Co;
  beforeAll(async () => {
    co = await newCompany(t);
    other = await newCompany(t, { name: 'Other' });
  });

  it('creates a topic webhook (variant B) with Basic credentials and a Standard Webhooks secret shown once', async () => {
    const r = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://hooks.example.com/billing', username: 'hook', password: 's3cret' } });
    expect(r.status).toBe(200);
    const w = r.body.data;
    expect(Object.keys(r.body)).toEqual(['data']);
    expect(w).toMatchObject({ company_id: co.company.id, url: 'https://hooks.example.com/billing', username: 'hook', password: 's3cret', style: 'topic', topics: [] });
    expect(w.id).toMatch(/^w_[0-9a-z]+$/);
    expect(w.secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
    expect(Buffer.from(w.secret.slice(6), 'base64')).toHaveLength(32);
    expect(w.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(typeof w.updated_at).toBe('string');

    const read = await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ ...w, secret: undefined });
    expect('secret' in read.body.data).toBe(false);

    // without the /v1 prefix too
    const bare = await co.call('GET', `/companies/{company}/webhooks/${w.id}`);
    expect(bare.body.data.id).toBe(w.id);
  });

  it('credentials are optional; lists newest first with pagination', async () => {
    const c = await newCompany(t);
    const a = await c.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://a.example/h' } });
    expect(a.body.data).toMatchObject({ username: null, password: null });
    const b = await c.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://b.example/h' } });
    const all = await c.call('GET', '/v1/companies/{company}/webhooks');
    expect(all.body.data.map((w: { id: string }) => w.id)).toEqual([b.body.data.id, a.body.data.id]);
    expect(all.body.data[0].secret).toBeUndefined();
    const page = await c.call('GET', '/v1/companies/{company}/webhooks?limit=1');
    expect(page.body.data).toHaveLength(1);
    expect(page.headers.get('link')).toContain(`starting_after=${b.body.data.id}`);
    const next = await c.call('GET', `/v1/companies/{company}/webhooks?limit=1&starting_after=${b.body.data.id}`);
    expect(next.body.data[0].id).toBe(a.body.data.id);
    expect(next.headers.get('link')).toBeNull();
    const viaTop = await c.call('GET', '/v1/webhooks');
    expect(viaTop.body.data).toHaveLength(2);
  });

  it('rejects bad urls and credentials with the field named', async () => {
    const cases: [unknown, string][] = [
      [{}, 'url'],
      [{ url: 42 }, 'url'],
      [{ url: '' }, 'url'],
      [{ url: 'not a url' }, 'url'],
      [{ url: '/relative/path' }, 'url'],
      [{ url: 'ftp://example.com/hook' }, 'url'],
      [{ url: 'javascript:alert(1)' }, 'url'],
      [{ url: 'file:///etc/passwd' }, 'url'],
      [{ url: 'https://user:pass@example.com/hook' }, 'url'],
      [{ url: 'https://user@example.com/hook' }, 'url'],
      [{ url: `https://example.com/${'a'.repeat(2030)}` }, 'url'],
      // 1000 characters but about 3000 bytes: the limit is in bytes (the stored, indexed address).
      [{ url: `https://example.com/${WIDE_PATH}` }, 'url'],
      [{ url: 'https://example.com', username: 'a:b', password: 'x' }, 'username'],
      [{ url: 'https://example.com', username: 7 }, 'username'],
      [{ url: 'https://example.com', password: 'alone' }, 'username'],
      [{ url: 'https://example.com', colour: 'red' }, 'colour'],
    ];
    for (const [body, param] of cases) {
      const r = await co.call('POST', '/v1/companies/{company}/webhooks', { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param });
      expect(r.body.error.request_id).toMatch(/^req_/);
    }
    const ok = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: `https://example.com/${'a'.repeat(2048 - 20)}` } });
    expect(ok.status).toBe(200);
    const notJson = await co.call('POST', '/v1/companies/{company}/webhooks', { raw: '{"url":', headers: { 'content-type': 'application/json' } });
    expect(notJson.status).toBe(400);
  });

  it('updates url and credentials, clears them with null, and rejects bad updates', async () => {
    const w = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://x.example/1', username: 'u', password: 'p' } })).body.data;
    const r = await co.call('PATCH', `/v1/companies/{company}/webhooks/${w.id}`, { body: { url: 'https://x.example/2', password: 'q' } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ id: w.id, url: 'https://x.example/2', username: 'u', password: 'q' });
    expect(r.body.data.secret).toBeUndefined();
    const cleared = await co.call('PATCH', `/v1/companies/{company}/webhooks/${w.id}`, { body: { username: null } });
    expect(cleared.body.data).toMatchObject({ username: null, password: null });
    const bad: [unknown, string | null][] = [
      [{}, null],
      [{ url: 'gopher://x' }, 'url'],
      [{ url: 'http://a:b@x.example' }, 'url'],
      [{ password: 'no-user' }, 'username'],
      [{ secret: 'mine' }, 'secret'],
    ];
    for (const [body, param] of bad) {
      const res = await co.call('PATCH', `/v1/companies/{company}/webhooks/${w.id}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.error.param).toBe(param);
    }
  });

  it('subscribes to topics idempotently, lists and removes subscriptions', async () => {
    const w = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://x.example/subs' } })).body.data;
    const s = await co.call('POST', `/v1/companies/{company}/webhooks/${w.id}/subscribe/pause_balance`);
    expect(s.status).toBe(200);
    expect(s.body).toEqual({ data: { webhook_id: w.id, topic: 'pause_balance' } });
    expect((await co.call('POST', `/v1/companies/{company}/webhooks/${w.id}/subscribe/pause_balance`)).body.data).toEqual({ webhook_id: w.id, topic: 'pause_balance' });
    await co.call('POST', `/companies/{company}/webhooks/${w.id}/subscribe/negative_balance`);
    const list = await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}/subscriptions`);
    expect(list.body.data.map((x: { topic: string }) => x.topic)).toEqual(['pause_balance', 'negative_balance']);
    expect(list.body.data[0]).toMatchObject({ webhook_id: w.id, topic: 'pause_balance', created_at: expect.any(String) });
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}`)).body.data.topics).toEqual(['pause_balance', 'negative_balance']);

    const unknown = await co.call('POST', `/v1/companies/{company}/webhooks/${w.id}/subscribe/balance_exploded`);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toMatchObject({ type: 'invalid_request', param: 'topic' });
    expect(unknown.body.error.message).toContain('negative_balance');
    const withBody = await co.call('POST', `/v1/companies/{company}/webhooks/${w.id}/subscribe/threshold`, { body: { x: 1 } });
    expect(withBody.status).toBe(400);

    const del = await co.call('DELETE', `/v1/companies/{company}/webhooks/${w.id}/subscribe/pause_balance`);
    expect(del.status).toBe(200);
    expect(del.body.data).toMatchObject({ webhook_id: w.id, topic: 'pause_balance' });
    expect((await co.call('DELETE', `/v1/companies/{company}/webhooks/${w.id}/subscribe/pause_balance`)).status).toBe(404);
    expect((await co.call('DELETE', `/v1/companies/{company}/webhooks/${w.id}/subscribe/nope`)).body.error.param).toBe('topic');
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}/subscriptions`)).body.data.map((x: { topic: string }) => x.topic)).toEqual(['negative_balance']);
  });

  it('registers by type (variant A): one webhook per url, several types, repeat registrations change nothing', async () => {
    const c = await newCompany(t);
    const first = await c.call('POST', '/v1/webhooks', { body: { type: 'negative_balance', url: 'https://a.example/typed' } });
    expect(first.status).toBe(200);
    expect(first.body.data).toMatchObject({ company_id: c.company.id, url: 'https://a.example/typed', style: 'type', topics: ['negative_balance'], username: null, password: null });
    expect(first.body.data.id).toMatch(/^w_/);
    expect(first.body.data.secret).toMatch(/^whsec_/);
    const second = await c.call('POST', '/webhooks', { body: { type: 'balance_change', url: 'https://a.example/typed' } });
    expect(second.body.data.id).toBe(first.body.data.id);
    expect(second.body.data.secret).toBe(first.body.data.secret);
    expect(second.body.data.topics).toEqual(['negative_balance', 'balance_change']);
    const again = await c.call('POST', '/v1/webhooks', { body: { type: 'balance_change', url: 'https://a.example/typed' } });
    expect(again.body.data.topics).toEqual(['negative_balance', 'balance_change']);
    const elsewhere = await c.call('POST', '/v1/webhooks', { body: { type: 'auto_refill', url: 'https://b.example/typed' } });
    expect(elsewhere.body.data.id).not.toBe(first.body.data.id);
    const list = await c.call('GET', '/webhooks');
    expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([elsewhere.body.data.id, first.body.data.id]);

    const collide = await c.call('PATCH', `/v1/companies/{company}/webhooks/${elsewhere.body.data.id}`, { body: { url: 'https://a.example/typed' } });
    expect(collide.status).toBe(409);
    expect(collide.body.error).toMatchObject({ type: 'conflict', param: 'url' });

    const bad: [unknown, string][] = [
      [{ url: 'https://a.example' }, 'type'],
      [{ type: 'payday', url: 'https://a.example' }, 'type'],
      [{ type: 'threshold' }, 'url'],
      [{ type: 'threshold', url: 'mailto:x@y.z' }, 'url'],
      [{ type: 'threshold', url: 'https://u:p@a.example' }, 'url'],
      [{ type: 'threshold', url: 'https://a.example', username: 'x' }, 'username'],
      // Indexed with its type: about 3000 bytes would pass a character limit and fail the index.
      [{ type: 'threshold', url: `https://a.example/${WIDE_PATH}` }, 'url'],
    ];
    for (const [body, param] of bad) {
      const r = await c.call('POST', '/v1/webhooks', { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param).toBe(param);
    }
  });

  it('refuses urls that point inside the network, in every spelling, on create, update and type registration', async () => {
    const c = await newCompany(t);
    const w = (await c.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://hooks.example.com/ok' } })).body.data;
    await withoutPrivateDestinations(async () => {
      for (const url of INTERNAL_URLS) {
        const calls: [string, string, unknown][] = [
          ['POST', '/v1/companies/{company}/webhooks', { url, username: 'u', password: 'p' }],
          ['PATCH', `/v1/companies/{company}/webhooks/${w.id}`, { url }],
          ['POST', '/v1/webhooks', { type: 'negative_balance', url }],
          ['POST', '/webhooks', { type: 'balance_change', url }],
        ];
        for (const [method, path, body] of calls) {
          const r = await c.call(method, path, { body });
          expect(r.status, `${method} ${path} ${url}`).toBe(400);
          expect(r.body.error).toMatchObject({ type: 'invalid_request', param: 'url' });
          expect(r.body.error.message).toMatch(/^url must not point to/);
        }
      }
      // the domain functions refuse them too, whoever calls them
      const db = t.database.db;
      await expect(createWebhook({ db, companyId: c.company.id, input: { url: 'http://127.1/' } })).rejects.toMatchObject({ type: 'invalid_request', param: 'url' });
      await expect(registerByType({ db, companyId: c.company.id, input: { type: 'threshold', url: 'http://[::1]/' } })).rejects.toMatchObject({ param: 'url' });
      await expect(updateWebhook({ db, companyId: c.company.id, webhookId: w.id, input: { url: 'http://2130706433/' } })).rejects.toMatchObject({ param: 'url' });
      // nothing was stored or changed
      const list = await c.call('GET', '/v1/webhooks?limit=1000');
      expect(list.body.data.map((x: { url: string }) => x.url)).toEqual(['https://hooks.example.com/ok']);

      for (const url of PUBLIC_URLS.slice(0, 4)) {
        const r = await c.call('PATCH', `/v1/companies/{company}/webhooks/${w.id}`, { body: { url } });
        expect(r.status, url).toBe(200);
      }
    });
    // where private destinations are allowed (development, the tests' own receivers) they register
    const local = await c.call('POST', '/v1/webhooks', { body: { type: 'threshold', url: 'http://127.0.0.1:4747/hook' } });
    expect(local.status).toBe(200);
  });

  it(`allows at most ${MAX_WEBHOOKS_PER_COMPANY} webhooks per company, also when registrations race`, async () => {
    const c = await newCompany(t);
    expect((await c.call('GET', '/v1/webhooks')).body.data).toEqual([]);
    const results = await Promise.all(
      Array.from({ length: MAX_WEBHOOKS_PER_COMPANY + 6 }, (_, i) =>
        i % 2 ? c.call('POST', '/v1/companies/{company}/webhooks', { body: { url: `https://hooks.example.com/${i}` } }) : c.call('POST', '/v1/webhooks', { body: { type: 'threshold', url: `https://hooks.example.com/${i}` } }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(MAX_WEBHOOKS_PER_COMPANY);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(6);
    for (const r of refused) {
      expect(r.status).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', message: `A company can have at most ${MAX_WEBHOOKS_PER_COMPANY} webhooks; delete one before registering another.` });
    }
    const [row] = await query<{ n: number }>(t.database.db, sql`select count(*)::int as n from webhooks where company_id = ${c.company.id}`);
    expect(Number(row.n)).toBe(MAX_WEBHOOKS_PER_COMPANY);

    // another type at a url already registered adds no webhook, so it is still accepted
    const typed = results.find((r, i) => r.status === 200 && i % 2 === 0)!.body.data;
    const more = await c.call('POST', '/v1/webhooks', { body: { type: 'payment_failed', url: typed.url } });
    expect(more.status).toBe(200);
    expect(more.body.data.id).toBe(typed.id);
    // other companies are not affected; deleting one makes room again
    expect((await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://hooks.example.com/elsewhere' } })).status).toBe(200);
    expect((await c.call('DELETE', `/v1/companies/{company}/webhooks/${typed.id}`)).status).toBe(200);
    expect((await c.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://hooks.example.com/again' } })).status).toBe(200);
    expect((await c.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://hooks.example.com/over' } })).status).toBe(400);
  });

  it('deletes a webhook and its subscriptions', async () => {
    const w = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://x.example/gone' } })).body.data;
    await co.call('POST', `/v1/companies/{company}/webhooks/${w.id}/subscribe/threshold`);
    const del = await co.call('DELETE', `/v1/companies/{company}/webhooks/${w.id}`);
    expect(del.status).toBe(200);
    expect(del.body.data).toMatchObject({ id: w.id, deleted: true, topics: ['threshold'] });
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}`)).status).toBe(404);
    expect((await co.call('DELETE', `/v1/companies/{company}/webhooks/${w.id}`)).status).toBe(404);
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}/subscriptions`)).status).toBe(404);
  });

  it("answers 404 for another company's webhooks and company id, on every endpoint", async () => {
    const theirs = (await other.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://other.example/h' } })).body.data;
    const mine = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://mine.example/h' } })).body.data;
    const base = `/v1/companies/{company}/webhooks/${theirs.id}`;
    const calls: [string, string, unknown?][] = [
      ['GET', base],
      ['PATCH', base, { url: 'https://evil.example' }],
      ['DELETE', base],
      ['POST', `${base}/subscribe/pause_balance`],
      ['DELETE', `${base}/subscribe/pause_balance`],
      ['GET', `${base}/subscriptions`],
      ['GET', `${base}/deliveries`],
      ['GET', `${base}/deliveries/whd_nope`],
      ['POST', `${base}/deliveries/whd_nope/retry`],
    ];
    for (const [method, path, body] of calls) {
      const r = await co.call(method, path, { body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error).toMatchObject({ type: 'not_found', param: 'webhook_id' });
    }
    const foreignCompany = `/v1/companies/${other.company.id}/webhooks`;
    for (const [method, path, body] of [
      ['GET', foreignCompany],
      ['POST', foreignCompany, { url: 'https://x.example' }],
      ['GET', `${foreignCompany}/${mine.id}`],
      ['POST', `${foreignCompany}/${mine.id}/subscribe/threshold`],
      ['GET', `${foreignCompany}/${mine.id}/deliveries`],
    ] as [string, string, unknown?][]) {
      const r = await co.call(method, path, { body });
      expect(r.status, `${method} ${path}`).toBe(404);
      expect(r.body.error.param).toBe('company_id');
    }
    // theirs is untouched and not in my lists
    expect((await other.call('GET', `/v1/companies/{company}/webhooks/${theirs.id}`)).body.data.url).toBe('https://other.example/h');
    expect((await co.call('GET', '/v1/webhooks?limit=1000')).body.data.map((w: { id: string }) => w.id)).not.toContain(theirs.id);
  });

  it('validates the deliveries list and the retry call', async () => {
    const w = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'https://x.example/d' } })).body.data;
    const empty = await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}/deliveries`);
    expect(empty.status).toBe(200);
    expect(empty.body.data).toEqual([]);
    for (const q of ['limit=0', 'limit=1001', 'limit=x', 'status=lost', 'colour=red']) {
      const r = await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}/deliveries?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.error.param).toBe(q.split('=')[0]);
    }
    const missing = await co.call('POST', `/v1/companies/{company}/webhooks/${w.id}/deliveries/whd_nope/retry`);
    expect(missing.status).toBe(404);
    expect(missing.body.error.param).toBe('delivery_id');
    expect((await co.call('GET', `/v1/companies/{company}/webhooks/${w.id}/deliveries/whd_nope`)).body.error.param).toBe('delivery_id');
  });

  it('needs authentication', async () => {
    const { api } = await import('../../testing/harness');
    const r = await api('GET', '/v1/webhooks', { auth: null });
    expect(r.status).toBe(401);
    const bad = await api('POST', '/v1/webhooks', { auth: { companyId: co.company.id, apiKey: 'wrong' }, body: { type: 'threshold', url: 'https://x.example' } });
    expect(bad.status).toBe(401);
  });
});
