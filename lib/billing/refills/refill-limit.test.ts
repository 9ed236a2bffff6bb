process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { describe, expect, it } from 'vitest';
import { newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { addUnits, advanceTo, balance, charges, createAccount, spend, topicWebhook, useWebhookRecorder } from '../../testing/scenario';

const t = useTestDatabase();
const local = useLocalStripe();
const startReceiver = useWebhookRecorder();

const runWorker = () => advanceTo(now().getTime());

describe('max_charges_per_month on a threshold refill', () => {
  it('charges at most that many threshold refills in a calendar month, sends refill_limit_reached once, and refills again the next month', async () => {
    setTestTime(Date.UTC(2027, 2, 20, 12));
    const co = await newPayingCompany(t);
    const rec = await startReceiver();
    await topicWebhook(co, rec.url, ['refill_limit_reached', 'auto_refill']);
    const a = await createAccount(co, { token: 'tok_visa' });
    await addUnits(co, a, 30);
    const set = await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body: { amount: 10, usd_charge: 500, threshold: 20, max_charges_per_month: 2 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toMatchObject({ refill_threshold: 20, refill_amount: 10, refill_max_charges_per_month: 2 });

    const crossAndRun = async () => {
      // Above the threshold, then below it: one crossing.
      const b = await balance(co, a);
      if (b.amount < 20) await addUnits(co, a, 25 - b.amount);
      await spend(co, a, 12);
      await runWorker();
    };
    await crossAndRun();
    await crossAndRun();
    expect((await charges(co, a)).map((c) => [c.reason, c.status])).toEqual([
      ['refill_threshold', 'succeeded'],
      ['refill_threshold', 'succeeded'],
    ]);
    // The third crossing this month: nothing charged, refill_limit_reached once.
    await crossAndRun();
    await crossAndRun();
    expect(await charges(co, a)).toHaveLength(2);
    expect((await local.control(`state?key=${co.processorKey}`)).account.payment_intents).toBe(2);
    await runWorker();
    const limited = rec.requests.filter((q) => q.json.topic === 'refill_limit_reached');
    expect(limited).toHaveLength(1);
    expect(limited[0].json).toMatchObject({ account_id: a, denomination: 'credits', data: { max_charges_per_month: 2, month: '2027-03-01T00:00:00.000Z' } });

    // April: refills are charged again, up to two.
    setTestTime(Date.UTC(2027, 3, 1, 0, 0, 5));
    await runWorker();
    await crossAndRun();
    expect(await charges(co, a)).toHaveLength(3);
    await crossAndRun();
    await crossAndRun();
    expect(await charges(co, a)).toHaveLength(4);
    await runWorker();
    expect(rec.requests.filter((q) => q.json.topic === 'refill_limit_reached').map((q) => q.json.data.month)).toEqual(['2027-03-01T00:00:00.000Z', '2027-04-01T00:00:00.000Z']);

    // Set again without the limit: no cap.
    const off = await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body: { amount: 10, usd_charge: 500, threshold: 20 } });
    expect(off.body.data.refill_max_charges_per_month).toBeNull();
    await crossAndRun();
    expect(await charges(co, a)).toHaveLength(5);
  });

  it('bad values name max_charges_per_month and change nothing', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    await addUnits(co, a, 30);
    const ok = await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body: { amount: 10, usd_charge: 500, threshold: 5, max_charges_per_month: 3 } });
    expect(ok.status).toBe(200);
    for (const body of [
      { amount: 10, usd_charge: 500, threshold: 20, max_charges_per_month: 0 },
      { amount: 10, usd_charge: 500, threshold: 20, max_charges_per_month: 1.5 },
      { amount: 10, usd_charge: 500, threshold: 20, max_charges_per_month: '2' },
      { amount: 10, usd_charge: 500, refill_period: 'monthly', max_charges_per_month: 2 },
    ]) {
      const r = await co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param: 'max_charges_per_month' });
    }
    expect(await balance(co, a)).toMatchObject({ refill_threshold: 5, refill_max_charges_per_month: 3 });
  });
});
