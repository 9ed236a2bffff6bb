process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { addUnits, advance, balance, createAccount, expectLedgerMatches, topicWebhook, use, useWebhookRecorder, type Co } from '../../testing/scenario';
import { now } from '../../clock';
import { spendPeriodStart } from './spend-limits';

const t = useTestDatabase();
const startReceiver = useWebhookRecorder();

type Limit = { denomination: string; period: string; limit: number | string; action: string };

async function setLimits(co: Co, account: string, limits: Limit[]) {
  const r = await co.call('PUT', `/v1/accounts/${account}/spend_limits`, { body: limits });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as (Limit & { spent: number; period_start: string; period_end: string })[];
}

async function getLimits(co: Co, account: string) {
  const r = await co.call('GET', `/v1/accounts/${account}/spend_limits`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as (Limit & { spent: number; period_start: string; period_end: string })[];
}

const check = async (co: Co, account: string, amount: number | string, extra: Record<string, unknown> = {}) => {
  const r = await co.call('POST', `/v1/accounts/${account}/check`, { body: { type: 'q', cost_override_amount: amount, cost_override_denomination: 'credits', ...extra } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as { allowed: boolean; reason: string | null };
};

/** Moves the test clock to the next UTC midnight (and a second past it). */
async function toNextDay() {
  const n = now();
  const next = Date.UTC(n.getUTCFullYear(), n.getUTCMonth(), n.getUTCDate() + 1);
  await advance(Math.ceil((next - n.getTime()) / 1000) + 1);
}

/** Moves the test clock to a second past 00:00 UTC of the next day that is not the last of its week or month, so tests start mid-period. */
async function toQuietDay() {
  await toNextDay();
  for (;;) {
    const n = now();
    const tomorrow = new Date(Date.UTC(n.getUTCFullYear(), n.getUTCMonth(), n.getUTCDate() + 1));
    if (tomorrow.getUTCDay() !== 1 && tomorrow.getUTCDate() !== 1) return;
    await toNextDay();
  }
}

describe('spend limits', () => {
  it('are set, read and cleared exactly; bad input names its field and stores nothing', async () => {
    const co = await newCompany(t);
    const acct = await createAccount(co);
    const set = await setLimits(co, acct, [
      { denomination: 'credits', period: 'day', limit: '0.3', action: 'reject' },
      { denomination: 'credits', period: 'day', limit: '0.1', action: 'notify' },
      { denomination: 'tokens', period: 'month', limit: 1000, action: 'notify' },
    ]);
    expect(set.map((l) => [l.denomination, l.period, l.limit, l.action, l.spent])).toEqual([
      ['credits', 'day', 0.3, 'reject', 0],
      ['credits', 'day', 0.1, 'notify', 0],
      ['tokens', 'month', 1000, 'notify', 0],
    ]);
    const n = now();
    expect(set[0].period_start).toBe(spendPeriodStart('day', n).toISOString());
    expect(set[2].period_start).toBe(new Date(Date.UTC(n.getUTCFullYear(), n.getUTCMonth(), 1)).toISOString());
    expect(set[2].period_end).toBe(new Date(Date.UTC(n.getUTCFullYear(), n.getUTCMonth() + 1, 1)).toISOString());
    expect(await getLimits(co, acct)).toEqual(set);

    const bad: [unknown, string][] = [
      [[{ denomination: 'credits', period: 'day', limit: 1, action: 'reject' }, { denomination: 'credits', period: 'year', limit: 1, action: 'reject' }], '[1].period'],
      [[{ denomination: 'credits', period: 'day', limit: 1, action: 'block' }], '[0].action'],
      [[{ denomination: 'credits', period: 'day', limit: -1, action: 'reject' }], '[0].limit'],
      [[{ denomination: 'credits', period: 'day', limit: '0.0000000000001', action: 'reject' }], '[0].limit'],
      [[{ denomination: 'cr edits', period: 'day', limit: 1, action: 'reject' }], '[0].denomination'],
      [[{ denomination: 'credits', period: 'day', limit: 1, action: 'reject' }, { denomination: 'credits', period: 'day', limit: 2, action: 'reject' }], '[1].period'],
      [[{ denomination: 'credits', period: 'day', action: 'reject' }], '[0].limit'],
      [[{ denomination: 'credits', period: 'day', limit: 1, action: 'reject', extra: 1 }], '[0].extra'],
    ];
    for (const [body, param] of bad) {
      const r = await co.call('PUT', `/v1/accounts/${acct}/spend_limits`, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.type).toBe('invalid_request');
      expect(r.body.error.param).toBe(param);
    }
    const notArray = await co.call('PUT', `/v1/accounts/${acct}/spend_limits`, { body: { denomination: 'credits' } });
    expect(notArray.status).toBe(400);
    expect(await getLimits(co, acct)).toEqual(set);

    // Another company's account is not found, read or written.
    const other = await newCompany(t);
    expect((await other.call('GET', `/v1/accounts/${acct}/spend_limits`)).status).toBe(404);
    const put = await other.call('PUT', `/v1/accounts/${acct}/spend_limits`, { body: [] });
    expect(put.status).toBe(404);
    expect(put.body.error.param).toBe('account_id');
    expect(await getLimits(co, acct)).toEqual(set);

    expect(await setLimits(co, acct, [])).toEqual([]);
    expect(await getLimits(co, acct)).toEqual([]);
  });

  it('a reject limit refuses the event that would pass it, gated or not, recorded with reason spend_limit; a new day starts from zero', async () => {
    await toQuietDay();
    const co = await newCompany(t);
    const acct = await createAccount(co);
    await addUnits(co, acct, 100);
    await setLimits(co, acct, [{ denomination: 'credits', period: 'day', limit: 10, action: 'reject' }]);

    expect((await use(co, acct, 4)).status).toBe(200);
    expect((await use(co, acct, '4.5', { gate: true })).status).toBe(200);
    expect(await check(co, acct, '1.5')).toMatchObject({ allowed: true, reason: null });
    expect(await check(co, acct, '1.6')).toMatchObject({ allowed: false, reason: 'spend_limit' });
    expect(await check(co, acct, '1.6', { gate_on_balance: false })).toMatchObject({ allowed: false, reason: 'spend_limit' });

    for (const gate of [false, true]) {
      const refused = await use(co, acct, '1.6', { gate });
      expect(refused.status).toBe(402);
      expect(refused.body.error.type).toBe('spend_limit_exceeded');
      expect(refused.body.error.param).toBeNull();
      const ev = await co.call('GET', `/v1/events/${refused.body.error.rejected_event_id}`);
      expect(ev.body.data).toMatchObject({ state: 'rejected', reason: 'spend_limit', cost: { amount: 1.6, denomination: 'credits' } });
    }
    // Exactly to the limit passes; past it nothing does, however small.
    expect((await use(co, acct, '1.5')).status).toBe(200);
    expect((await use(co, acct, '0.000000000001')).status).toBe(402);
    // An event that costs nothing always passes.
    expect((await use(co, acct, 0)).status).toBe(200);
    expect((await balance(co, acct)).amount).toBe(90);
    expect((await getLimits(co, acct))[0].spent).toBe(10);

    // A gated event lacking balance is still insufficient_balance when under the limit.
    await setLimits(co, acct, [{ denomination: 'credits', period: 'month', limit: 1000, action: 'reject' }]);
    const poor = await use(co, acct, 200, { gate: true });
    expect(poor.status).toBe(402);
    expect(poor.body.error.type).toBe('insufficient_balance');
    expect(await check(co, acct, 200)).toMatchObject({ allowed: false, reason: 'insufficient_balance' });

    await setLimits(co, acct, [{ denomination: 'credits', period: 'day', limit: 10, action: 'reject' }]);
    // Setting the limits again counted today's spend from the events.
    expect((await getLimits(co, acct))[0].spent).toBe(10);
    expect((await use(co, acct, 1)).status).toBe(402);
    await toNextDay();
    expect((await getLimits(co, acct))[0].spent).toBe(0);
    expect((await use(co, acct, 10)).status).toBe(200);
    expect((await use(co, acct, 1)).status).toBe(402);
    await expectLedgerMatches(t.database.db, co, acct);
  });

  it('week and month limits hold across days, and roll over at their own boundaries', async () => {
    await toQuietDay();
    const co = await newCompany(t);
    const acct = await createAccount(co);
    await setLimits(co, acct, [
      { denomination: 'credits', period: 'week', limit: 5, action: 'reject' },
      { denomination: 'credits', period: 'month', limit: 7, action: 'reject' },
    ]);
    expect((await use(co, acct, 3)).status).toBe(200);
    const monthStart = spendPeriodStart('month', now()).getTime();
    await toNextDay();
    // Still the same week (the quiet day was not a week's last): the week's 5 holds.
    const n = now();
    expect(spendPeriodStart('week', n).getTime()).toBe(spendPeriodStart('week', new Date(n.getTime() - 86_400_000)).getTime());
    expect((await use(co, acct, 3)).status).toBe(402);
    expect((await use(co, acct, 2)).status).toBe(200);
    // To the next Monday: a new week, the same month or a new one.
    for (;;) {
      await toNextDay();
      if (now().getUTCDay() === 1) break;
    }
    const limits = await getLimits(co, acct);
    const week = limits.find((l) => l.period === 'week')!;
    expect(week.spent).toBe(0);
    expect(week.period_start).toBe(spendPeriodStart('week', now()).toISOString());
    const month = limits.find((l) => l.period === 'month')!;
    const sameMonth = spendPeriodStart('month', now()).getTime() === monthStart;
    expect(month.spent).toBe(sameMonth ? 5 : 0);
    expect((await use(co, acct, 3)).status).toBe(sameMonth ? 402 : 200);
  });

  it('holds count at their held cost; completion, cancellation and expiry move the spend', async () => {
    await toQuietDay();
    const co = await newCompany(t);
    const acct = await createAccount(co);
    await addUnits(co, acct, 100);
    await setLimits(co, acct, [{ denomination: 'credits', period: 'day', limit: 10, action: 'reject' }]);
    const hold = await use(co, acct, 6, { state: 'pending' });
    expect(hold.status).toBe(200);
    expect((await getLimits(co, acct))[0].spent).toBe(6);
    expect(await check(co, acct, 5)).toMatchObject({ allowed: false, reason: 'spend_limit' });
    expect((await use(co, acct, 5)).status).toBe(402);
    // A hold past the limit is refused as well.
    expect((await use(co, acct, 5, { state: 'pending' })).status).toBe(402);

    // Completed at 2: spend 2, and 8 more may pass.
    const done = await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'complete', cost_override_amount: 2 } });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect((await getLimits(co, acct))[0].spent).toBe(2);
    const second = await use(co, acct, 8, { state: 'pending' });
    expect(second.status).toBe(200);
    expect((await use(co, acct, 1)).status).toBe(402);
    // Cancelled: its 8 no longer count.
    expect((await co.call('PUT', `/v1/events/${second.body.data.id}`, { body: { state: 'cancelled' } })).status).toBe(200);
    expect((await getLimits(co, acct))[0].spent).toBe(2);
    // A hold that lapses stops counting at its expiry, whether or not the sweep ran.
    const short = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 8, cost_override_denomination: 'credits', state: 'pending', expires_in: 60 } });
    expect(short.status).toBe(200);
    expect(await check(co, acct, 1)).toMatchObject({ allowed: false, reason: 'spend_limit' });
    await advance(61);
    expect((await getLimits(co, acct))[0].spent).toBe(2);
    // Completed past what was held (overage allowed): the whole actual counts.
    const third = await use(co, acct, 3, { state: 'pending' });
    expect((await co.call('PUT', `/v1/events/${third.body.data.id}`, { body: { state: 'complete', cost_override_amount: 7 } })).status).toBe(200);
    expect((await getLimits(co, acct))[0].spent).toBe(9);
    expect((await use(co, acct, 2)).status).toBe(402);
    expect((await use(co, acct, 1)).status).toBe(200);
    expect((await balance(co, acct)).amount).toBe(90);
    await expectLedgerMatches(t.database.db, co, acct);
  });

  it('a hold completed past what was held is taken as overage_behavior says, past a reject limit too: the whole actual counts and later events are refused', async () => {
    await toQuietDay();
    const co = await newCompany(t);
    const acct = await createAccount(co);
    const rec = await startReceiver();
    await topicWebhook(co, rec.url, ['spend_limit_reached']);
    await addUnits(co, acct, 100);
    await setLimits(co, acct, [
      { denomination: 'credits', period: 'day', limit: 10, action: 'reject' },
      { denomination: 'credits', period: 'day', limit: 8, action: 'notify' },
    ]);
    const hold = await use(co, acct, 4, { state: 'pending' });
    expect(hold.status).toBe(200);
    // A new event of what the actual adds is refused...
    expect(await check(co, acct, 8)).toMatchObject({ allowed: false, reason: 'spend_limit' });
    expect((await use(co, acct, 8, { gate: false })).status).toBe(402);
    // ...but the hold's usage happened: completed at 12 (overage allowed, the default), all 12 are taken.
    const body = { state: 'complete', cost_override_amount: 12 };
    const done = await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body.data).toMatchObject({ state: 'complete', cost: { amount: 12, denomination: 'credits' }, held_cost: { amount: 4, denomination: 'credits' } });
    expect((await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body })).status).toBe(200);
    // Counted whole: the day's spend is past the reject limit, and nothing more passes today.
    const limits = await getLimits(co, acct);
    expect(limits.map((l) => [l.action, l.spent])).toEqual([['reject', 12], ['notify', 12]]);
    expect(await check(co, acct, '0.000000000001')).toMatchObject({ allowed: false, reason: 'spend_limit' });
    const refused = await use(co, acct, 1);
    expect(refused.status).toBe(402);
    expect(refused.body.error.type).toBe('spend_limit_exceeded');
    expect((await use(co, acct, 1, { state: 'pending' })).status).toBe(402);
    expect((await use(co, acct, 0)).status).toBe(200);
    // Passing the notify limit by a completion notifies, once.
    await advance(0);
    expect(rec.requests.map((q) => [q.json.topic, q.json.data.limit, q.json.data.spent])).toEqual([['spend_limit_reached', '8', '12']]);
    expect((await balance(co, acct)).amount).toBe(88);

    // The next day: capped, a completion is held to what was held plus what is available, not to the limit.
    await toNextDay();
    const next = await use(co, acct, 9, { state: 'pending' });
    expect(next.status).toBe(200);
    const capped = await co.call('PUT', `/v1/events/${next.body.data.id}`, { body: { state: 'complete', cost_override_amount: 15, overage_behavior: 'cap' } });
    expect(capped.status, JSON.stringify(capped.body)).toBe(200);
    expect(capped.body.data.cost.amount).toBe(15);
    expect((await getLimits(co, acct))[0].spent).toBe(15);
    expect((await use(co, acct, 1)).status).toBe(402);
    expect((await balance(co, acct)).amount).toBe(73);
    await expectLedgerMatches(t.database.db, co, acct);
  });

  it('a batch refuses the items that would pass the limit in request order, like insufficient_balance items', async () => {
    await toQuietDay();
    const co = await newCompany(t);
    const [a, b] = [await createAccount(co), await createAccount(co)];
    await addUnits(co, a, 5);
    await setLimits(co, a, [{ denomination: 'credits', period: 'day', limit: 10, action: 'reject' }]);
    const item = (account_id: string, amount: number, extra: Record<string, unknown> = {}) => ({ account_id, type: 'q', cost_override: { amount, denomination: 'credits' }, ...extra });
    const r = await co.call('POST', '/v1/events', {
      body: [item(a, 4), item(b, 50), item(a, 4), item(a, 4), item(a, 2, { gate_on_balance: true }), item(a, 1, { gate_on_balance: true }), item(a, 0)],
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const got = r.body.data.map((e: { state: string; reason: string | null }) => [e.state, e.reason]);
    expect(got).toEqual([
      ['complete', null],
      ['complete', null],
      ['complete', null],
      ['rejected', 'spend_limit'],
      // 8 spent of 10: 2 fits the limit, but only -3 is available.
      ['rejected', 'insufficient_balance'],
      ['rejected', 'insufficient_balance'],
      ['complete', null],
    ]);
    expect((await balance(co, a)).amount).toBe(-3);
    expect((await balance(co, b)).amount).toBe(-50);
    expect((await getLimits(co, a))[0].spent).toBe(8);
    await expectLedgerMatches(t.database.db, co, a);
  });

  it('a notify limit sends spend_limit_reached once per period, and refuses nothing', async () => {
    await toQuietDay();
    const co = await newCompany(t);
    const acct = await createAccount(co);
    const rec = await startReceiver();
    await topicWebhook(co, rec.url, ['spend_limit_reached']);
    await setLimits(co, acct, [{ denomination: 'credits', period: 'day', limit: 5, action: 'notify' }]);
    expect((await use(co, acct, 3)).status).toBe(200);
    expect((await use(co, acct, 2)).status).toBe(200);
    await advance(0);
    expect(rec.requests).toHaveLength(0); // at the limit, not past it
    expect((await use(co, acct, '0.5')).status).toBe(200);
    expect((await use(co, acct, 10)).status).toBe(200);
    const batch = await co.call('POST', '/v1/events', { body: [{ account_id: acct, type: 'q', cost_override: { amount: 1, denomination: 'credits' } }] });
    expect(batch.body.data[0].state).toBe('complete');
    await advance(0);
    expect(rec.requests.map((q) => q.json.topic)).toEqual(['spend_limit_reached']);
    const first = rec.requests[0].json;
    expect(first).toMatchObject({ account_id: acct, denomination: 'credits', data: { period: 'day', period_start: spendPeriodStart('day', now()).toISOString(), limit: '5', spent: '5.5' } });

    await toNextDay();
    // The next day: a hold past the limit notifies again, once.
    expect((await use(co, acct, 6, { state: 'pending' })).status).toBe(200);
    expect((await use(co, acct, 6)).status).toBe(200);
    await advance(0);
    expect(rec.requests.map((q) => q.json.topic)).toEqual(['spend_limit_reached', 'spend_limit_reached']);
    expect(rec.requests[1].json.data).toMatchObject({ period_start: spendPeriodStart('day', now()).toISOString(), spent: '6' });
  });

  it('concurrent events never take the spend past a reject limit', async () => {
    const co = await newCompany(t);
    const acct = await createAccount(co);
    await addUnits(co, acct, 1000);
    await setLimits(co, acct, [{ denomination: 'credits', period: 'month', limit: 10, action: 'reject' }]);
    // 40 events of 0.5 at once (single, gated, holds and one-item batches): exactly 20 fit.
    const results = await Promise.all(
      Array.from({ length: 40 }, (_, i) =>
        i % 4 === 3
          ? co.call('POST', '/v1/events', { body: [{ account_id: acct, type: 'q', cost_override: { amount: '0.5', denomination: 'credits' } }] }).then((r) => (r.body.data[0].state === 'rejected' ? 402 : r.status))
          : use(co, acct, '0.5', { gate: i % 4 === 1, state: i % 4 === 2 ? 'pending' : undefined }).then((r) => r.status),
      ),
    );
    expect(results.filter((s) => s === 200)).toHaveLength(20);
    expect(results.filter((s) => s === 402)).toHaveLength(20);
    expect((await getLimits(co, acct))[0].spent).toBe(10);
    const b = await balance(co, acct);
    expect(b.amount + b.pending).toBeLessThanOrEqual(1000);
    expect(1000 - b.available).toBe(10);
    await expectLedgerMatches(t.database.db, co, acct);
  });
});
