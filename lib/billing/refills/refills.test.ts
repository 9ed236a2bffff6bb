import { beforeAll, describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { api, newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { now, setTestTime } from '../../clock';
import { reconcileCharges } from '../settlement';
import { advance, balance, charges, createAccount, ledger, use, type PayingCo } from '../../testing/scenario';

process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

const t = useTestDatabase();
const local = useLocalStripe();


// Wednesday 2027-03-10 12:00 UTC: the refill day is the 10th, the first due time 2027-04-10 00:00.
const START = Date.UTC(2027, 2, 10, 12);

const account = async (co: PayingCo, token: string | null = 'tok_visa') => ({ id: await createAccount(co, token ? { token } : {}) });
beforeAll(async () => {
  setTestTime(START);
  expect((await advance(0)).toISOString()).toBe(new Date(START).toISOString());
});

describe('PUT /v1/accounts/{account_id}/balance/{denomination}/auto_refill', () => {
  let co: PayingCo;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('monthly: charges usd_charge at once, adds amount units and shows the schedule', async () => {
    const a = await account(co);
    const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 500, usd_charge: 2500, refill_period: 'monthly' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({
      account_id: a.id,
      denomination: 'credits',
      amount: 500,
      refill_threshold: 0,
      refill_amount: 500,
      refill_usd_amount: 2500,
      refill_on_day: '10',
      last_periodic_refill: '2027-03-10T12:00:00.000Z',
      next_periodic_refill: '2027-04-10T00:00:00.000Z',
      scheduled_refill_change: null,
    });
    const list = await charges(co, a.id);
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ amount: 2500, status: 'succeeded', reason: 'refill_monthly' });
    expect(await ledger(co, a.id)).toMatchObject([{ type: 'refill', amount: 500, denomination: 'credits' }]);
    expect((await local.control(`state?key=${co.processorKey}`)).account.payment_intents).toBe(1);
  });

  it('monthly: the setting already in effect, sent again, charges nothing; a changed one is charged', async () => {
    const a = await account(co);
    const put = (body: object) => co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body });
    const first = await put({ amount: 500, usd_charge: 2500, refill_period: 'monthly', threshold: 50 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // The same setting (numbers spelled differently), a backend re-applying its configuration.
    const again = await put({ amount: '500.0', usd_charge: 2500, refill_period: 'monthly', threshold: '50' });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body.data).toMatchObject({ amount: 500, refill_on_day: '10', next_periodic_refill: '2027-04-10T00:00:00.000Z' });
    expect(await charges(co, a.id)).toHaveLength(1);
    expect(await ledger(co, a.id)).toHaveLength(1);
    // Its last monthly refill failed (a declined card on the refill day): sent again, it refills now.
    const [paid] = await charges(co, a.id);
    await t.database.db.execute(sql`update charges set status = 'failed' where id = ${paid.id}`);
    const retried = await put({ amount: 500, usd_charge: 2500, refill_period: 'monthly', threshold: 50 });
    expect(retried.status, JSON.stringify(retried.body)).toBe(200);
    expect(retried.body.data.amount).toBe(1000);
    expect((await charges(co, a.id)).map((c) => c.status)).toEqual(['succeeded', 'failed']);
    // Anything else is a new setting: its first refill is charged now.
    const without = await put({ amount: 500, usd_charge: 2500, refill_period: 'monthly' });
    expect(without.status, JSON.stringify(without.body)).toBe(200);
    expect(without.body.data).toMatchObject({ amount: 1500, refill_threshold: 0 });
    const more = await put({ amount: 500, usd_charge: 2600, refill_period: 'monthly' });
    expect(more.status, JSON.stringify(more.body)).toBe(200);
    expect((await charges(co, a.id)).map((c) => c.amount).sort()).toEqual([2500, 2500, 2500, 2600]);
  });

  it('two monthly settings sent at once buy one first refill; the one told to wait finds it set', async () => {
    const a = await account(co);
    const put = () => co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    // The processor takes 0.7 s over the first refill's payment, so the other request arrives
    // while the first still holds the account, however the two are scheduled.
    expect((await local.control('fail', { delay_ms: 700, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' })).ok).toBe(true);
    const both = await Promise.all([put(), put()]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    const busy = both.find((r) => r.status === 409)!;
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(busy.body.error.message).toMatch(/refills or plan/);
    expect((await put()).status).toBe(200);
    expect((await charges(co, a.id)).map((c) => c.amount)).toEqual([1000]);
    expect((await balance(co, a.id)).amount).toBe(100);
  });

  it('accepts the autorefill spelling, unprefixed paths and numeric strings', async () => {
    const a = await account(co);
    const r = await co.call('PUT', `/accounts/${a.id}/balance/credits/autorefill`, { body: { amount: '12.5', usd_charge: '300', refill_period: 'monthly' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ amount: 12.5, refill_amount: 12.5, refill_usd_amount: 300 });
  });

  it('threshold: stores the setting without charging, and replaces a monthly schedule', async () => {
    const a = await account(co);
    await co.call('POST', `/v1/accounts/${a.id}/balance/credits`, { body: { amount: 50 } });
    const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 900, threshold: 10 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ amount: 50, refill_threshold: 10, refill_amount: 100, refill_usd_amount: 900, refill_on_day: '', next_periodic_refill: null });
    expect(await charges(co, a.id)).toHaveLength(0);

    const b = await account(co);
    await co.call('PUT', `/v1/accounts/${b.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 900, refill_period: 'monthly' } });
    const replaced = await co.call('PUT', `/v1/accounts/${b.id}/balance/credits/auto_refill`, { body: { amount: 40, usd_charge: 300, threshold: 5 } });
    expect(replaced.body.data).toMatchObject({ amount: 100, refill_threshold: 5, refill_amount: 40, refill_on_day: '', next_periodic_refill: null });
    const back = await co.call('PUT', `/v1/accounts/${b.id}/balance/credits/auto_refill`, { body: { amount: 40, usd_charge: 300, refill_period: 'monthly' } });
    expect(back.body.data).toMatchObject({ amount: 140, refill_threshold: 0, refill_on_day: '10' });
    const both = await co.call('PUT', `/v1/accounts/${b.id}/balance/credits/auto_refill`, { body: { amount: 40, usd_charge: 300, refill_period: 'monthly', threshold: 20 } });
    expect(both.body.data).toMatchObject({ amount: 180, refill_threshold: 20, refill_on_day: '10' });
  });

  it('threshold set while already below it queues one refill, charged by the worker', async () => {
    const a = await account(co);
    const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 900, threshold: 10 } });
    expect(r.body.data.amount).toBe(0);
    expect(await charges(co, a.id)).toHaveLength(0);
    await advance(0);
    expect((await balance(co, a.id)).amount).toBe(100);
    expect(await charges(co, a.id)).toMatchObject([{ amount: 900, status: 'succeeded', reason: 'refill_threshold' }]);
    expect(await ledger(co, a.id)).toMatchObject([{ type: 'refill_threshold', amount: 100 }]);
  });

  it('a crossing while the last threshold refill is still finishing queues the next one, and both are bought', async () => {
    const a = await account(co);
    expect((await co.call('POST', `/v1/accounts/${a.id}/balance/credits`, { body: { amount: 150 } })).status).toBe(200);
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 900, threshold: 100 } })).status).toBe(200);
    expect((await use(co, a.id, 60, { type: 'use' })).status).toBe(200);
    // The refill for that crossing has added its units and its job is not marked done yet.
    await advance(0);
    expect((await balance(co, a.id)).amount).toBe(190);
    const jobs = () => t.database.db.execute(sql`select status, dedupe_key from jobs where kind = 'threshold_refill' and payload->>'balance_id' = (select id from balances where account_id = ${a.id})`);
    const rows = async () => {
      const r = (await jobs()) as unknown as { rows?: { status: string }[] } & { status: string }[];
      return (r.rows ?? r).map((j) => j.status).sort();
    };
    expect(await rows()).toEqual(['done']);
    await t.database.db.execute(sql`update jobs set status = 'running', locked_until = ${new Date(now().getTime() + 300_000).toISOString()}::timestamptz where kind = 'threshold_refill' and payload->>'balance_id' = (select id from balances where account_id = ${a.id})`);
    // A new crossing meanwhile (190 → 80).
    expect((await use(co, a.id, 110, { type: 'use' })).status).toBe(200);
    expect(await rows()).toEqual(['queued', 'running']);
    await advance(0);
    expect((await balance(co, a.id)).amount).toBe(180);
    expect((await charges(co, a.id)).map((c) => [c.reason, c.amount, c.status])).toEqual([
      ['refill_threshold', 900, 'succeeded'],
      ['refill_threshold', 900, 'succeeded'],
    ]);
  });

  it('stores a threshold setting together with the refill it calls for, or neither', async () => {
    const a = await account(co);
    // Queuing the refill fails, as if the process died right after storing the setting.
    const db = t.database.db;
    await db.execute(sql.raw(`create function refuse_refill_job() returns trigger language plpgsql as $$ begin raise exception 'connection to the database lost'; end $$`));
    await db.execute(sql.raw(`create trigger refuse_refill_job before insert on jobs for each row when (new.kind = 'threshold_refill') execute function refuse_refill_job()`));
    try {
      const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 900, threshold: 10 } });
      expect(r.status).toBe(500);
    } finally {
      await db.execute(sql.raw('drop trigger refuse_refill_job on jobs'));
      await db.execute(sql.raw('drop function refuse_refill_job()'));
    }
    expect(await balance(co, a.id)).toMatchObject({ refill_threshold: 0, refill_amount: 0 });
    // Sent again, it is stored and refills.
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 900, threshold: 10 } })).status).toBe(200);
    await advance(0);
    expect((await balance(co, a.id)).amount).toBe(100);
  });

  it("queues no second threshold refill while the first one's charge is still unknown, even when the setting is sent again", async () => {
    const a = await account(co);
    const intentsBefore = await local.paymentIntents(co);
    // The processor takes the charge but its answer is lost, and the look-up fails too: pending.
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const body = { amount: 100, usd_charge: 900, threshold: 10 };
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body })).status).toBe(200);
    await advance(0);
    expect((await charges(co, a.id)).map((c) => [c.reason, c.status])).toEqual([['refill_threshold', 'pending']]);
    // The same setting again: the balance is still below, but a refill is on its way.
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body })).status).toBe(200);
    await advance(0);
    expect((await charges(co, a.id)).map((c) => [c.reason, c.status])).toEqual([['refill_threshold', 'pending']]);
    expect((await local.paymentIntents(co)) - intentsBefore).toBe(1);
    // Once the processor is asked again (the reconciler, within the hour), the one charge is found paid: one refill's units.
    await advance(3600);
    expect((await charges(co, a.id)).map((c) => [c.reason, c.status])).toEqual([['refill_threshold', 'succeeded']]);
    expect((await balance(co, a.id)).amount).toBe(100);
  });

  it("a crossing while another refill's charge is unknown waits for it, and buys its own if that one was declined", async () => {
    const a = await account(co, 'tok_chargeCustomerFail');
    expect((await co.call('POST', `/v1/accounts/${a.id}/balance/credits`, { body: { amount: 150 } })).status).toBe(200);
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 900, threshold: 100 } })).status).toBe(200);
    // The first crossing's charge stays at the processor, its answer not known yet.
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    expect((await use(co, a.id, 60, { type: 'use' })).status).toBe(200);
    await advance(0);
    const [first] = await charges(co, a.id);
    expect([first.reason, first.status]).toEqual(['refill_threshold', 'pending']);
    // A grant lifts the balance over the threshold and usage takes it below again: a second crossing.
    expect((await co.call('POST', `/v1/accounts/${a.id}/balance/credits`, { body: { amount: 50 } })).status).toBe(200);
    expect((await use(co, a.id, 50, { type: 'use' })).status).toBe(200);
    await advance(0);
    expect((await charges(co, a.id)).map((c) => c.status)).toEqual(['pending']);
    // A good card now; the first charge is declined in the end (its own card's answer).
    expect((await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_visa' } })).status).toBe(200);
    await fetch(`${local.url}/__control/payment_intents/${first.processor_payment_intent_id}/complete`, { method: 'POST' });
    // The reconciler learns of the decline within minutes, and the waiting refill runs at once.
    await advance(120);
    expect((await charges(co, a.id)).map((c) => [c.reason, c.status])).toEqual([
      ['refill_threshold', 'succeeded'],
      ['refill_threshold', 'failed'],
    ]);
    expect((await balance(co, a.id)).amount).toBe(190);
  });

  it('monthly and threshold together: a first refill that leaves the balance below the threshold queues a threshold refill', async () => {
    const a = await account(co);
    const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 10, usd_charge: 100, refill_period: 'monthly', threshold: 15 } });
    expect(r.body.data).toMatchObject({ amount: 10, refill_threshold: 15, refill_on_day: '10' });
    await advance(0);
    expect((await charges(co, a.id)).map((c) => c.reason).sort()).toEqual(['refill_monthly', 'refill_threshold']);
    expect((await balance(co, a.id)).amount).toBe(20);
  });

  it('a declined first monthly refill is 402, a failed charge row, no units and no setting', async () => {
    const a = await account(co, 'tok_chargeDeclined');
    const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 500, usd_charge: 2500, refill_period: 'monthly' } });
    expect(r.status).toBe(402);
    expect(r.body.error.type).toBe('card_declined');
    expect(await charges(co, a.id)).toMatchObject([{ amount: 2500, status: 'failed' }]);
    // The balance it would have made is not left behind.
    expect((await co.call('GET', `/v1/accounts/${a.id}/balance/credits`)).status).toBe(404);
    expect(await ledger(co, a.id)).toHaveLength(0);
    // One that existed before stays as it was.
    expect((await co.call('POST', `/v1/accounts/${a.id}/balance/credits`, { body: { amount: 3 } })).status).toBe(200);
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 500, usd_charge: 2500, refill_period: 'monthly' } })).status).toBe(402);
    expect(await balance(co, a.id)).toMatchObject({ amount: 3, refill_amount: 0, refill_usd_amount: 0, refill_on_day: '', next_periodic_refill: null });
  });

  it('without a card on file a monthly refill is 402 payment_method_required', async () => {
    const a = await account(co, null);
    const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 5, usd_charge: 100, refill_period: 'monthly' } });
    expect(r.status).toBe(402);
    expect(r.body.error.type).toBe('payment_method_required');
    expect((await co.call('GET', `/v1/accounts/${a.id}/balance/credits`)).status).toBe(404);
  });

  it('a free refill (usd_charge 0) is a paid 0-cent charge row, made without the processor', async () => {
    const a = await account(co);
    const before = await local.paymentIntents(co);
    const r = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 7, usd_charge: 0, refill_period: 'monthly' } });
    expect(r.body.data).toMatchObject({ amount: 7, refill_usd_amount: 0 });
    const list = await charges(co, a.id);
    expect(list).toMatchObject([{ amount: 0, status: 'succeeded', reason: 'refill_monthly', processor_payment_intent_id: null }]);
    expect(await ledger(co, a.id)).toMatchObject([{ type: 'refill', amount: 7, charge_id: list[0].id }]);
    expect(await local.paymentIntents(co)).toBe(before);
  });

  it('refuses bad input with 400 and the offending param', async () => {
    const a = await account(co);
    const path = `/v1/accounts/${a.id}/balance/credits/auto_refill`;
    const cases: [unknown, string][] = [
      [{ usd_charge: 100, refill_period: 'monthly' }, 'amount'],
      [{ amount: 10, refill_period: 'monthly' }, 'usd_charge'],
      [{ amount: 'ten', usd_charge: 100, refill_period: 'monthly' }, 'amount'],
      [{ amount: true, usd_charge: 100, refill_period: 'monthly' }, 'amount'],
      [{ amount: 10, usd_charge: [100], refill_period: 'monthly' }, 'usd_charge'],
      [{ amount: -10, usd_charge: 100, refill_period: 'monthly' }, 'amount'],
      [{ amount: 0, usd_charge: 100, refill_period: 'monthly' }, 'amount'],
      [{ amount: 10, usd_charge: -1, refill_period: 'monthly' }, 'usd_charge'],
      [{ amount: 10, usd_charge: 12.5, refill_period: 'monthly' }, 'usd_charge'],
      [{ amount: 10, usd_charge: '12.5', refill_period: 'monthly' }, 'usd_charge'],
      [{ amount: 0.0000000000001, usd_charge: 1, refill_period: 'monthly' }, 'amount'],
      [{ amount: 10, usd_charge: 100, refill_period: 'weekly' }, 'refill_period'],
      [{ amount: 10, usd_charge: 100, refill_period: 'MONTHLY' }, 'refill_period'],
      [{ amount: 10, usd_charge: 100 }, 'refill_period'],
      [{ amount: 10, usd_charge: 100, threshold: -5 }, 'threshold'],
      [{ amount: 10, usd_charge: 100, threshold: 0 }, 'threshold'],
      [{ amount: 10, usd_charge: 100, threshold: 'low' }, 'threshold'],
      [{ amount: 10, usd_charge: 100, refill_period: 'monthly', surprise: 1 }, 'surprise'],
      [[{ amount: 10, usd_charge: 100, refill_period: 'monthly' }], ''],
    ];
    for (const [body, param] of cases) {
      const r = await co.call('PUT', path, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.type).toBe('invalid_request');
      if (param) expect(r.body.error.param, JSON.stringify(body)).toBe(param);
    }
    for (const raw of ['{"amount": 1e400, "usd_charge": 1, "refill_period": "monthly"}', '{"amount": 10,', '']) {
      const r = await co.call('PUT', path, { raw, headers: { 'content-type': 'application/json' } });
      expect(r.status, raw).toBe(400);
    }
    const badDenomination = await co.call('PUT', `/v1/accounts/${a.id}/balance/${encodeURIComponent('no spaces')}/auto_refill`, { body: { amount: 1, usd_charge: 100, refill_period: 'monthly' } });
    expect(badDenomination.status).toBe(400);
    expect(badDenomination.body.error.param).toBe('denomination');
    expect(await charges(co, a.id)).toHaveLength(0);
    expect(await ledger(co, a.id)).toHaveLength(0);
  });

  it("answers 404 for another company's account or an unknown one, and 401 without credentials", async () => {
    const a = await account(co);
    const other = await newCompany(t);
    const body = { amount: 10, usd_charge: 100, refill_period: 'monthly' };
    const r = await other.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body });
    expect(r.status).toBe(404);
    expect(r.body.error.type).toBe('not_found');
    expect((await other.call('DELETE', `/v1/accounts/${a.id}/balance/credits/auto_refill`)).status).toBe(404);
    expect((await co.call('PUT', '/v1/accounts/a_doesnotexist/balance/credits/auto_refill', { body })).status).toBe(404);
    expect((await api('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body })).status).toBe(401);
    expect(await charges(co, a.id)).toHaveLength(0);
  });
});

describe('DELETE /v1/accounts/{account_id}/balance/{denomination}/auto_refill', () => {
  let co: PayingCo;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('turns refills off and keeps the units; repeating it is harmless', async () => {
    const a = await account(co);
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 30, usd_charge: 300, refill_period: 'monthly', threshold: 5 } });
    const r = await co.call('DELETE', `/v1/accounts/${a.id}/balance/credits/auto_refill`);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ amount: 30, refill_threshold: 0, refill_amount: 0, refill_usd_amount: 0, refill_on_day: '', next_periodic_refill: null, scheduled_refill_change: null });
    expect((await co.call('DELETE', `/v1/accounts/${a.id}/balance/credits/autorefill`)).status).toBe(200);
  });

  it('answers 404 for a balance that does not exist and 400 for a malformed denomination', async () => {
    const a = await account(co);
    const r = await co.call('DELETE', `/v1/accounts/${a.id}/balance/never-created/auto_refill`);
    expect(r.status).toBe(404);
    expect(r.body.error).toMatchObject({ type: 'not_found', param: 'denomination' });
    const bad = await co.call('DELETE', `/v1/accounts/${a.id}/balance/${encodeURIComponent('a b')}/auto_refill`);
    expect(bad.status).toBe(400);
  });
});

describe('refill settings while a charge that sets them is at the processor', () => {
  it('cannot be changed or turned off (409) until it settles, so its settlement cannot undo the change', async () => {
    const co = await newPayingCompany(t);
    const a = await account(co);
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const key = { 'Idempotency-Key': `first-refill-${a.id}` };
    const body = { amount: 100, usd_charge: 1000, refill_period: 'monthly' };
    const first = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body, headers: key });
    expect(first.status, JSON.stringify(first.body)).toBe(502);
    expect(first.body.error.charge_pending).toBe(true);
    const [pending] = await charges(co, a.id);
    expect(pending).toMatchObject({ status: 'pending', reason: 'refill_monthly' });

    const changes: [string, string, unknown][] = [
      ['DELETE', `/v1/accounts/${a.id}/balance/credits/auto_refill`, undefined],
      ['PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { amount: 10, usd_charge: 100, threshold: 5 }],
    ];
    for (const [method, path, change] of changes) {
      const r = await co.call(method, path, { body: change });
      expect(r.status, `${method} ${path} ${JSON.stringify(r.body)}`).toBe(409);
      expect(r.body.error.message).toContain(pending.id);
    }
    // The request that made the charge may still be retried: it carries on with its own charge.
    const retried = await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body, headers: key });
    expect(retried.status, JSON.stringify(retried.body)).toBe(502);
    expect(retried.body.error).toMatchObject({ charge_pending: true, charge_id: pending.id });
    await fetch(`${local.url}/__control/payment_intents/${pending.processor_payment_intent_id}/complete`, { method: 'POST' });
    setTestTime(now().getTime() + 120_000);
    await reconcileCharges(t.database.db, now());
    expect(await balance(co, a.id)).toMatchObject({ amount: 100, refill_amount: 100, refill_usd_amount: 1000 });
    expect(await local.paymentIntents(co)).toBe(1);

    const off = await co.call('DELETE', `/v1/accounts/${a.id}/balance/credits/auto_refill`);
    expect(off.status).toBe(200);
    expect(await balance(co, a.id)).toMatchObject({ amount: 100, refill_amount: 0, next_periodic_refill: null });
  });

  it('a pending mid-month change holds the monthly refill as it is until it settles', async () => {
    const co = await newPayingCompany(t);
    const a = await account(co);
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } })).status).toBe(200);
    await local.control('fail', { processing: true, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
    const raise = await co.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body: { denomination: 'credits', amount: 200, usd_charge: 2000 } });
    expect(raise.status, JSON.stringify(raise.body)).toBe(502);
    const [pending] = await charges(co, a.id);
    expect(pending).toMatchObject({ status: 'pending', reason: 'refill_monthly' });
    const changes: [string, string, unknown][] = [
      ['DELETE', `/v1/accounts/${a.id}/balance/credits/auto_refill`, undefined],
      ['PUT', `/v1/accounts/${a.id}/auto_refill`, { denomination: 'credits', amount: 50, usd_charge: 500 }],
      ['POST', `/v1/accounts/${a.id}/modifymidmonth`, { denomination: 'credits', amount: 300, usd_charge: 3000 }],
    ];
    for (const [method, path, change] of changes) {
      const r = await co.call(method, path, { body: change });
      expect(r.status, `${method} ${path} ${JSON.stringify(r.body)}`).toBe(409);
      expect(r.body.error.message).toContain(pending.id);
    }
    expect(await local.paymentIntents(co)).toBe(2);
    expect(await balance(co, a.id)).toMatchObject({ amount: 100, refill_amount: 100 });
  });
});

describe('PUT /v1/accounts/{account_id}/auto_refill (scheduled change)', () => {
  let co: PayingCo;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('returns the scheduled change, shows it on the balance and charges nothing now', async () => {
    const a = await account(co);
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    const r = await co.call('PUT', `/v1/accounts/${a.id}/auto_refill`, { body: { denomination: 'credits', amount: 60, usd_charge: 700 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toEqual({ account_id: a.id, denomination: 'credits', amount: 60, usd_charge: 700, effective_at: '2027-04-10T00:00:00.000Z' });
    expect(await balance(co, a.id)).toMatchObject({ amount: 100, refill_amount: 100, refill_usd_amount: 1000, scheduled_refill_change: { amount: 60, usd_charge: 700, effective_at: '2027-04-10T00:00:00.000Z' } });
    expect(await charges(co, a.id)).toHaveLength(1);
    const viaAlias = await co.call('PUT', `/accounts/${a.id}/autorefill`, { body: { denomination: 'credits', amount: '80', usd_charge: '800' } });
    expect(viaAlias.body.data).toMatchObject({ amount: 80, usd_charge: 800 });
  });

  it('refuses bad input, a balance without a monthly refill, and other companies', async () => {
    const a = await account(co);
    const path = `/v1/accounts/${a.id}/auto_refill`;
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    const cases: [unknown, string][] = [
      [{ amount: 10, usd_charge: 100 }, 'denomination'],
      [{ denomination: 5, amount: 10, usd_charge: 100 }, 'denomination'],
      [{ denomination: 'bad denomination', amount: 10, usd_charge: 100 }, 'denomination'],
      [{ denomination: 'credits', usd_charge: 100 }, 'amount'],
      [{ denomination: 'credits', amount: -1, usd_charge: 100 }, 'amount'],
      [{ denomination: 'credits', amount: 10 }, 'usd_charge'],
      [{ denomination: 'credits', amount: 10, usd_charge: 99.9 }, 'usd_charge'],
      [{ denomination: 'credits', amount: 10, usd_charge: -100 }, 'usd_charge'],
      [{ denomination: 'credits', amount: 10, usd_charge: 100, refill_period: 'weekly' }, 'refill_period'],
      [{ denomination: 'credits', amount: 10, usd_charge: 100, refill_period: null }, 'refill_period'],
      [{ denomination: 'credits', amount: 10, usd_charge: 100, refill_period: 1 }, 'refill_period'],
      [{ denomination: 'credits', amount: 10, usd_charge: 999_999_999, refill_period: 'monthly' }, 'usd_charge'],
    ];
    for (const [body, param] of cases) {
      const r = await co.call('PUT', path, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param, JSON.stringify(body)).toBe(param);
    }
    await co.call('POST', `/v1/accounts/${a.id}/balance/gb`);
    const noMonthly = await co.call('PUT', path, { body: { denomination: 'gb', amount: 10, usd_charge: 100 } });
    expect(noMonthly.status).toBe(400);
    expect(noMonthly.body.error.message).toContain('/balance/{denomination}/auto_refill');
    expect((await co.call('PUT', path, { body: { denomination: 'missing', amount: 10, usd_charge: 100 } })).status).toBe(404);
    const other = await newCompany(t);
    expect((await other.call('PUT', path, { body: { denomination: 'credits', amount: 10, usd_charge: 100 } })).status).toBe(404);
    expect((await balance(co, a.id)).scheduled_refill_change).toBeNull();
  });
});

describe('modifymidmonth', () => {
  let co: PayingCo;
  beforeAll(async () => {
    co = await newPayingCompany(t);
  });

  it('two changes sent at once are charged once', async () => {
    const a = await account(co);
    expect((await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } })).status).toBe(200);
    const raise = () => co.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body: { denomination: 'credits', amount: 200, usd_charge: 2000 } });
    const both = await Promise.all([raise(), raise()]);
    expect(both.map((r) => r.status).sort()).toEqual([200, 409]);
    expect((await charges(co, a.id)).filter((c) => c.status === 'succeeded')).toHaveLength(2);
    expect((await balance(co, a.id)).amount).toBe(200);
  });

  it('accepts POST and PUT, numeric strings and a matching account_id in the body', async () => {
    const a = await account(co);
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    const first = await co.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body: { account_id: a.id, denomination: 'credits', amount: '200', usd_charge: '1500' } });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    // All 100 units are left: worth 1000 cents at the old price, so 500 cents are charged.
    expect(first.body.data).toMatchObject({ amount: 200, refill_amount: 200, refill_usd_amount: 1500, credit: 1000, charged: 500 });
    const second = await co.call('PUT', `/accounts/${a.id}/modifymidmonth`, { body: { denomination: 'credits', amount: 300, usd_charge: 1800 } });
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.data).toMatchObject({ amount: 300, credit: 1500, charged: 300 });
  });

  it('refuses decreases (pointing to the scheduled path), bad input and other companies', async () => {
    const a = await account(co);
    const path = `/v1/accounts/${a.id}/modifymidmonth`;
    const none = await co.call('POST', path, { body: { denomination: 'credits', amount: 200, usd_charge: 1500 } });
    expect(none.status).toBe(404);
    await co.call('POST', `/v1/accounts/${a.id}/balance/gb`);
    expect((await co.call('POST', path, { body: { denomination: 'gb', amount: 200, usd_charge: 1500 } })).status).toBe(400);
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    for (const body of [
      { denomination: 'credits', amount: 50, usd_charge: 500 },
      { denomination: 'credits', amount: 100, usd_charge: 1000 },
      { denomination: 'credits', amount: 150, usd_charge: 900 },
    ]) {
      const r = await co.call('POST', path, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.message).toContain('/v1/accounts/{account_id}/auto_refill');
    }
    const cases: [unknown, string][] = [
      [{ amount: 200, usd_charge: 1500 }, 'denomination'],
      [{ denomination: 'credits', usd_charge: 1500 }, 'amount'],
      [{ denomination: 'credits', amount: 'lots', usd_charge: 1500 }, 'amount'],
      [{ denomination: 'credits', amount: -200, usd_charge: 1500 }, 'amount'],
      [{ denomination: 'credits', amount: 200 }, 'usd_charge'],
      [{ denomination: 'credits', amount: 200, usd_charge: 1500.5 }, 'usd_charge'],
      [{ denomination: 'credits', amount: 200, usd_charge: '1500.5' }, 'usd_charge'],
      [{ denomination: 'credits', amount: 200, usd_charge: 1500, extra: true }, 'extra'],
      [{ account_id: 'a_someoneelse', denomination: 'credits', amount: 200, usd_charge: 1500 }, 'account_id'],
      [{ account_id: 7, denomination: 'credits', amount: 200, usd_charge: 1500 }, 'account_id'],
    ];
    for (const [body, param] of cases) {
      const r = await co.call('POST', path, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param, JSON.stringify(body)).toBe(param);
    }
    const other = await newCompany(t);
    expect((await other.call('POST', path, { body: { denomination: 'credits', amount: 200, usd_charge: 1500 } })).status).toBe(404);
    expect(await charges(co, a.id)).toHaveLength(1);
    expect(await balance(co, a.id)).toMatchObject({ amount: 100, refill_amount: 100 });
  });

  it('credits only available units: units held by pending events are spoken for', async () => {
    const a = await account(co);
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    const hold = await co.call('POST', `/v1/accounts/${a.id}/events`, { body: { type: 'job', state: 'pending', cost_override_amount: 30, cost_override_denomination: 'credits' } });
    expect(hold.status, JSON.stringify(hold.body)).toBe(200);
    const r = await co.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body: { denomination: 'credits', amount: 200, usd_charge: 1500 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // 70 units were available (worth 700 cents); the 30 held stay for the pending event.
    expect(r.body.data).toMatchObject({ credit: 700, charged: 800, amount: 230, pending: 30, available: 200 });
    expect((await charges(co, a.id)).map((c) => c.amount)).toEqual([800, 1000]);
    const done = await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'complete' } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(await balance(co, a.id)).toMatchObject({ amount: 200, pending: 0 });
  });

  it('a change whose credit covers the new price is a paid 0-cent charge row', async () => {
    const a = await account(co);
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    const before = await local.paymentIntents(co);
    const r = await co.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body: { denomination: 'credits', amount: 200, usd_charge: 1000 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ credit: 1000, charged: 0, amount: 200 });
    const [change] = await charges(co, a.id);
    expect(change).toMatchObject({ amount: 0, status: 'succeeded', reason: 'refill_monthly', processor_payment_intent_id: null });
    expect((await ledger(co, a.id)).slice(0, 2)).toMatchObject([
      { type: 'refill', amount: 200, charge_id: change.id },
      { type: 'refill_cancelled', amount: -100, charge_id: change.id },
    ]);
    expect(await local.paymentIntents(co)).toBe(before);
  });

  it('a retry with the same Idempotency-Key after an unknown outcome carries on with the first charge', async () => {
    const fresh = await newPayingCompany(t);
    const a = await account(fresh);
    await fresh.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly' } });
    // The payment is made but its answer is lost, and the look-up fails too.
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST', after: true });
    await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
    const body = { denomination: 'credits', amount: 200, usd_charge: 1500 };
    const headers = { 'Idempotency-Key': 'midmonth-1' };
    const first = await fresh.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body, headers });
    expect(first.status).toBe(502);
    const retry = await fresh.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body, headers });
    expect(await local.paymentIntents(fresh)).toBe(2);
    expect((await charges(fresh, a.id)).map((c) => [c.amount, c.status])).toEqual([
      [500, 'succeeded'],
      [1000, 'succeeded'],
    ]);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body.data).toMatchObject({ amount: 200, refill_amount: 200, credit: 1000, charged: 500 });
    expect(first.body.error.charge_pending).toBe(true);
  });

  it('a declined increase is 402 and changes nothing', async () => {
    const a = await account(co);
    await co.call('PUT', `/v1/accounts/${a.id}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 0, refill_period: 'monthly' } });
    await co.call('POST', `/v1/accounts/${a.id}/card`, { body: { token: 'tok_chargeDeclined' } });
    const r = await co.call('POST', `/v1/accounts/${a.id}/modifymidmonth`, { body: { denomination: 'credits', amount: 200, usd_charge: 1500 } });
    expect(r.status).toBe(402);
    expect(await balance(co, a.id)).toMatchObject({ amount: 100, refill_amount: 100, refill_usd_amount: 0 });
    expect(await ledger(co, a.id)).toHaveLength(1);
  });
});
