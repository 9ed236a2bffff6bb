import { beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';

const t = useTestDatabase();

describe('accounts', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
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
    const a = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@b.io' } })).body.data;
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
