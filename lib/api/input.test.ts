import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { query } from '../db/client';
import { api, newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../testing/harness';
import { buildOpenApiDocument } from './openapi/document';

process.env.ADMIN_TOKEN = 'input-admin-token';

const t = useTestDatabase();
useLocalStripe();

/** Row counts of what the calls below could write. */
async function counts() {
  const [row] = await query<Record<string, string>>(
    t.database.db,
    sql`select (select count(*) from accounts)::text as accounts, (select count(*) from events)::text as events, (select count(*) from charges)::text as charges,
      (select count(*) from balances)::text as balances, (select count(*) from plans)::text as plans, (select count(*) from companies)::text as companies`,
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

describe('a field of the wrong type', () => {
  it('is named as such, not as missing; a missing one is required', async () => {
    const co = await newCompany(t);
    const account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@example.com' } })).body.data.id;
    const cases: [string, string, unknown, string, string][] = [
      ['POST', '/v1/companies/{company}/accounts', { name: 123, email: 'a@b.co' }, 'name', 'name must be a string.'],
      ['POST', '/v1/companies/{company}/accounts', { email: 'a@b.co' }, 'name', 'name is required.'],
      ['PATCH', `/v1/accounts/${account}`, { external_id: 5 }, 'external_id', 'external_id'],
      ['POST', `/v1/accounts/${account}/events`, { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits', gate_on_balance: 'yes' }, 'gate_on_balance', 'gate_on_balance'],
      ['POST', '/v1/companies/{company}/plans', { name: 'P', balances: {} }, 'balances', 'balances must be an array.'],
      ['POST', '/v1/companies/{company}/accounts', null, null as unknown as string, 'body must be an object.'],
    ];
    for (const [method, path, body, param, message] of cases) {
      const r = await co.call(method, path, { raw: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(r.body.error.param).toBe(param);
      expect(r.body.error.message, JSON.stringify(body)).toContain(message);
      if (param && !message.endsWith('is required.')) expect(r.body.error.message).not.toMatch(/is required/);
    }
    const limit = await co.call('GET', '/v1/companies/{company}/plans?limit=abc');
    expect(limit.status).toBe(400);
    expect(limit.body.error.message).not.toMatch(/is required/);
  });
});

describe('numbers a 64-bit float cannot hold', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
  let account: string;
  beforeAll(async () => {
    co = await newCompany(t);
    account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Exact', email: 'exact@example.com' } })).body.data.id;
  });
  const send = (method: string, path: string, raw: string) => co.call(method, path, { raw, headers: { 'content-type': 'application/json' } });
  const stored = async (denomination: string) =>
    (await query<{ amount: string }>(t.database.db, sql`select amount::text as amount from balances where account_id = ${account} and denomination = ${denomination}`))[0]?.amount;

  it('are units read exactly as sent, not rounded first', async () => {
    const made = await send('POST', `/v1/accounts/${account}/balance/big`, '{"amount": 12345678901234567}');
    expect(made.status).toBe(200);
    expect(await stored('big')).toBe('12345678901234567');
    const spent = await send('POST', `/v1/accounts/${account}/events`, '{"type":"q","cost_override_amount":0.000000000001,"cost_override_denomination":"big"}');
    expect(spent.status).toBe(200);
    expect(await stored('big')).toBe('12345678901234566.999999999999');
  });

  it('are judged as sent: more than 12 decimals, or beyond the range, are 400 on the field', async () => {
    const before = await counts();
    const cases: [string, string, string, string][] = [
      ['POST', `/v1/accounts/${account}/balance/tiny`, '{"amount": 0.1000000000000000001}', 'amount'],
      ['POST', `/v1/accounts/${account}/balance/tiny`, '{"amount": 1e-400}', 'amount'],
      ['POST', `/v1/accounts/${account}/events`, '{"type":"q","cost_override_amount":0.10000000000000001,"cost_override_denomination":"big"}', 'cost_override_amount'],
      ['POST', '/v1/events', `[{"account_id":"${account}","type":"q","cost_override_amount":1e400,"cost_override_denomination":"big"}]`, '[0].cost_override_amount'],
      ['POST', '/v1/companies/{company}/plans', '{"name":"P","charge_amount":12345678901234567}', 'charge_amount'],
      ['POST', '/v1/companies/{company}/plans', '{"name":"P","charge_amount":100.00000000000000001}', 'charge_amount'],
    ];
    for (const [method, path, raw, param] of cases) {
      const res = await send(method, path, raw);
      expect(res.status, raw).toBe(400);
      expect(res.body.error, raw).toMatchObject({ type: 'invalid_request', param });
    }
    expect(await counts()).toEqual(before);
    expect(await stored('big')).toBe('12345678901234566.999999999999');
  });

  it('are refused in metadata, which is stored as sent, and numbers a double holds are kept', async () => {
    const before = await counts();
    for (const [value, param] of [['1e400', 'metadata.x'], ['12345678901234567', 'metadata.x'], ['[1, 0.30000000000000001]', 'metadata.x[1]']]) {
      const raw = `{"name":"M","email":"m@example.com","metadata":{"x":${value}}}`;
      const res = await send('POST', '/v1/companies/{company}/accounts', raw);
      expect(res.status, raw).toBe(400);
      expect(res.body.error, raw).toMatchObject({ type: 'invalid_request', param });
      expect(res.body.error.message, raw).toContain('send it as a string');
    }
    expect(await counts()).toEqual(before);
    const fine = await send('POST', '/v1/companies/{company}/accounts', '{"name":"M","email":"m@example.com","metadata":{"x":[0.1,1e21,9007199254740992,-0.5]}}');
    expect(fine.status).toBe(200);
    expect(fine.body.data.metadata.x).toEqual([0.1, 1e21, 9007199254740992, -0.5]);
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

describe('charges beyond what one card payment can be', () => {
  let co: Awaited<ReturnType<typeof newPayingCompany>>;
  let account: string;
  beforeAll(async () => {
    co = await newPayingCompany(t);
    account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Rich', email: 'rich@example.com', token: 'tok_visa' } })).body.data.id;
  });

  it('are refused with 400 on the field, before the processor is asked (not a 502)', async () => {
    const before = await counts();
    const cases: [string, string, unknown, string][] = [
      ['POST', `/v1/accounts/${account}/deposit`, { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 100_000_000 }, 'amount_to_charge'],
      ['PUT', `/v1/accounts/${account}/balance/credits/auto_refill`, { amount: 1, usd_charge: '100000000', refill_period: 'monthly' }, 'usd_charge'],
      ['POST', `/v1/accounts/${account}/modifymidmonth`, { denomination: 'credits', amount: 1, usd_charge: 1e12 }, 'usd_charge'],
      ['POST', '/v1/companies/{company}/plans', { name: 'Huge', charge_amount: 100_000_000 }, 'charge_amount'],
      ['POST', '/v1/companies/{company}/plans', { name: 'Huge overage', balances: [{ amount: 1, denomination: 'gb', overage_charge_amount: 9_007_199_254_740_991 }] }, 'balances[0].overage_charge_amount'],
      // Its two names for one field, disagreeing.
      ['POST', `/v1/accounts/${account}/deposit`, { denomination: 'credits', charge_against_denomination: 'tokens', amount_to_deposit: 1 }, 'charge_against_denomination'],
    ];
    for (const [method, path, body, param] of cases) {
      const res = await co.call(method, path, { body });
      expect(res.status, param).toBe(400);
      expect(res.body.error).toMatchObject({ type: 'invalid_request', param });
    }
    const seats = (await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Seats', balances: [{ amount: 1, denomination: 'seats', variable_unit_price: 100 }] } })).body.data.id;
    const before2 = await counts();
    const huge = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'S', email: 's@example.com', token: 'tok_visa', plan_id: seats, plan_variable_amounts: { seats: 10_000_000 } } });
    expect(huge.status).toBe(400);
    expect(huge.body.error.param).toBe('plan_variable_amounts');
    const change = await co.call('POST', `/v1/accounts/${account}/changeplan`, { body: { plan_id: seats, plan_variable_amounts: { seats: '1e7' } } });
    expect(change.status).toBe(400);
    expect(change.body.error.param).toBe('plan_variable_amounts');
    expect(await counts()).toEqual(before2);
    expect({ ...before2, plans: before.plans }).toEqual(before);
  });

  it('take the largest payment there is', async () => {
    const res = await co.call('POST', `/v1/accounts/${account}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 1, amount_to_charge: 99_999_999 } });
    expect(res.status).toBe(200);
    expect(res.body.data.amount).toBe(1);
  });
});
