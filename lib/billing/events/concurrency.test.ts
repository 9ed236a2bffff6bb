import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { balance, createAccount, addUnits } from '../../testing/scenario';
import { startAppServer, type AppServer } from '../../testing/servers';
import { ledgerSums } from '../balances/balances';

const t = useTestDatabase();
const onPostgres = process.env.TEST_DB === 'postgres';

describe.skipIf(!onPostgres)('two app processes on one PostgreSQL', () => {
  const servers: AppServer[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 2; i++) servers.push(await startAppServer({ DATABASE_URL: t.url!, APP_SECRET: 'test-secret-of-at-least-32-bytes-0123456789', WORKER: '0', RATE_LIMIT_PER_SECOND: '0' }));
  });
  afterAll(async () => {
    await Promise.all(servers.map((s) => s.stop()));
  });
  const authOf = (co: Awaited<ReturnType<typeof newCompany>>) => ({ authorization: `Basic ${Buffer.from(`${co.company.id}:${co.apiKey}`).toString('base64')}`, 'content-type': 'application/json' });

  it('200 concurrent events on one account end at the exact balance', async () => {
    const co = await newCompany(t);
    const auth = authOf(co);
    const acct = await createAccount(co, { name: 'Hot', email: 'hot@x.io' });
    await addUnits(co, acct, 150);

    // 200 events of 0.75: the last 0 to 200 gated ones must be refused exactly when available runs out.
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        fetch(`${servers[i % 2].url}/v1/accounts/${acct}/events`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ type: 'call', cost_override_amount: '0.75', cost_override_denomination: 'credits', gate_on_balance: true }),
        }).then(async (r) => ({ status: r.status, body: await r.json() })),
      ),
    );
    const accepted = results.filter((r) => r.status === 200).length;
    const refused = results.filter((r) => r.status === 402).length;
    expect(accepted + refused).toBe(200);
    expect(accepted).toBe(200); // 200 × 0.75 = 150 exactly: every one fits, none more
    const credits = await balance(co, acct);
    expect(credits.amount).toBe(0);
    const [sum] = await ledgerSums(t.database.db, acct);
    expect(Number(sum.total)).toBe(0);

    // One more gated event from either process is refused: nothing is left.
    const extra = await fetch(`${servers[1].url}/v1/accounts/${acct}/events`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ type: 'call', cost_override_amount: '0.75', cost_override_denomination: 'credits', gate_on_balance: true }),
    });
    expect(extra.status).toBe(402);

    // Without the gate, 200 more concurrent events across both processes land exactly.
    const more = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        fetch(`${servers[i % 2].url}/v1/accounts/${acct}/events`, { method: 'POST', headers: auth, body: JSON.stringify({ type: 'call', cost_override_amount: '0.1', cost_override_denomination: 'credits' }) }).then((r) => r.status),
      ),
    );
    expect(more.every((s) => s === 200)).toBe(true);
    expect((await balance(co, acct)).amount).toBe(-20);
  });

  it('concurrent gated holds never take more than is available: each sees the holds committed before it', async () => {
    const co = await newCompany(t);
    const auth = authOf(co);
    const acct = await createAccount(co, { name: 'Holds', email: 'holds@x.io' });
    await addUnits(co, acct, 150);
    const hold = { type: 'reserve', cost_override_amount: 1, cost_override_denomination: 'credits', gate_on_balance: true, state: 'pending' };

    // 300 single holds of 1 on 150 available, from two processes at once: exactly 150 fit.
    const singles = await Promise.all(
      Array.from({ length: 300 }, (_, i) =>
        fetch(`${servers[i % 2].url}/v1/accounts/${acct}/events`, { method: 'POST', headers: auth, body: JSON.stringify(hold) }).then((r) => r.status),
      ),
    );
    expect(singles.filter((s) => s === 200).length).toBe(150);
    expect(singles.filter((s) => s === 402).length).toBe(150);
    let credits = await balance(co, acct);
    expect([credits.amount, credits.pending, credits.available]).toEqual([150, 150, 0]);

    // Cancel 60 holds and race 20 batches of 6 gated holds for the 60 freed units.
    const held = (await co.call('GET', `/v1/companies/{company}/events?account_id=${acct}&state=pending&limit=60`)).body.data;
    expect(held).toHaveLength(60);
    await Promise.all(held.map((e: { id: string }) => co.call('PUT', `/v1/events/${e.id}`, { body: { state: 'cancelled' } })));
    const batches = await Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${servers[i % 2].url}/v1/events`, { method: 'POST', headers: auth, body: JSON.stringify(Array.from({ length: 6 }, () => ({ ...hold, account_id: acct }))) }).then(
          async (r) => (await r.json()).data as { state: string }[],
        ),
      ),
    );
    const states = batches.flat().map((e) => e.state);
    expect(states.filter((s) => s === 'pending').length).toBe(60);
    expect(states.filter((s) => s === 'rejected').length).toBe(60);
    credits = await balance(co, acct);
    expect([credits.amount, credits.pending, credits.available]).toEqual([150, 150, 0]);
  });

  it('concurrent events from two processes never take the spend past a reject limit', async () => {
    const co = await newCompany(t);
    const auth = authOf(co);
    const acct = await createAccount(co, { name: 'Capped', email: 'capped@x.io' });
    await addUnits(co, acct, 1000);
    expect((await co.call('PUT', `/v1/accounts/${acct}/spend_limits`, { body: [{ denomination: 'credits', period: 'month', limit: 30, action: 'reject' }] })).status).toBe(200);
    const item = { type: 'call', cost_override_amount: '0.5', cost_override_denomination: 'credits' };
    // 80 single events (ungated, gated and holds) and 20 batches of 2, all at once: exactly 60 × 0.5 fit.
    const singles = Promise.all(
      Array.from({ length: 80 }, (_, i) =>
        fetch(`${servers[i % 2].url}/v1/accounts/${acct}/events`, {
          method: 'POST',
          headers: auth,
          body: JSON.stringify({ ...item, ...(i % 3 === 1 && { gate_on_balance: true }), ...(i % 3 === 2 && { state: 'pending' }) }),
        }).then((r) => r.status),
      ),
    );
    const batches = Promise.all(
      Array.from({ length: 20 }, (_, i) =>
        fetch(`${servers[i % 2].url}/v1/events`, { method: 'POST', headers: auth, body: JSON.stringify([{ ...item, account_id: acct }, { ...item, account_id: acct }]) }).then(
          async (r) => ((await r.json()).data as { state: string }[]).map((e) => (e.state === 'rejected' ? 402 : 200)),
        ),
      ),
    );
    const all = [...(await singles), ...(await batches).flat()];
    expect(all.filter((s) => s === 200).length).toBe(60);
    expect(all.filter((s) => s === 402).length).toBe(60);
    const limits = await co.call('GET', `/v1/accounts/${acct}/spend_limits`);
    expect(limits.body.data[0].spent).toBe(30);
    expect((await balance(co, acct)).available).toBe(970);
  });
});
