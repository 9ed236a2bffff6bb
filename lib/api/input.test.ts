import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { query } from '../db/client';
import { api, newCompany, useTestDatabase } from '../testing/harness';
import { buildOpenApiDocument } from './openapi/document';

process.env.ADMIN_TOKEN = 'input-admin-token';

const t = useTestDatabase();

/** Row counts of what the calls below could write. */
async function counts() {
  const [row] = await query<Record<string, string>>(
    t.database.db,
    sql`select (select count(*) from accounts)::text as accounts, (select count(*) from events)::text as events, (select count(*) from charges)::text as charges,
      (select count(*) from balances)::text as balances, (select count(*) from companies)::text as companies`,
  );
  return row;
}

describe('input that cannot be stored as sent', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
  let account: string;
  beforeAll(async () => {
    co = await newCompany(t);
    account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@example.com' } })).body.data.id;
  });

  it('refuses NUL and unpaired surrogates in body strings and keys with 400 on the field, and stores nothing', async () => {
    const before = await counts();
    const cases: [string, string, unknown, string][] = [
      ['POST', '/v1/companies/{company}/accounts', { name: 'a\u0000b', email: 'x@example.com' }, 'name'],
      ['POST', '/v1/companies/{company}/accounts', { name: 'A', email: 'x@example.com', metadata: { note: 'x\ud800' } }, 'metadata.note'],
      ['POST', '/v1/companies/{company}/accounts', { name: 'A', email: 'x@example.com', metadata: { deep: [{ v: '\udc00' }] } }, 'metadata.deep[0].v'],
      ['POST', '/v1/companies/{company}/accounts', { name: 'A', email: 'x@example.com', metadata: { 'k\u0000': 1 } }, 'metadata.k\u0000'],
      ['POST', `/v1/accounts/${account}/events`, { type: 'q\u0000' }, 'type'],
      ['POST', '/v1/events', [{ account_id: account, type: 'q', metadata: { a: '\ud83d' } }], '[0].metadata.a'],
    ];
    for (const [method, path, body, param] of cases) {
      const res = await co.call(method, path, { body });
      expect(res.status, `${path} ${param}`).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request', param });
    }
    expect(await counts()).toEqual(before);
    // A surrogate pair is one character, stored and returned as sent.
    const ok = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Smile 🙂', email: 's@example.com', metadata: { face: '🙂' } } });
    expect(ok.status).toBe(200);
    expect([ok.body.data.name, ok.body.data.metadata.face]).toEqual(['Smile 🙂', '🙂']);
  });

  it('refuses NUL in path and query parameters with 400, never a 500', async () => {
    for (const path of ['/v1/accounts/a%00b', '/v1/accounts/a%00b/balances', `/v1/accounts/${account}/balance/cr%00edits`]) {
      const res = await co.call('GET', path);
      expect(res.status, path).toBe(400);
      expect(res.body.error.type).toBe('invalid_request');
    }
    const patch = await co.call('PATCH', '/v1/accounts/a%00b', { body: { name: 'B' } });
    expect(patch.body.error).toMatchObject({ type: 'invalid_request', param: 'account_id' });
    const listed = await co.call('GET', '/v1/companies/{company}/events?type=%00');
    expect(listed.status).toBe(400);
    expect(listed.body.error.param).toBe('type');
  });

  it('refuses bodies nested deeper than 64 levels with 400, however deep, and takes 60', async () => {
    const nest = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    for (const depth of [70, 10_000, 200_000]) {
      const raw = `{"name":"Deep","email":"d@example.com","metadata":{"x":${nest(depth)}}}`;
      const res = await co.call('POST', '/v1/companies/{company}/accounts', { raw, headers: { 'content-type': 'application/json' } });
      expect(res.status, String(depth)).toBe(400);
      expect(res.body.error.message).toBe('The request nests deeper than 64 levels.');
    }
    const objects = '{"a":'.repeat(50_000) + '1' + '}'.repeat(50_000);
    const res = await co.call('PATCH', `/v1/accounts/${account}`, { raw: `{"metadata":${objects}}`, headers: { 'content-type': 'application/json' } });
    expect(res.status).toBe(400);
    const fine = await co.call('POST', '/v1/companies/{company}/accounts', {
      raw: `{"name":"Nested","email":"n@example.com","metadata":{"x":${nest(60)}}}`,
      headers: { 'content-type': 'application/json' },
    });
    expect(fine.status).toBe(200);
  });
});

describe('Idempotency-Key where it is not used', () => {
  it('is ignored on reads, public ones included, and still checked where it is honoured', async () => {
    const co = await newCompany(t);
    for (const [path, auth] of [['/v1/openapi.json', null], ['/health', null], ['/v1/companies', co.auth]] as const) {
      for (const key of ['', 'k'.repeat(300)]) {
        const res = await api('GET', path, { auth, headers: { 'idempotency-key': key } });
        expect(res.status, `${path} ${key.length}`).toBe(200);
      }
    }
    const post = await co.call('POST', '/v1/companies/{company}/api_keys', { headers: { 'idempotency-key': '' } });
    expect(post.status).toBe(400);
    expect(post.body.error.param).toBe('Idempotency-Key');
  });

  it("documents the operator's 409 for a key reused with another body", async () => {
    const headers = { 'idempotency-key': 'register-1' };
    const first = await api('POST', '/v1/companies', { auth: 'admin', headers, body: { name: 'One', email: 'one@example.com' } });
    expect(first.status).toBe(200);
    const again = await api('POST', '/v1/companies', { auth: 'admin', headers, body: { name: 'Two', email: 'two@example.com' } });
    expect(again.status).toBe(409);
    expect(again.body.error.type).toBe('conflict');
    const op = buildOpenApiDocument().paths['/v1/companies'].post;
    expect(op['x-error-types']).toContain('conflict');
    expect(op.responses['409']).toBeTruthy();
    expect(op.parameters.map((p: { $ref?: string }) => p.$ref)).toContain('#/components/parameters/IdempotencyKey');
  });
});
