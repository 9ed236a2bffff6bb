process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { beforeAll, describe, expect, it } from 'vitest';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { setTestTime } from '../../clock';
import { advance, advanceTo, charges, createAccount, createPlan } from '../../testing/scenario';

const t = useTestDatabase();
useLocalStripe();

const at = (y: number, m: number, d: number, h = 9) => new Date(Date.UTC(y, m - 1, d, h));

beforeAll(async () => {
  setTestTime(at(2027, 1, 31).getTime());
  await advance(0);
});

describe('a plan switched at a renewal', () => {
  it('keeps renewing on the day of the month it started, as a plan never switched does', async () => {
    const co = await newPayingCompany(t);
    const pro = await createPlan(co, { name: 'Pro', charge_amount: 2000, billing_period: 'month', balances: [{ amount: 100, denomination: 'tokens' }] });
    const basic = await createPlan(co, { name: 'Basic', charge_amount: 1000, billing_period: 'month', balances: [{ amount: 10, denomination: 'tokens' }] });
    const yearly = await createPlan(co, { name: 'Yearly', charge_amount: 500, billing_period: 'year', balances: [{ amount: 5, denomination: 'tokens' }] });
    const [switched, kept, toYearly] = [await createAccount(co, { plan_id: pro.id, token: 'tok_visa' }), await createAccount(co, { plan_id: pro.id, token: 'tok_visa' }), await createAccount(co, { plan_id: pro.id, token: 'tok_visa' })];
    // Cheaper plans: scheduled for the renewal due on Feb 28.
    expect((await co.call('POST', `/v1/accounts/${switched}/changeplan`, { body: { plan_id: basic.id } })).body.data.scheduled_plan_id).toBe(basic.id);
    expect((await co.call('POST', `/v1/accounts/${toYearly}/changeplan`, { body: { plan_id: yearly.id } })).body.data.scheduled_plan_id).toBe(yearly.id);
    await advanceTo(at(2027, 6, 1));
    const renewalDays = async (id: string) =>
      ((await charges(co, id)) as unknown as { reason: string; created_at: string }[])
        .filter((c) => c.reason === 'plan_renewal')
        .map((c) => c.created_at.slice(0, 10))
        .reverse();
    expect(await renewalDays(kept)).toEqual(['2027-02-28', '2027-03-31', '2027-04-30', '2027-05-31']);
    expect(await renewalDays(switched)).toEqual(['2027-02-28', '2027-03-31', '2027-04-30', '2027-05-31']);
    expect((await co.call('GET', `/v1/accounts/${switched}`)).body.data).toMatchObject({ plan_id: basic.id, next_plan_renewal: at(2027, 6, 30).toISOString() });
    // Another period length starts its own cadence at the switch.
    expect(await renewalDays(toYearly)).toEqual(['2027-02-28']);
    expect((await co.call('GET', `/v1/accounts/${toYearly}`)).body.data).toMatchObject({ plan_id: yearly.id, next_plan_renewal: at(2028, 2, 28).toISOString() });
  });
});
