process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
process.env.STRIPE_TIMEOUT_MS = '1500';

import { describe, expect, it } from 'vitest';
import { query, sql } from '../../db/client';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { advance, charges, createPlan, type PayingCo } from '../../testing/scenario';

// Nothing a charge pays for is deleted while the charge is or may be paid.

const t = useTestDatabase();
const local = useLocalStripe();
const intents = async (co: PayingCo) => (await local.control(`state?key=${co.processorKey}`)).account.payment_intents as number;

describe('deletions that would leave a paid charge without its credit', () => {
  it('an account whose first plan charge is declined stays while a deposit on it is pending, and the deposit is credited', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Pro', charge_amount: 2000, billing_period: 'month', balances: [{ amount: 10, denomination: 'tokens' }] });
    const body = { name: 'Ada', email: 'ada@x.io', plan_id: plan.id, token: 'tok_visa' };
    const headers = { 'Idempotency-Key': 'create-ada' };
    // The plan charge's outcome is not known (a 500 before anything was done).
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const first = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    const id = first.body.error.account_id as string;
    // Meanwhile the company deposits on the account; its payment is still processing.
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const dep = await co.call('POST', `/v1/accounts/${id}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 70, amount_to_charge: 700 } });
    expect(dep.status, JSON.stringify(dep.body)).toBe(502);
    // The creation's retry learns the plan charge is declined: the account is not taken back.
    await local.control('fail', { status: 402, type: 'card_error', code: 'card_declined', count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const retry = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    expect(retry.status, JSON.stringify(retry.body)).toBe(402);
    const account = await co.call('GET', `/v1/accounts/${id}`);
    expect(account.status).toBe(200);
    expect(account.body.data.plan_status).toBe('NONE');
    // The deposit's payment goes through: it is credited.
    const deposit = (await charges(co, id)).find((c) => c.reason === 'deposit')!;
    expect((await fetch(`${local.url}/__control/payment_intents/${deposit.processor_payment_intent_id}/complete`, { method: 'POST' })).status).toBe(200);
    await advance(3600);
    expect((await charges(co, id)).find((c) => c.reason === 'deposit')).toMatchObject({ status: 'succeeded' });
    expect((await co.call('GET', `/v1/accounts/${id}/balance/credits`)).body.data.amount).toBe(70);
  });

  it("a monthly refill's new balance stays when settling its paid charge failed, and the settlement credits it later", async () => {
    const co = await newPayingCompany(t);
    const r = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Bo', email: 'bo@x.io', token: 'tok_visa' } });
    const id = r.body.data.id as string;
    // The database refuses the first ledger row of the settlement (as a failover mid-transaction would).
    for (const statement of [
      'create sequence settle_faults',
      `create function fail_first_gem_row() returns trigger language plpgsql as $$
        begin
          if new.denomination = 'gems' and nextval('settle_faults') = 1 then raise exception 'injected fault'; end if;
          return new;
        end $$`,
      'create trigger fail_first_gem_row before insert on transactions for each row execute function fail_first_gem_row()',
    ]) {
      await query(t.database.db, sql.raw(statement));
    }
    const set = await co.call('PUT', `/v1/accounts/${id}/balance/gems/auto_refill`, { body: { amount: 50, usd_charge: 500, refill_period: 'monthly' } });
    expect(set.status).toBe(500);
    expect(await intents(co)).toBe(1);
    expect((await charges(co, id)).map((c) => c.status)).toEqual(['pending']);
    await advance(120);
    expect((await charges(co, id)).map((c) => c.status)).toEqual(['succeeded']);
    expect((await co.call('GET', `/v1/accounts/${id}/balance/gems`)).body.data).toMatchObject({ amount: 50, refill_amount: 50, refill_usd_amount: 500 });
    expect(await intents(co)).toBe(1);
  });
});
