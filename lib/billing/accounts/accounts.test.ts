import { beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { createAccount, getAccount, type Co } from '../../testing/scenario';

const t = useTestDatabase();

describe('accounts', () => {
  let co: Co;
  beforeAll(async () => {
    co = await newCompany(t);
  });

  it('creates, reads, lists and updates an account with every interface field', async () => {
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ada', email: 'ada@example.com', metadata: { tier: 'gold', n: 1 }, billing_address_id: 'addr_1' } });
    expect(created.status).toBe(200);
    const a = created.body.data;
    for (const field of ['id', 'name', 'email', 'company_id', 'plan_id', 'plan_renewal_cadence', 'billing_address_id', 'processor_id', 'created_at', 'updated_at', 'metadata', 'last_plan_renewal', 'next_plan_renewal', 'plan_status', 'flags']) {
      expect(a, field).toHaveProperty(field);
    }
    expect(a).toMatchObject({ name: 'Ada', email: 'ada@example.com', company_id: co.company.id, plan_id: null, plan_status: 'NONE', plan_renewal_cadence: 'MONTHLY', flags: [], metadata: { tier: 'gold', n: 1 }, billing_address_id: 'addr_1' });
    expect(a.id).toMatch(/^a_/);
    expect(new Date(a.created_at).toISOString()).toBe(a.created_at);
    const read = await co.call('GET', `/accounts/${a.id}`);
    expect(read.body.data).toEqual(a);
    const patched = await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { name: 'Ada L.', metadata: { tier: 'platinum' } } });
    expect(patched.body.data).toMatchObject({ name: 'Ada L.', email: 'ada@example.com', metadata: { tier: 'platinum' } });
    const found = await co.call('GET', '/v1/companies/{company}/accounts?search=ada%20l');
    expect(found.body.data.map((x: { id: string }) => x.id)).toContain(a.id);
  });

  it('refuses bad account input with the field named', async () => {
    const cases: [unknown, string][] = [
      [{ email: 'a@b.io' }, 'name'],
      [{ name: 'A' }, 'email'],
      [{ name: '', email: 'a@b.io' }, 'name'],
      [{ name: 'A', email: 'nope' }, 'email'],
      [{ name: ['A'], email: 'a@b.io' }, 'name'],
      [{ name: 'A', email: 'a@b.io', metadata: 'x' }, 'metadata'],
      [{ name: 'A', email: 'a@b.io', plan_id: 'plan_1' }, 'plan_id'],
      [{ name: 'A', email: 'a@b.io', plan_id: 'p_missing' }, 'plan_id'],
      [{ name: 'A', email: 'a@b.io', enable_card_collector: 'yes' }, 'enable_card_collector'],
      [{ name: 'A', email: 'a@b.io', plan_variable_amounts: { seats: 3 } }, 'plan_variable_amounts'],
      [{ name: 'A', email: 'a@b.io', token: 7 }, 'token'],
      [{ name: 'A', email: 'a@b.io', nickname: 'x' }, 'nickname'],
    ];
    for (const [body, param] of cases) {
      const r = await co.call('POST', '/v1/companies/{company}/accounts', { body });
      expect([400, 404], JSON.stringify(body)).toContain(r.status);
      expect(r.body.error.param, JSON.stringify(body)).toBe(param);
    }
    const a = await getAccount(co, await createAccount(co, { name: 'A', email: 'a@b.io' }));
    expect((await co.call('PATCH', `/v1/accounts/${a.id}`, { body: {} })).status).toBe(400);
    expect((await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { email: 'bad' } })).body.error.param).toBe('email');
    expect((await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { plan_id: 'p_x' } })).body.error.param).toBe('plan_id');
    const other = await newCompany(t);
    expect((await other.call('GET', `/v1/accounts/${a.id}`)).status).toBe(404);
    expect((await other.call('PATCH', `/v1/accounts/${a.id}`, { body: { name: 'Stolen' } })).status).toBe(404);
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data.name).toBe('A');
    expect((await other.call('POST', `/v1/companies/${co.company.id}/accounts`, { body: { name: 'X', email: 'x@x.io' } })).status).toBe(404);
  });
});

describe("external_id: the company's own id for an account", () => {
  let co: Co;
  beforeAll(async () => {
    co = await newCompany(t);
  });
  const create = (body: Record<string, unknown>) => co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Cust', email: 'cust@example.com', ...body } });
  const lookup = async (externalId: string, who = co) => (await who.call('GET', `/v1/companies/{company}/accounts?external_id=${encodeURIComponent(externalId)}`)).body;
  const count = async () => (await co.call('GET', '/v1/companies/{company}/accounts?limit=1000')).body.data.length as number;

  it('is set at creation, answered everywhere, found in one call and changed with PATCH', async () => {
    const a = (await create({ external_id: 'crm-1001' })).body.data;
    expect(a.external_id).toBe('crm-1001');
    expect((await co.call('GET', `/v1/accounts/${a.id}`)).body.data.external_id).toBe('crm-1001');
    const plain = (await create({})).body.data;
    expect(plain.external_id).toBeNull();
    expect(plain).toHaveProperty('external_id');

    const found = await lookup('crm-1001');
    expect(found).toEqual({ data: [{ ...a }], has_more: false });
    expect((await lookup('crm-1001 ')).data).toEqual([]); // exact, as stored
    expect((await lookup('CRM-1001')).data).toEqual([]);

    const patched = (await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { external_id: 'crm-2002' } })).body.data;
    expect(patched.external_id).toBe('crm-2002');
    expect((await lookup('crm-1001')).data).toEqual([]);
    expect((await lookup('crm-2002')).data.map((x: { id: string }) => x.id)).toEqual([a.id]);
    // Other fields alone leave it as it is.
    expect((await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { name: 'Renamed' } })).body.data.external_id).toBe('crm-2002');
    // Searchable (as the console's account list searches): part of it, any case.
    const searched = (await co.call('GET', '/v1/companies/{company}/accounts?search=RM-20')).body.data.map((x: { id: string }) => x.id);
    expect(searched).toEqual([a.id]);
  });

  it('is cleared with null or an empty string, and a cleared id can be taken by another account', async () => {
    const a = (await create({ external_id: 'crm-clear' })).body.data;
    expect((await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { external_id: null } })).body.data.external_id).toBeNull();
    expect((await lookup('crm-clear')).data).toEqual([]);
    const b = (await create({ external_id: 'crm-clear' })).body.data;
    expect(b.external_id).toBe('crm-clear');
    expect((await co.call('PATCH', `/v1/accounts/${b.id}`, { body: { external_id: '' } })).body.data.external_id).toBeNull();
    expect((await co.call('GET', `/v1/accounts/${b.id}`)).body.data.external_id).toBeNull();
    expect((await create({ external_id: '' })).body.data.external_id).toBeNull();
    expect((await create({ external_id: null })).body.data.external_id).toBeNull();
  });

  it('is unique per company: a duplicate is 409 naming it and stores nothing; other companies may use the same id', async () => {
    const a = (await create({ external_id: 'crm-dup' })).body.data;
    const before = await count();
    const dup = await create({ name: 'Second', external_id: 'crm-dup' });
    expect(dup.status).toBe(409);
    expect(dup.body.error).toMatchObject({ type: 'conflict', param: 'external_id' });
    expect(dup.body.error.message).toContain('crm-dup');
    expect(await count()).toBe(before);

    const b = (await create({ external_id: 'crm-other' })).body.data;
    const taken = await co.call('PATCH', `/v1/accounts/${b.id}`, { body: { external_id: 'crm-dup', name: 'Changed' } });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toMatchObject({ type: 'conflict', param: 'external_id' });
    expect((await co.call('GET', `/v1/accounts/${b.id}`)).body.data).toMatchObject({ external_id: 'crm-other', name: 'Cust' });
    // Setting an account's own id again is no conflict.
    expect((await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { external_id: 'crm-dup' } })).status).toBe(200);

    const other = await newCompany(t);
    const theirs = await other.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Theirs', email: 't@example.com', external_id: 'crm-dup' } });
    expect(theirs.status).toBe(200);
    expect((await lookup('crm-dup', other)).data.map((x: { id: string }) => x.id)).toEqual([theirs.body.data.id]);
    expect((await lookup('crm-dup')).data.map((x: { id: string }) => x.id)).toEqual([a.id]);
  });

  it('holds under concurrency: of racing requests for one id exactly one wins (a database constraint)', async () => {
    const creates = await Promise.all(Array.from({ length: 6 }, (_, i) => create({ name: `Racer ${i}`, external_id: 'crm-race' })));
    expect(creates.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    for (const r of creates.filter((x) => x.status === 409)) expect(r.body.error.param).toBe('external_id');
    expect((await lookup('crm-race')).data).toHaveLength(1);

    const accounts = await Promise.all(Array.from({ length: 4 }, (_, i) => create({ name: `Patcher ${i}` })));
    const patches = await Promise.all(accounts.map((r) => co.call('PATCH', `/v1/accounts/${r.body.data.id}`, { body: { external_id: 'crm-race-patch' } })));
    expect(patches.map((r) => r.status).sort()).toEqual([200, 409, 409, 409]);
    expect((await lookup('crm-race-patch')).data).toHaveLength(1);
  });

  it('refuses bad values with the field named', async () => {
    expect((await create({ external_id: 'x'.repeat(255) })).status).toBe(200);
    for (const bad of ['x'.repeat(256), 42, ['a'], { id: 'a' }]) {
      const r = await create({ external_id: bad });
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.error.param).toBe('external_id');
    }
    const a = (await create({})).body.data;
    const r = await co.call('PATCH', `/v1/accounts/${a.id}`, { body: { external_id: 'y'.repeat(256) } });
    expect(r.status).toBe(400);
    expect(r.body.error.param).toBe('external_id');
    const empty = await co.call('GET', '/v1/companies/{company}/accounts?external_id=');
    expect(empty.status).toBe(400);
    expect(empty.body.error.param).toBe('external_id');
  });
});
