import { beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { recordSingleEvent } from './single';

const t = useTestDatabase();

describe('the one-statement path for single events', () => {
  let co: Awaited<ReturnType<typeof newCompany>>;
  let acct: string;
  beforeAll(async () => {
    co = await newCompany(t);
    acct = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'F', email: 'f@x.io' } })).body.data.id;
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
