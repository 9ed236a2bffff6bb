process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
process.env.STRIPE_TIMEOUT_MS = '10000';

import { describe, expect, it } from 'vitest';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { advance, createPlan } from '../../testing/scenario';

const t = useTestDatabase();
const local = useLocalStripe();

describe('account creation taken over by a retry', () => {
  it('a request stalled past a minute whose Idempotency-Key a retry took over charges nothing and leaves no account: one payment, one account', async () => {
    const co = await newPayingCompany(t);
    const plan = await createPlan(co, { name: 'Pro', charge_amount: 2000, billing_period: 'month', balances: [{ amount: 10, denomination: 'tokens' }] });
    const body = { name: 'Ada', email: 'ada@x.io', plan_id: plan.id, token: 'tok_visa' };
    const headers = { 'Idempotency-Key': 'create-ada-once' };
    // The first run stalls on its processor customer (held until released)...
    await local.control('fail', { hold: true, count: 1, path_prefix: '/v1/customers', method: 'POST' });
    const stalled = co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    for (let i = 0; i < 200 && (await local.control('state')).pending_failures.length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    // ...while more than a minute passes on the service's clock: its key looks abandoned.
    await advance(120);
    const retry = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data.plan_status).toBe('ACTIVE');
    expect((await local.control('release', {})).released).toBe(1);
    const first = await stalled;
    expect(first.status, JSON.stringify(first.body)).toBe(409);
    expect(first.body.error.account_id).toBe(retry.body.data.id);
    const list = (await co.call('GET', '/v1/companies/{company}/accounts')).body.data as { id: string }[];
    expect(list.map((a) => a.id)).toEqual([retry.body.data.id]);
    expect((await local.control(`state?key=${co.processorKey}`)).account.payment_intents).toBe(1);
  });
});
