import { beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { createAccount, grant, type Co } from '../../testing/scenario';
import { recordSingleEvent } from './single';

const t = useTestDatabase();

describe('the one-statement path for single events', () => {
  let co: Co;
  let acct: string;
  beforeAll(async () => {
    co = await newCompany(t);
    acct = await createAccount(co, { name: 'F', email: 'f@x.io' });
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 10 } });
  });
  const run = (input: Record<string, unknown>) =>
    recordSingleEvent({ db: t.database.db, companyId: co.company.id, accountId: acct, input: { type: 'q', ...input }, now: new Date() });

  it('records ordinary events itself: complete, pending, gated, unpriced', async () => {
    for (const input of [
      { cost_override: { amount: '1', denomination: 'credits' } },
      { cost_override: { amount: '1', denomination: 'credits' }, gate_on_balance: true },
      { cost_override: { amount: '1', denomination: 'credits' }, state: 'pending' },
      {},
    ]) {
      const r = await run(input);
      expect(r, JSON.stringify(input)).not.toBeNull();
      expect(r).not.toBe('not_found');
    }
    const b = (await co.call('GET', `/v1/accounts/${acct}/balance/credits`)).body.data;
    expect(b).toMatchObject({ amount: 8, pending: 1, available: 7 });
  });

  it('leaves crossings, refusals, new balances and unknown accounts to the general path', async () => {
    expect(await run({ cost_override: { amount: '50', denomination: 'credits' } })).toBeNull(); // below zero
    expect(await run({ cost_override: { amount: '50', denomination: 'credits' }, gate_on_balance: true })).toBeNull(); // refused
    expect(await run({ cost_override: { amount: '1', denomination: 'brand-new' } })).toBeNull(); // no balance yet
    expect(await recordSingleEvent({ db: t.database.db, companyId: co.company.id, accountId: 'a_missing', input: { type: 'q' }, now: new Date() })).toBe('not_found');
    // Nothing was written by the refused attempts.
    expect((await co.call('GET', `/v1/accounts/${acct}/balance/credits`)).body.data.amount).toBe(8);
  });
});

describe('the answer of an event written by the general path', () => {
  let co: Co;
  beforeAll(async () => {
    co = await newCompany(t);
  });
  const newAccount = async (credits: number) => {
    const id = await createAccount(co, { name: 'G', email: 'g@x.io' });
    await grant(co, id, credits);
    return id;
  };
  const send = (account: string, amount: number, extra: Record<string, unknown> = {}) =>
    co.call('POST', `/v1/accounts/${account}/events`, { body: { type: 'q', cost_override_amount: amount, cost_override_denomination: 'credits', ...extra } });

  it('refuses a gated event that costs more than is available with a message that says so, a free one on a negative balance too', async () => {
    const account = await newAccount(1);
    expect((await send(account, 2)).status).toBe(200);
    const free = await send(account, 0, { gate_on_balance: true });
    expect(free.status).toBe(402);
    expect(free.body.error.message).toBe('This event costs 0 credits, more than the balance has available; it was recorded as rejected and nothing was charged.');
    const dear = await send(account, 2.5, { gate_on_balance: true });
    expect(dear.body.error.message).toMatch(/^This event costs 2\.5 credits, more than the balance has available;/);
  });

  it("answers an idempotent repeat with its first record and that record's account's balance", async () => {
    const [a, b] = [await newAccount(10), await newAccount(50)];
    const first = await send(a, 1, { idempotency_key: 'once' });
    expect(first.status).toBe(200);
    const repeat = await send(b, 1, { idempotency_key: 'once' });
    expect(repeat.status).toBe(200);
    expect(repeat.body.data.id).toBe(first.body.data.id);
    expect(repeat.body.data.account_id).toBe(a);
    expect(repeat.body.data.balance).toMatchObject({ amount: 9 });
    expect((await co.call('GET', `/v1/accounts/${b}/balance/credits`)).body.data.amount).toBe(50);
  });
});
