import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { balance, createAccount, grant } from '../../testing/scenario';

const t = useTestDatabase();

/** Newest first, as listed: each row starts where the one below it (older) ended, and the newest ends at the balance. */
async function expectChained(co: Awaited<ReturnType<typeof newCompany>>, account: string) {
  const rows: { id: string; starting_balance: number; ending_balance: number }[] = [];
  let after: string | undefined;
  for (;;) {
    const page = await co.call('GET', `/v1/accounts/${account}/transactions?limit=100${after ? `&starting_after=${after}` : ''}`);
    rows.push(...page.body.data);
    if (!page.body.has_more) break;
    after = page.body.data[page.body.data.length - 1].id;
  }
  expect(rows[0].ending_balance).toBe((await balance(co, account)).amount);
  const breaks = rows.slice(0, -1).filter((r, i) => r.starting_balance !== rows[i + 1].ending_balance);
  expect(breaks.map((r) => r.id)).toEqual([]);
}

describe('the ledger of a balance many writers move at once', () => {
  it('lists its rows in the order the balance moved: each row starts where the one before it ended', async () => {
    const co = await newCompany(t);
    const account = await createAccount(co, { name: 'Hot', email: 'hot@x.io' });
    await grant(co, account, 1000);
    for (let round = 0; round < 3; round++) {
      const calls = Array.from({ length: 48 }, (_, i) => {
        // Keyed single events are written alone (not grouped), grants move the same balance, and batches too.
        if (i % 8 === 0) return co.call('POST', `/v1/accounts/${account}/balance/credits`, { body: { amount: 3, reason: 'top up' } });
        if (i % 8 === 1) return co.call('POST', '/v1/events', { body: [1, 2, 3].map(() => ({ account_id: account, type: 'b', cost_override: { amount: 1, denomination: 'credits' } })) });
        return co.call('POST', `/v1/accounts/${account}/events`, { body: { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits' }, headers: { 'Idempotency-Key': `k-${round}-${i}` } });
      });
      for (const r of await Promise.all(calls)) expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    await expectChained(co, account);
  });
});
