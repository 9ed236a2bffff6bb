import { describe, expect, it } from 'vitest';
import { newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { advance, createAccount, addUnits, spend, topicWebhook, use, useWebhookRecorder, type Co } from '../../testing/scenario';
import { query, sql, textArray } from '../../db/client';

process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
const t = useTestDatabase();
const local = useLocalStripe();

const startReceiver = useWebhookRecorder();

/** A receiver with a topic webhook subscribed to `topics`; it records what it got, in order. */
async function listen(co: Co, topics: string[]) {
  const r = await startReceiver();
  const w = await topicWebhook(co, r.url, topics);
  return {
    id: w.id,
    /** Sends what is due, then answers the topics received so far, in order. */
    async got() {
      await advance(0);
      return r.requests.map((q) => q.json.topic as string);
    },
    /** The balances carried by the deliveries of one topic so far. */
    balances: (topic: string) => r.requests.filter((q) => q.json.topic === topic).map((q) => q.json.balance as string),
  };
}

const count = (topics: string[], topic: string) => topics.filter((x) => x === topic).length;

describe('crossing notifications are armed again by whatever raised the balance', () => {
  it('a batch notifies once per balance and crossing, however many of its items were refused or went below zero', async () => {
    const co = await newCompany(t);
    const r = await startReceiver();
    const w = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: r.url } });
    for (const topic of ['negative_balance', 'pause_balance']) await co.call('POST', `/v1/companies/{company}/webhooks/${w.body.data.id}/subscribe/${topic}`);
    const [a, b, c] = [await createAccount(co), await createAccount(co), await createAccount(co)];
    for (const acct of [a, b, c]) await addUnits(co, acct, 1);
    const item = (account_id: string, gate: boolean) => ({ account_id, type: 'q', cost_override: { amount: 5, denomination: 'credits' }, ...(gate && { gate_on_balance: true }) });
    // a: three refusals; b: three overdrafts (one crossing below zero); c: a refusal and an overdraft,
    // one pause for both since they happen in one call.
    const batch = await co.call('POST', '/v1/events', { body: [item(a, true), item(b, false), item(a, true), item(b, false), item(c, true), item(a, true), item(b, false), item(c, false)] });
    expect(batch.status).toBe(200);
    expect(batch.body.data.map((e: { state: string }) => e.state)).toEqual(['rejected', 'complete', 'rejected', 'complete', 'rejected', 'rejected', 'complete', 'complete']);
    await advance(0);
    const got = r.requests.map((q) => `${q.json.topic} ${q.json.account_id === a ? 'a' : q.json.account_id === b ? 'b' : 'c'}`).sort();
    expect(got).toEqual(['negative_balance b', 'negative_balance c', 'pause_balance a', 'pause_balance b', 'pause_balance c']);
  });

  it('a cancelled hold that had pushed the balance below zero: the next overdraft notifies again', async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['negative_balance', 'pause_balance']);
    const account = await createAccount(co);
    await addUnits(co, account, 10);
    const hold = await use(co, account, 15, { state: 'pending' });
    expect(hold.body.data.balance).toMatchObject({ amount: 10, pending: 15, available: -5 });
    expect((await hook.got()).sort()).toEqual(['negative_balance', 'pause_balance']);

    expect((await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'cancelled' } })).status).toBe(200);
    expect(await hook.got()).toHaveLength(2);
    await spend(co, account, 12);
    const topics = await hook.got();
    expect(count(topics, 'negative_balance')).toBe(2);
    expect(count(topics, 'pause_balance')).toBe(2);
    expect(hook.balances('negative_balance')).toEqual(['10', '-2']);
  });

  it('an expired hold that had pushed the balance below zero: the next overdraft notifies again', async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['negative_balance']);
    const account = await createAccount(co);
    await addUnits(co, account, 10);
    expect((await use(co, account, 15, { state: 'pending' })).status).toBe(200);
    expect(await hook.got()).toEqual(['negative_balance']);
    await advance(3601); // the hold expires
    await spend(co, account, 12);
    expect(await hook.got()).toEqual(['negative_balance', 'negative_balance']);
  });

  it('a refused gated event pauses once until the balance is sufficient again for it; a top-up that makes it so arms it again', async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['pause_balance', 'negative_balance']);
    const account = await createAccount(co);
    await addUnits(co, account, 2);
    expect((await use(co, account, 5, { gate: true })).status).toBe(402);
    expect((await use(co, account, 5, { gate: true })).status).toBe(402);
    expect(await hook.got()).toEqual(['pause_balance']);
    await spend(co, account, 1); // a lower balance is no reason to pause again
    expect((await use(co, account, 5, { gate: true })).status).toBe(402);
    expect(await hook.got()).toEqual(['pause_balance']);

    await addUnits(co, account, 2); // 3 now: raised, but still short of the 5 refused: still paused
    expect((await use(co, account, 5, { gate: true })).status).toBe(402);
    expect(await hook.got()).toEqual(['pause_balance']);
    await addUnits(co, account, 2); // 5: sufficient for what was refused
    await spend(co, account, 1); // 4: short again, and the next refusal pauses again
    expect((await use(co, account, 5, { gate: true })).status).toBe(402);
    expect(await hook.got()).toEqual(['pause_balance', 'pause_balance']);
    expect(hook.balances('pause_balance')).toEqual(['2', '4']);
  });

  it('a balance that went below zero is paused already: a refused gated event sends no second pause_balance', async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['pause_balance', 'negative_balance']);
    const account = await createAccount(co);
    await spend(co, account, 3);
    expect((await hook.got()).sort()).toEqual(['negative_balance', 'pause_balance']);
    expect((await use(co, account, 1, { gate: true })).status).toBe(402);
    expect(await hook.got()).toHaveLength(2);
    // back above zero, then below again: both fire again
    await addUnits(co, account, 5);
    await spend(co, account, 4);
    expect(count(await hook.got(), 'pause_balance')).toBe(2);
    expect(count(await hook.got(), 'negative_balance')).toBe(2);
  });

  it('a daily plan that went negative is reset by its renewal; going negative again notifies again', async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['negative_balance', 'balance_change']);
    const plan = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Daily', billing_period: 'day', balances: [{ amount: 10, denomination: 'calls' }] } });
    expect(plan.status, JSON.stringify(plan.body)).toBe(200);
    const account = await createAccount(co, { plan_id: plan.body.data.id });
    await spend(co, account, 12, { denomination: 'calls' });
    expect((await hook.got()).filter((x) => x === 'negative_balance')).toHaveLength(1);
    await advance(86400); // renewed: back to 10
    expect((await co.call('GET', `/v1/accounts/${account}/balance/calls`)).body.data.amount).toBe(10);
    await spend(co, account, 11, { denomination: 'calls' });
    expect(count(await hook.got(), 'negative_balance')).toBe(2);
    expect(hook.balances('negative_balance')).toEqual(['-2', '-1']);
  });
});

describe('plan grants and resets are balance changes', () => {
  it('plan start, renewal and plan change each send balance_change with the new level', async () => {
    const co = await newCompany(t);
    const r = await startReceiver();
    const w = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: r.url } });
    await co.call('POST', `/v1/companies/{company}/webhooks/${w.body.data.id}/subscribe/balance_change`);
    const daily = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Daily', billing_period: 'day', balances: [{ amount: 10, denomination: 'calls' }] } });
    const bigger = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Bigger', billing_period: 'day', balances: [{ amount: 25, denomination: 'calls' }] } });
    const account = await createAccount(co, { plan_id: daily.body.data.id });
    const sent = async () => {
      await advance(0);
      return r.requests.map((q) => [q.json.topic, q.json.balance]);
    };
    expect(await sent()).toEqual([['balance_change', '10']]);

    await spend(co, account, 4, { denomination: 'calls' });
    expect(await sent()).toEqual([['balance_change', '10'], ['balance_change', '6']]);
    await advance(86400);
    expect(await sent()).toEqual([['balance_change', '10'], ['balance_change', '6'], ['balance_change', '10']]);

    const changed = await co.call('POST', `/v1/accounts/${account}/changeplan`, { body: { plan_id: bigger.body.data.id } });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect((await sent()).slice(3)).toEqual([['balance_change', '25']]);
  });
});

describe('an event that costs nothing', () => {
  it('sends no balance_change, on the single path as on the batch path', async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['balance_change']);
    const account = await createAccount(co);
    await addUnits(co, account, 10);
    expect(await hook.got()).toEqual(['balance_change']);
    await spend(co, account, 0);
    const held = await use(co, account, 0, { denomination: 'credits', state: 'pending' });
    expect(held.status, JSON.stringify(held.body)).toBe(200);
    const batch = await co.call('POST', '/v1/events', { body: [{ account_id: account, type: 'q', cost_override: { amount: 0, denomination: 'credits' } }] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(200);
    expect(await hook.got()).toEqual(['balance_change']);
    await spend(co, account, 1);
    expect(await hook.got()).toEqual(['balance_change', 'balance_change']);
    expect(hook.balances('balance_change')).toEqual(['10', '9']);
  });
});

describe('refill_failed', () => {
  it('carries the balance the refill was meant to raise', async () => {
    const co = await newPayingCompany(t);
    const hook = await listen(co, ['refill_failed']);
    const account = await createAccount(co, { token: 'tok_chargeDeclined' });
    await addUnits(co, account, 50);
    const set = await co.call('PUT', `/v1/accounts/${account}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, threshold: 20 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    await spend(co, account, 42.5);
    expect(await hook.got()).toEqual(['refill_failed']);
    expect(hook.balances('refill_failed')).toEqual(['7.5']);
  });
});

describe('a mid-month change', () => {
  it('cancels and grants as one move: no threshold crossing for the dip in between', async () => {
    const co = await newPayingCompany(t);
    const hook = await listen(co, ['threshold', 'auto_refill', 'balance_change']);
    const account = await createAccount(co, { token: 'tok_visa' });
    const set = await co.call('PUT', `/v1/accounts/${account}/balance/credits/auto_refill`, { body: { amount: 100, usd_charge: 1000, refill_period: 'monthly', threshold: 10 } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(await hook.got()).toEqual(['auto_refill', 'balance_change']);
    const raise = await co.call('POST', `/v1/accounts/${account}/modifymidmonth`, { body: { denomination: 'credits', amount: 200, usd_charge: 2000 } });
    expect(raise.status, JSON.stringify(raise.body)).toBe(200);
    expect(raise.body.data.amount).toBe(200);
    expect(await hook.got()).toEqual(['auto_refill', 'balance_change', 'auto_refill', 'balance_change']);
    expect(hook.balances('balance_change')).toEqual(['100', '200']);
    const ledger = (await co.call('GET', `/v1/accounts/${account}/transactions`)).body.data as { type: string; amount: number; ending_balance: number }[];
    expect(ledger.map((r) => [r.type, r.amount, r.ending_balance])).toEqual([
      ['refill', 200, 200],
      ['refill_cancelled', -100, 0],
      ['refill', 100, 100],
    ]);
    const balanceId = (await co.call('GET', `/v1/accounts/${account}/balance/credits`)).body.data.id as string;
    const [{ n }] = await query<{ n: string }>(t.database.db, sql`select count(*)::text as n from jobs where kind = 'threshold_refill' and dedupe_key = ${balanceId}`);
    expect(n).toBe('0');
  });
});

describe('payment_failed', () => {
  it('is not sent for an account whose creation its declined first charge refused', async () => {
    const co = await newPayingCompany(t);
    const hook = await listen(co, ['payment_failed']);
    const plan = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Pro', charge_amount: 2500, balances: [{ amount: 10, denomination: 'calls' }] } });
    const refused = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'No', email: 'no@x.io', plan_id: plan.body.data.id, token: 'tok_chargeDeclined' } });
    expect(refused.status, JSON.stringify(refused.body)).toBe(402);
    // An account that stays, declined too: its payment_failed goes out.
    const kept = await createAccount(co, { token: 'tok_chargeDeclined' });
    const deposit = await co.call('POST', `/v1/accounts/${kept}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 5, amount_to_charge: 500 } });
    expect(deposit.status, JSON.stringify(deposit.body)).toBe(402);
    expect(await hook.got()).toEqual(['payment_failed']);
    const deliveries = (await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries`)).body.data as { account_id: string }[];
    expect(deliveries.map((d) => d.account_id)).toEqual([kept]);
  });

  it('is never even queued for a refused creation, so no worker can send it before the account is gone', async () => {
    const co = await newPayingCompany(t);
    await listen(co, ['payment_failed']);
    const plan = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Pro', charge_amount: 2500, balances: [{ amount: 10, denomination: 'calls' }] } });
    // Every delivery row ever written, even one deleted in the same request, is noted here.
    const db = t.database.db;
    await query(db, sql`create table queued_deliveries (account_id text, topic text)`);
    await query(db, sql.raw(`create function note_delivery() returns trigger language plpgsql as $$ begin insert into queued_deliveries values (new.account_id, new.topic); return new; end $$`));
    await query(db, sql`create trigger note_delivery after insert on webhook_deliveries for each row execute function note_delivery()`);
    try {
      const body = { name: 'No', email: 'no@x.io', plan_id: plan.body.data.id, token: 'tok_chargeDeclined' };
      const refused = await co.call('POST', '/v1/companies/{company}/accounts', { body });
      expect(refused.status, JSON.stringify(refused.body)).toBe(402);
      // A retry that carries on with its first attempt's pending charge, and learns of the decline.
      await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'POST' });
      await local.control('fail', { status: 500, count: 1, path_prefix: '/v1/payment_intents', method: 'GET' });
      const headers = { 'Idempotency-Key': 'refused-on-retry' };
      const first = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
      expect(first.body.error, JSON.stringify(first.body)).toMatchObject({ charge_pending: true, account_id: expect.stringMatching(/^a_/) });
      const retry = await co.call('POST', '/v1/companies/{company}/accounts', { body, headers });
      expect(retry.status, JSON.stringify(retry.body)).toBe(402);
      expect((await co.call('GET', `/v1/accounts/${first.body.error.account_id}`)).status).toBe(404);
      expect((await co.call('GET', '/v1/companies/{company}/accounts')).body.data).toEqual([]);
      const charges = await query<{ status: string }>(db, sql`select status from charges where company_id = ${co.company.id} order by created_at`);
      expect(charges.map((c) => c.status)).toEqual(['failed', 'failed']);
      expect(await query(db, sql`select * from queued_deliveries`)).toEqual([]);
    } finally {
      await query(db, sql`drop trigger note_delivery on webhook_deliveries`);
      await query(db, sql`drop function note_delivery()`);
      await query(db, sql`drop table queued_deliveries`);
    }
  });
});

describe("a batch's balance_change", () => {
  it('is queued once per webhook and balance it moved, on every path the batch takes, and coalesced with one still waiting', async () => {
    const co = await newCompany(t);
    const [first, second] = [await listen(co, ['balance_change', 'negative_balance']), await listen(co, ['balance_change'])];
    const [a, b, c, d, idle] = [await createAccount(co), await createAccount(co), await createAccount(co), await createAccount(co), await createAccount(co)];
    for (const [acct, amount] of [[a, 10], [b, 10], [c, 1], [d, 10], [idle, 10]] as const) await addUnits(co, acct, amount);
    // The grants' balance_change deliveries go out, so none is left waiting to coalesce with.
    expect(await second.got()).toEqual(['balance_change', 'balance_change', 'balance_change', 'balance_change', 'balance_change']);
    await first.got();
    const names = new Map([[a, 'a'], [b, 'b'], [c, 'c'], [d, 'd'], [idle, 'idle']]);
    const item = (account_id: string, amount: number | string, state?: 'pending') => ({ account_id, type: 'q', cost_override: { amount, denomination: 'credits' }, ...(state && { state }) });
    const pending = async (hook: { id: string }) => {
      const r = await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries`);
      expect(r.status).toBe(200);
      return (r.body.data as { id: string; account_id: string; topic: string; status: string; payload: { balance: string } }[]).filter((x) => x.status === 'pending');
    };
    // a: two events and b: one, balances that only fall (the balance statement queues theirs);
    // c: below zero (a crossing, queued beside its negative_balance); d: a hold alone (its amount
    // does not move); idle: nothing.
    const batch = await co.call('POST', '/v1/events', { body: [item(a, '1.25'), item(b, 3), item(a, '1.75'), item(c, 5), item(d, 4, 'pending')] });
    expect(batch.status).toBe(200);
    for (const hook of [first, second]) {
      const queued = await pending(hook);
      const expected = [
        ['a', 'balance_change', '7'],
        ['b', 'balance_change', '7'],
        ['c', 'balance_change', '-4'],
        ['d', 'balance_change', '10'],
        ...(hook === first ? [['c', 'negative_balance', '-4']] : []),
      ];
      expect(queued.map((x) => [names.get(x.account_id), x.topic, x.payload.balance]).sort()).toEqual(expected.sort());
      for (const x of queued) expect(x.id).toMatch(/^whd_[0-9a-z]{26}_[0-9a-f]{8}$/);
      expect(new Set(queued.map((x) => x.id)).size).toBe(queued.length);
    }

    // While those wait, a second batch over a, b and c queues no other balance_change for them.
    const again = await co.call('POST', '/v1/events', { body: [item(a, 1), item(b, 1), item(c, 1)] });
    expect(again.status).toBe(200);
    expect((await pending(second)).map((x) => names.get(x.account_id)).sort()).toEqual(['a', 'b', 'c', 'd']);
    // Sent, they carry each balance as it is then.
    expect(await second.got()).toHaveLength(9);
    expect(second.balances('balance_change').slice(5).sort()).toEqual(['-5', '10', '6', '6']);
  });
  it("is made beside its balance's first ledger row of the batch, however often the batch repeats the account", async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['balance_change']);
    const [a, b] = [await createAccount(co), await createAccount(co)];
    for (const acct of [a, b]) await addUnits(co, acct, 10);
    await hook.got();
    const item = (account_id: string, amount: string) => ({ account_id, type: 'q', cost_override: { amount, denomination: 'credits' } });
    // Every draw fits in the balances' grants: the batch statement writes the rows and queues the deliveries itself.
    const batch = await co.call('POST', '/v1/events', { body: [item(b, '3'), item(a, '1.25'), item(b, '0.5'), item(a, '1.75'), item(a, '1')] });
    expect(batch.status).toBe(200);
    const ids = batch.body.data.map((e: { id: string }) => e.id) as string[];
    const ledger = await query<{ id: string; event_id: string }>(t.database.db, sql`select id, event_id from transactions where event_id = any(${textArray(ids)}::text[]) order by id`);
    expect(ledger.map((r) => ids.indexOf(r.event_id))).toEqual([0, 1, 2, 3, 4]);
    const r = await co.call('GET', `/v1/companies/{company}/webhooks/${hook.id}/deliveries`);
    const queued = (r.body.data as { id: string; account_id: string; topic: string; status: string; payload: { balance: string } }[]).filter((x) => x.status === 'pending');
    expect(queued.map((x) => [x.account_id === a ? 'a' : 'b', x.payload.balance]).sort()).toEqual([['a', '6'], ['b', '6.5']]);
    const beside = (event: number) => `whd_${ledger.find((x) => x.event_id === ids[event])!.id.split('_')[1]}_`;
    expect(queued.find((x) => x.account_id === a)!.id.startsWith(beside(1))).toBe(true);
    expect(queued.find((x) => x.account_id === b)!.id.startsWith(beside(0))).toBe(true);
  });
  // Another connection must be able to hold the balance's lock while the request waits: PostgreSQL only.
  it.skipIf(process.env.TEST_DB !== 'postgres')("sees the balance_change queued while it waited for the balance's lock, on the batch and the single-event path", async () => {
    const co = await newCompany(t);
    const hook = await listen(co, ['balance_change']);
    const account = await createAccount(co);
    await addUnits(co, account, 10);
    const db = t.database.db;
    const key = `${hook.id}:${account}:credits`;
    const waiting = async () =>
      (await query<{ n: number }>(db, sql`select count(*)::int as n from webhook_deliveries where coalesce_key = ${key} and status = 'pending'`))[0].n;
    const whileLocked = async (request: () => Promise<{ status: number }>) => {
      // Nothing waiting to coalesce with, as after a send.
      await query(db, sql`update webhook_deliveries set status = 'succeeded' where coalesce_key = ${key}`);
      let release!: () => void;
      const held = new Promise<void>((r) => (release = r));
      let locked!: () => void;
      const isLocked = new Promise<void>((r) => (locked = r));
      const holder = db.transaction(async (tx) => {
        await query(tx, sql`select 1 from balances where account_id = ${account} for update`);
        locked();
        await held;
      });
      await isLocked;
      const answer = request();
      // The request's statement has taken its snapshot and waits for the lock...
      for (let i = 0; ; i++) {
        const [w] = await query<{ n: number }>(db, sql`select count(*)::int as n from pg_stat_activity where wait_event_type = 'Lock' and datname = current_database()`);
        if (w.n > 0) break;
        if (i > 200) throw new Error('the request never waited for the lock');
        await new Promise((r) => setTimeout(r, 10));
      }
      // ...when another writer's balance_change for the same webhook and balance commits.
      await query(
        db,
        sql`insert into webhook_deliveries (id, company_id, webhook_id, topic, account_id, denomination, payload, status, attempts, next_attempt_at, coalesce_key, created_at, updated_at)
          values (${`whd_other_${Math.random().toString(36).slice(2)}`}, ${co.company.id}, ${hook.id}, 'balance_change', ${account}, 'credits', '{"balance": "10", "detail": {}}', 'pending', 0, now(), ${key}, now(), now())`,
      );
      release();
      await holder;
      expect((await answer).status).toBe(200);
      // One waiting delivery, not a second beside it.
      expect(await waiting()).toBe(1);
    };
    await whileLocked(() => co.call('POST', '/v1/events', { body: [{ account_id: account, type: 'q', cost_override: { amount: 1, denomination: 'credits' } }] }));
    await whileLocked(() => co.call('POST', `/v1/accounts/${account}/events`, { body: { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits' } }));
    expect((await co.call('GET', `/v1/accounts/${account}/balance/credits`)).body.data.amount).toBe(8);
  });
});
