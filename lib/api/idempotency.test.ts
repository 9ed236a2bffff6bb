process.env.BILLING_TEST_CLOCK = '1';

import { sql } from 'drizzle-orm';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../testing/harness';
import { idempotencyTiming } from './idempotency';
import { now } from '../clock';

const t = useTestDatabase();
const local = useLocalStripe();

/**
 * Stands for a process that dies right after a request's writes, before its answer is stored:
 * storing (or dropping) the answer of an Idempotency-Key starting with "crash-" fails.
 */
async function breakAnswerStorage() {
  await t.database.db.execute(
    sql.raw(`create or replace function fail_answer_storage() returns trigger language plpgsql as $$
      begin
        if old.key like 'crash-%' then raise exception 'connection to the database lost'; end if;
        return case when tg_op = 'DELETE' then old else new end;
      end $$`),
  );
  await t.database.db.execute(sql.raw('create trigger fail_answer_storage before update or delete on idempotency_keys for each row execute function fail_answer_storage()'));
}

async function repairAnswerStorage() {
  await t.database.db.execute(sql.raw('drop trigger if exists fail_answer_storage on idempotency_keys'));
  // A key its request left "in progress" is run again a minute later: let that minute pass.
  await t.database.db.execute(sql.raw(`update idempotency_keys set created_at = created_at - interval '2 minutes', alive_at = alive_at - interval '2 minutes' where key like 'crash-%'`));
}

describe('Idempotency-Key when the request dies before its answer is stored', () => {
  let acme: Awaited<ReturnType<typeof newCompany>>;
  let account: string;
  beforeAll(async () => {
    acme = await newCompany(t);
    account = (await acme.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Crash', email: 'crash@x.io', processor_id: 'cus_crash' } })).body.data.id;
  });
  afterEach(repairAnswerStorage);

  /** Sends the request while answers cannot be stored, then retries it with the same key until it is answered. */
  async function sendThroughCrash(method: string, path: string, body: unknown, key: string) {
    await breakAnswerStorage();
    const first = await acme.call(method, path, { body, headers: { 'Idempotency-Key': key } });
    expect(first.status, JSON.stringify(first.body)).toBe(500);
    await repairAnswerStorage();
    const retry = await acme.call(method, path, { body, headers: { 'Idempotency-Key': key } });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    const replay = await acme.call(method, path, { body, headers: { 'Idempotency-Key': key } });
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(replay.body).toEqual(retry.body);
    return retry;
  }

  async function ledger(denomination: string) {
    const res = await acme.call('GET', `/v1/accounts/${account}/transactions?limit=1000`);
    return (res.body.data as { denomination: string; amount: number; description: string }[]).filter((r) => r.denomination === denomination);
  }

  it('grants units once', async () => {
    const res = await sendThroughCrash('POST', `/v1/accounts/${account}/balance/gpu`, { amount: 10, reason: 'grant once' }, 'crash-grant');
    expect(res.body.data.amount).toBe(10);
    expect((await ledger('gpu')).map((r) => r.amount)).toEqual([10]);
  });

  it('deposits free units once', async () => {
    const res = await sendThroughCrash('POST', `/v1/accounts/${account}/deposit`, { denomination: 'free', amount_to_deposit: 7, reason: 'deposit once' }, 'crash-deposit');
    expect(res.body.data.amount).toBe(7);
    expect((await ledger('free')).map((r) => r.amount)).toEqual([7]);
  });

  it('records an event sent with only the header key once, and a batch once', async () => {
    await acme.call('POST', `/v1/accounts/${account}/balance/tokens`, { body: { amount: 100 } });
    const one = await sendThroughCrash('POST', `/v1/accounts/${account}/events`, { type: 'chat', cost_override_amount: 3, cost_override_denomination: 'tokens' }, 'crash-event');
    expect(one.body.data.balance.amount).toBe(97);
    const batch = [1, 2].map(() => ({ account_id: account, type: 'chat', cost_override: { amount: 5, denomination: 'tokens' } }));
    await sendThroughCrash('POST', '/v1/events', batch, 'crash-batch');
    expect((await ledger('tokens')).map((r) => r.amount).sort()).toEqual([-3, -5, -5, 100]);
    const events = await acme.call('GET', `/v1/companies/{company}/events?account_id=${account}&type=chat`);
    expect(events.body.data).toHaveLength(3);
  });

  it('stores a refusal with what the request recorded before refusing', async () => {
    const body = { type: 'render', cost_override_amount: 1000, cost_override_denomination: 'tokens', gate_on_balance: true };
    const headers = { 'Idempotency-Key': 'gated-1' };
    const first = await acme.call('POST', `/v1/accounts/${account}/events`, { body, headers });
    expect(first.status).toBe(402);
    const again = await acme.call('POST', `/v1/accounts/${account}/events`, { body, headers });
    expect(again.status).toBe(402);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body.error.rejected_event_id).toBe(first.body.error.rejected_event_id);
    const rejected = await acme.call('GET', `/v1/companies/{company}/events?account_id=${account}&state=rejected`);
    expect(rejected.body.data.map((e: { id: string }) => e.id)).toEqual([first.body.error.rejected_event_id]);
  });

  it('stores a refusal the database answered for (a url taken by another registration)', async () => {
    await acme.call('POST', '/v1/webhooks', { body: { type: 'negative_balance', url: 'https://hooks.example.com/taken' } });
    const other = await acme.call('POST', '/v1/webhooks', { body: { type: 'threshold', url: 'https://hooks.example.com/other' } });
    const path = `/v1/companies/{company}/webhooks/${other.body.data.id}`;
    const headers = { 'Idempotency-Key': 'taken-url' };
    const first = await acme.call('PATCH', path, { body: { url: 'https://hooks.example.com/taken' }, headers });
    expect(first.status, JSON.stringify(first.body)).toBe(409);
    expect(first.body.error.param).toBe('url');
    const again = await acme.call('PATCH', path, { body: { url: 'https://hooks.example.com/taken' }, headers });
    expect(again.status).toBe(409);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
  });

  it('applies two requests with one key sent at once once, and answers both alike', async () => {
    const body = { amount: 4, reason: 'at once' };
    const [a, b] = await Promise.all([0, 1].map(() => acme.call('POST', `/v1/accounts/${account}/balance/twice`, { body, headers: { 'Idempotency-Key': 'together' } })));
    const statuses = [a.status, b.status].sort();
    // The second waits for the first and replays it (or, where the key is still being worked
    // on without a transaction, is told to retry).
    expect(statuses[0]).toBe(200);
    if (statuses[1] === 200) expect(b.body).toEqual(a.body);
    else expect(statuses[1]).toBe(409);
    expect((await ledger('twice')).map((r) => r.amount)).toEqual([4]);
  });
});

describe('Idempotency-Key of a request that runs longer than a dead one would stay silent', () => {
  it('is renewed while the request runs: a retry meanwhile is told to wait, and the card is charged once', async () => {
    const co = await newPayingCompany(t);
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Slow', email: 'slow@x.io', token: 'tok_visa' } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const account = created.body.data.id as string;
    const body = { denomination: 'credits', amount_to_deposit: 5, amount_to_charge: 500 };
    const headers = { 'Idempotency-Key': 'slow-deposit' };
    // A key silent for 0.9 s counts as abandoned; the processor takes 3 s to answer the charge.
    idempotencyTiming.abandonedMs = 900;
    try {
      await local.control('fail', { path_prefix: '/v1/payment_intents', method: 'POST', delay_ms: 3000, count: 1 });
      const first = co.call('POST', `/v1/accounts/${account}/deposit`, { body, headers });
      await new Promise((r) => setTimeout(r, 2000));
      const retry = await co.call('POST', `/v1/accounts/${account}/deposit`, { body, headers });
      expect(retry.status, JSON.stringify(retry.body)).toBe(409);
      expect(retry.body.error.message).toMatch(/still in progress/);
      expect(retry.headers.get('retry-after')).toBe('1');
      const answered = await first;
      expect(answered.status, JSON.stringify(answered.body)).toBe(200);
      const again = await co.call('POST', `/v1/accounts/${account}/deposit`, { body, headers });
      expect(again.status).toBe(200);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
    } finally {
      idempotencyTiming.abandonedMs = 60_000;
    }
    const charges = (await co.call('GET', `/v1/accounts/${account}/charges`)).body.data as { reason: string; status: string }[];
    expect(charges.filter((c) => c.reason === 'deposit').map((c) => c.status)).toEqual(['succeeded']);
    expect((await co.call('GET', `/v1/accounts/${account}/balance/credits`)).body.data.amount).toBe(5);
  });
});

describe('Idempotency-Key of a request answered "try again in a moment"', () => {
  it('keeps no such answer: the retry with the key runs the request once the other work is done', async () => {
    const co = await newPayingCompany(t);
    const pro = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Pro', charge_amount: 1000, balances: [{ amount: 10, denomination: 'calls' }] } });
    const max = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Max', charge_amount: 3000, balances: [{ amount: 50, denomination: 'calls' }] } });
    const created = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Busy', email: 'busy@x.io', token: 'tok_visa', plan_id: pro.body.data.id } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const account = created.body.data.id as string;
    // A renewal of the account is under way (its plan lease is taken).
    await t.database.db.execute(sql`update accounts set renewal_locked_until = ${new Date(now().getTime() + 60_000).toISOString()}::timestamptz where id = ${account}`);
    const headers = { 'Idempotency-Key': 'upgrade-while-busy' };
    const busy = await co.call('POST', `/v1/accounts/${account}/changeplan`, { body: { plan_id: max.body.data.id }, headers });
    expect(busy.status).toBe(409);
    expect(busy.headers.get('retry-after')).toBe('1');
    expect(busy.body.error.message).toMatch(/in progress; try again in a moment/);
    await t.database.db.execute(sql`update accounts set renewal_locked_until = null where id = ${account}`);
    const retry = await co.call('POST', `/v1/accounts/${account}/changeplan`, { body: { plan_id: max.body.data.id }, headers });
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.headers.get('idempotent-replayed')).toBeNull();
    expect(retry.body.data.plan_id).toBe(max.body.data.id);
  });
});
