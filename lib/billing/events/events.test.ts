import { beforeAll, describe, expect, it } from 'vitest';
import { api, newCompany, useTestDatabase } from '../../testing/harness';
import { type Co } from '../../testing/scenario';
import { ledgerSums } from '../balances/balances';

const t = useTestDatabase();
process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';


async function newAccount(co: Co, extra: Record<string, unknown> = {}) {
  const r = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ann', email: 'ann@x.io', ...extra } });
  expect(r.status).toBe(200);
  return r.body.data.id as string;
}

async function balanceOf(co: Co, account: string, denomination: string) {
  const r = await co.call('GET', `/v1/accounts/${account}/balance/${denomination}`);
  return r.body.data;
}

describe('balances and the ledger', () => {
  let co: Co;
  beforeAll(async () => {
    co = await newCompany(t);
  });

  it('creates balances idempotently, grants units and records every change', async () => {
    const acct = await newAccount(co);
    const created = await co.call('POST', `/v1/accounts/${acct}/balance/tokens`);
    expect(created.status).toBe(200);
    expect(created.body.data).toMatchObject({ account_id: acct, denomination: 'tokens', amount: 0, pending: 0, available: 0, refill_threshold: 0, refill_amount: 0, refill_usd_amount: 0, refill_on_day: '' });
    const again = await co.call('POST', `/v1/accounts/${acct}/balance/tokens`);
    expect(again.body.data.id).toBe(created.body.data.id);
    const granted = await co.call('POST', `/v1/accounts/${acct}/balance/tokens`, { body: { amount: '12.5', reason: 'welcome' } });
    expect(granted.body.data.amount).toBe(12.5);
    await co.call('POST', `/v1/accounts/${acct}/balance/storage-GB`, { body: { amount: 3 } });
    const all = await co.call('GET', `/v1/accounts/${acct}/balances`);
    expect(all.body.data.map((b: { denomination: string }) => b.denomination)).toEqual(['storage-GB', 'tokens']);
    const ledger = await co.call('GET', `/v1/accounts/${acct}/transactions`);
    expect(ledger.body.data).toHaveLength(2);
    expect(ledger.body.data[1]).toMatchObject({ denomination: 'tokens', type: 'grant', description: 'welcome', amount: 12.5, starting_balance: 0, ending_balance: 12.5 });
    const free = await co.call('POST', `/v1/accounts/${acct}/deposit`, { body: { charge_against_denomination: 'tokens', amount_to_deposit: 2.5, amount_to_charge: 0 } });
    expect(free.status).toBe(200);
    expect(free.body.data.amount).toBe(15);
  });

  it('keeps decimals exact: ten events of 0.1 on a balance of 1 leave exactly 0', async () => {
    const acct = await newAccount(co);
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 1 } });
    for (let i = 0; i < 10; i++) {
      const r = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 0.1, cost_override_denomination: 'credits' } });
      expect(r.status).toBe(200);
    }
    const b = await balanceOf(co, acct, 'credits');
    expect(b.amount).toBe(0);
    expect(JSON.stringify(b)).toContain('"amount":0,');
    const sums = await ledgerSums(t.database.db, acct);
    expect(sums).toEqual([{ denomination: 'credits', total: '0.0' }].map((s) => ({ ...s, total: expect.stringMatching(/^0(\.0+)?$/) })));
  });

  it('rejects bad balance input', async () => {
    const acct = await newAccount(co);
    const cases: [string, unknown, number, string | null][] = [
      [`/v1/accounts/${acct}/balance/bad%20name`, undefined, 400, 'denomination'],
      [`/v1/accounts/${acct}/balance/tokens`, { amount: -1 }, 400, 'amount'],
      [`/v1/accounts/${acct}/balance/tokens`, { amount: '1e400' }, 400, 'amount'],
      [`/v1/accounts/${acct}/balance/tokens`, { amount: 0.1234567890123 }, 400, 'amount'],
      [`/v1/accounts/${acct}/balance/tokens`, { amount: 1, colour: 'red' }, 400, 'colour'],
      [`/v1/accounts/a_nope/balance/tokens`, undefined, 404, 'account_id'],
    ];
    for (const [path, body, status, param] of cases) {
      const r = await co.call('POST', path, { body });
      expect(r.status, path + JSON.stringify(body)).toBe(status);
      expect(r.body.error.param).toBe(param);
    }
    expect((await co.call('GET', `/v1/accounts/${acct}/balance/never`)).status).toBe(404);
    const deposit = await co.call('POST', `/v1/accounts/${acct}/deposit`, { body: { amount_to_deposit: 1 } });
    expect(deposit.body.error.param).toBe('denomination');
  });
});

describe('events', () => {
  let co: Co;
  let plan: string;
  beforeAll(async () => {
    co = await newCompany(t);
    const p = await co.call('POST', '/companies/{company}/plan', {
      body: { name: 'Usage', billing_rules: [{ type: 'query', amount: 2, denomination: 'credits' }, { type: 'upload', amount: '0.5', denomination: 'storage-GB' }] },
    });
    expect(p.status).toBe(200);
    plan = p.body.data.id;
  });

  it('prices by override, by plan rule, or not at all, and may go negative without a gate', async () => {
    const acct = await newAccount(co);
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 3 } });
    // Pricing only needs a running plan (its plan_id, ACTIVE): the plan's own balances are not needed here.
    const { accounts } = await import('../../db/schema');
    const { eq } = await import('drizzle-orm');
    await t.database.db.update(accounts).set({ planId: plan, planStatus: 'ACTIVE' }).where(eq(accounts.id, acct));

    const byPlan = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'query', metadata: { q: 'x' } } });
    expect(byPlan.status).toBe(200);
    expect(byPlan.body.data).toMatchObject({ type: 'query', state: 'complete', priced_by: 'plan', cost: { amount: 2, denomination: 'credits' }, metadata: { q: 'x' } });
    expect(byPlan.body.data.id).toMatch(/^ev_/);
    expect(byPlan.body.data.balance).toMatchObject({ amount: 1, available: 1, denomination: 'credits' });

    const override = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'query', cost_override_amount: '5', cost_override_denomination: 'credits' } });
    expect(override.body.data).toMatchObject({ priced_by: 'override', cost: { amount: 5, denomination: 'credits' } });
    expect(override.body.data.balance.amount).toBe(-4);

    const unpriced = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'login' } });
    expect(unpriced.body.data).toMatchObject({ priced_by: 'none', cost: null, balance: null, state: 'complete' });
    expect((await balanceOf(co, acct, 'credits')).amount).toBe(-4);

    const ledger = await co.call('GET', `/v1/accounts/${acct}/transactions?denomination=credits`);
    // The 5 is drawn as the 1 the grant had left, then 4 below zero: a row each, both the event's.
    expect(ledger.body.data.map((r: { amount: number; ending_balance: number; event_id: string | null }) => [r.amount, r.ending_balance])).toEqual([
      [-4, -4],
      [-1, 0],
      [-2, 1],
      [3, 3],
    ]);
    expect(ledger.body.data.slice(0, 2).map((r: { event_id: string | null }) => r.event_id)).toEqual([override.body.data.id, override.body.data.id]);
    expect(ledger.body.data.map((r: { grant_id: string | null }) => r.grant_id === null)).toEqual([true, false, false, false]);
  });

  it('gates on available balance with 402, records the rejection and charges nothing', async () => {
    const acct = await newAccount(co);
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 2 } });
    const fits = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 2, cost_override_denomination: 'credits', gate_on_balance: true } });
    expect(fits.status).toBe(200);
    const refused = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 0.5, cost_override_denomination: 'credits', gate_on_balance: true } });
    expect(refused.status).toBe(402);
    expect(refused.body.error).toMatchObject({ type: 'insufficient_balance', param: null });
    expect(refused.body.error.rejected_event_id).toMatch(/^ev_/);
    expect((await balanceOf(co, acct, 'credits')).amount).toBe(0);
    const rejected = await co.call('GET', `/v1/companies/{company}/events?state=rejected&account_id=${acct}`);
    expect(rejected.body.data).toHaveLength(1);
    expect(rejected.body.data[0]).toMatchObject({ id: refused.body.error.rejected_event_id, state: 'rejected' });
    // Unbilled events always pass the gate.
    const free = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'ping', gate_on_balance: true } });
    expect(free.status).toBe(200);
  });

  it('holds with pending events, completes and cancels them, and refuses illegal transitions', async () => {
    const acct = await newAccount(co);
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 10 } });
    const hold = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'job', state: 'pending', cost_override_amount: 4, cost_override_denomination: 'credits' } });
    expect(hold.body.data.state).toBe('pending');
    expect(hold.body.data.expires_at).toBeTruthy();
    expect(hold.body.data.balance).toMatchObject({ amount: 10, pending: 4, available: 6 });
    const gated = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'job', cost_override_amount: 7, cost_override_denomination: 'credits', gate_on_balance: true } });
    expect(gated.status).toBe(402);

    const done = await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'completed' } });
    expect(done.status).toBe(200);
    expect(done.body.data.state).toBe('complete');
    expect(await balanceOf(co, acct, 'credits')).toMatchObject({ amount: 6, pending: 0, available: 6 });
    const again = await co.call('PUT', `/events/${hold.body.data.id}`, { body: { state: 'cancelled' } });
    expect(again.status).toBe(409);
    expect(again.body.error.type).toBe('conflict');

    const hold2 = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'job', state: 'pending', cost_override_amount: 1, cost_override_denomination: 'credits' } });
    const cancelled = await co.call('PUT', `/v1/events/${hold2.body.data.id}`, { body: { state: 'cancelled' } });
    expect(cancelled.body.data.state).toBe('cancelled');
    expect(await balanceOf(co, acct, 'credits')).toMatchObject({ amount: 6, pending: 0, available: 6 });
    expect((await co.call('PUT', `/v1/events/${hold2.body.data.id}`, { body: { state: 'complete' } })).status).toBe(409);
    expect((await co.call('PUT', `/v1/events/${hold2.body.data.id}`, { body: { state: 'pending' } })).status).toBe(400);
    expect((await co.call('PUT', `/v1/events/ev_nope`, { body: { state: 'complete' } })).status).toBe(404);
  });

  it('expires a hold exactly one hour after creation, even before any worker runs', async () => {
    const acct = await newAccount(co);
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 10 } });
    const hold = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'job', state: 'pending', cost_override_amount: 4, cost_override_denomination: 'credits' } });
    const { setTestTime, now } = await import('../../clock');
    const created = new Date(hold.body.data.created_at).getTime();
    setTestTime(created + 3600_000 - 1);
    expect((await balanceOf(co, acct, 'credits')).available).toBe(6);
    setTestTime(created + 3600_000);
    expect(now().getTime()).toBe(created + 3600_000);
    expect(await balanceOf(co, acct, 'credits')).toMatchObject({ amount: 10, pending: 0, available: 10 });
    const read = await co.call('GET', `/v1/events/${hold.body.data.id}`);
    expect(read.body.data.state).toBe('cancelled');
    expect((await co.call('PUT', `/v1/events/${hold.body.data.id}`, { body: { state: 'complete' } })).status).toBe(409);
    const advanced = await api('POST', '/v1/test_clock/advance', { auth: 'admin', body: { seconds: 0 } });
    expect(advanced.status).toBe(200);
    const listed = await co.call('GET', `/v1/companies/{company}/events?state=cancelled&account_id=${acct}`);
    expect(listed.body.data.map((e: { id: string }) => e.id)).toEqual([hold.body.data.id]);
  });

  it('makes retries safe with idempotency_key and the Idempotency-Key header', async () => {
    const acct = await newAccount(co);
    await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 10 } });
    const body = { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits', idempotency_key: 'evt-1' };
    const a = await co.call('POST', `/v1/accounts/${acct}/events`, { body });
    const b = await co.call('POST', `/v1/accounts/${acct}/events`, { body });
    expect(b.body.data.id).toBe(a.body.data.id);
    const batch = await co.call('POST', '/events', { body: [{ ...body, account_id: acct }, { ...body, account_id: acct, idempotency_key: 'evt-2' }, { ...body, account_id: acct, idempotency_key: 'evt-2' }] });
    expect(batch.body.data[0].id).toBe(a.body.data.id);
    expect(batch.body.data[2].id).toBe(batch.body.data[1].id);
    expect((await balanceOf(co, acct, 'credits')).amount).toBe(8);
    const h = { 'Idempotency-Key': 'hdr-1' };
    const c = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits' }, headers: h });
    const d = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q', cost_override_amount: 1, cost_override_denomination: 'credits' }, headers: h });
    expect(d.body.data.id).toBe(c.body.data.id);
    expect((await balanceOf(co, acct, 'credits')).amount).toBe(7);
  });

  it('ingests batches in order, with gated rejections, and validates the whole batch first', async () => {
    const a1 = await newAccount(co);
    const a2 = await newAccount(co);
    await co.call('POST', `/v1/accounts/${a1}/balance/credits`, { body: { amount: 5 } });
    const items = [
      { account_id: a1, type: 'q', cost_override: { amount: 3, denomination: 'credits' } },
      { account_id: a2, type: 'q', cost_override: { amount: 1, denomination: 'credits' } },
      { account_id: a1, type: 'q', cost_override: { amount: 3, denomination: 'credits' }, gate_on_balance: true },
      { account_id: a1, type: 'q', cost_override: { amount: 2, denomination: 'credits' }, gate_on_balance: true },
    ];
    const r = await co.call('POST', '/v1/events', { body: items });
    expect(r.status).toBe(200);
    expect(r.body.data.map((e: { state: string }) => e.state)).toEqual(['complete', 'complete', 'rejected', 'complete']);
    expect((await balanceOf(co, a1, 'credits')).amount).toBe(0);
    expect((await balanceOf(co, a2, 'credits')).amount).toBe(-1);
    // The gated batch's ledger: one row per charged event, at the batch's time, newest first.
    const ledger = await co.call('GET', `/v1/accounts/${a1}/transactions`);
    expect(ledger.status).toBe(200);
    const charged = [r.body.data[3], r.body.data[0]];
    expect(ledger.body.data.filter((t: { type: string }) => t.type === 'event')).toEqual(
      charged.map((e: { id: string; created_at: string }, i: number) =>
        expect.objectContaining({ event_id: e.id, account_id: a1, amount: -[2, 3][i], starting_balance: [2, 5][i], ending_balance: [0, 2][i], created_at: e.created_at }),
      ),
    );

    const bad = await co.call('POST', '/events', { body: [items[0], items[1], items[0], { ...items[0], cost_override: { amount: -1, denomination: 'credits' } }] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.param).toBe('[3].cost_override.amount');
    const noType = await co.call('POST', '/events', { body: [items[0], { account_id: a1 }] });
    expect(noType.body.error.param).toBe('[1].type');
    const other = await newCompany(t);
    const foreign = await other.call('POST', '/events', { body: [{ account_id: a1, type: 'q' }] });
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.param).toBe('[0].account_id');
    const tooMany = await co.call('POST', '/events', { body: Array.from({ length: 1001 }, () => ({ account_id: a1, type: 'x' })) });
    expect(tooMany.status).toBe(413);
    // The size is checked before the items: an oversized batch is 413 even when an item is bad too.
    const tooManyAndBad = await co.call('POST', '/events', { body: [{ account_id: a1 }, ...Array.from({ length: 1000 }, () => ({ account_id: a1, type: 'x' }))] });
    expect(tooManyAndBad.status).toBe(413);
    expect(tooManyAndBad.body.error.type).toBe('payload_too_large');
    expect((await co.call('POST', '/events', { body: { account_id: a1, type: 'x' } })).status).toBe(400);
    expect((await balanceOf(co, a1, 'credits')).amount).toBe(0);
  });

  it('takes a full batch of 1000 events over 1000 accounts in one call', async () => {
    const { accounts } = await import('../../db/schema');
    const { newId } = await import('../../ids');
    const ids = Array.from({ length: 1000 }, () => newId('a'));
    await t.database.db.insert(accounts).values(ids.map((id) => ({ id, companyId: co.company.id, name: 'Bulk', email: 'bulk@x.io', metadata: {}, flags: [], createdAt: new Date() })));
    const items = ids.flatMap((id, i) => (i % 2 ? [] : [{ account_id: id, type: 'q', cost_override: { amount: '0.5', denomination: 'credits' } }, { account_id: id, type: 'q', cost_override: { amount: 1, denomination: 'credits' } }]));
    const r = await co.call('POST', '/v1/events', { body: items });
    expect(r.status).toBe(200);
    expect(r.body.data).toHaveLength(1000);
    expect(new Set(r.body.data.map((e: { id: string }) => e.id)).size).toBe(1000);
    expect(r.body.data.every((e: { state: string; account_id: string }, i: number) => e.state === 'complete' && e.account_id === items[i].account_id)).toBe(true);
    expect((await balanceOf(co, ids[0], 'credits')).amount).toBe(-1.5);
    expect((await balanceOf(co, ids[998], 'credits')).amount).toBe(-1.5);
    expect((await co.call('GET', `/v1/accounts/${ids[1]}/balance/credits`)).status).toBe(404);
    const ledger = await co.call('GET', `/v1/accounts/${ids[500]}/transactions`);
    expect(ledger.body.data.map((x: { amount: number; ending_balance: number }) => [x.amount, x.ending_balance])).toEqual([
      [-1, -1.5],
      [-0.5, -0.5],
    ]);
  });

  it("lists an account's ledger in the order concurrent batches moved its balance", async () => {
    const acct = await newAccount(co);
    expect((await co.call('POST', `/v1/accounts/${acct}/balance/credits`, { body: { amount: 100 } })).status).toBe(200);
    // Six batches at once on one balance: they take turns on it, each after the others began.
    const batch = (n: number) => Array.from({ length: 5 }, () => ({ account_id: acct, type: 'q', cost_override: { amount: n, denomination: 'credits' } }));
    const answers = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => co.call('POST', '/v1/events', { body: batch(n) })));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const ledger = (await co.call('GET', `/v1/accounts/${acct}/transactions?limit=100`)).body.data as { id: string; type: string; event_id: string | null; starting_balance: number; ending_balance: number }[];
    // 30 events and the grant of 100. An event that takes the balance from above zero to below
    // it is drawn as what the grant had left and the rest below zero: a row each.
    const events = ledger.filter((r) => r.type === 'event');
    expect(ledger.length).toBe(events.length + 1);
    const rowsOf = new Map<string | null, typeof events>();
    for (const r of events) rowsOf.set(r.event_id, [...(rowsOf.get(r.event_id) ?? []), r]);
    expect(rowsOf.size).toBe(30);
    const split = [...rowsOf.values()].filter((rows) => rows.length > 1);
    expect(split.length).toBeLessThanOrEqual(1);
    for (const rows of split) expect(rows.map((r) => r.ending_balance).sort((a, b) => a - b)).toEqual([rows[0].ending_balance, 0].sort((a, b) => a - b));
    // Newest first by id: each row starts where the one listed after it ended.
    for (let i = 0; i + 1 < ledger.length; i++) expect(ledger[i].starting_balance, `row ${i}`).toBe(ledger[i + 1].ending_balance);
    expect(ledger[0].ending_balance).toBe(100 - 5 * 21);
  });

  it('validates single events', async () => {
    const acct = await newAccount(co);
    const cases: [unknown, string][] = [
      [{}, 'type'],
      [{ type: 5 }, 'type'],
      [{ type: 'q', cost_override_amount: 1 }, 'cost_override_denomination'],
      [{ type: 'q', cost_override_amount: 'NaN', cost_override_denomination: 'c' }, 'cost_override_amount'],
      [{ type: 'q', cost_override_amount: 'Infinity', cost_override_denomination: 'c' }, 'cost_override_amount'],
      [{ type: 'q', state: 'cancelled' }, 'state'],
      [{ type: 'q', gate_on_balance: 'yes' }, 'gate_on_balance'],
      [{ type: 'q', metadata: [] }, 'metadata'],
      [{ type: 'q', cost_override_amount: 1, cost_override_denomination: 'has space' }, 'cost_override_denomination'],
    ];
    for (const [body, param] of cases) {
      const r = await co.call('POST', `/v1/accounts/${acct}/events`, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param, JSON.stringify(body)).toBe(param);
    }
    const other = await newCompany(t);
    expect((await other.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'q' } })).status).toBe(404);
    expect((await other.call('GET', `/v1/accounts/${acct}/transactions`)).status).toBe(404);
  });

  it('lists events with filters', async () => {
    const acct = await newAccount(co);
    const r1 = await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'alpha' } });
    await co.call('POST', `/v1/accounts/${acct}/events`, { body: { type: 'beta' } });
    const byType = await co.call('GET', `/v1/companies/{company}/events?account_id=${acct}&type=alpha`);
    expect(byType.body.data.map((e: { id: string }) => e.id)).toEqual([r1.body.data.id]);
    const created = r1.body.data.created_at;
    const later = await co.call('GET', `/v1/companies/{company}/events?account_id=${acct}&created_gte=${encodeURIComponent(new Date(Date.parse(created) + 3600e3 * 24 * 365).toISOString())}`);
    expect(later.body.data).toEqual([]);
    const bad = await co.call('GET', '/v1/companies/{company}/events?state=maybe');
    expect(bad.body.error.param).toBe('state');
    const badDate = await co.call('GET', '/v1/companies/{company}/events?created_lt=yesterday');
    expect(badDate.body.error.param).toBe('created_lt');
    // Dates PostgreSQL cannot store (year 0, or past 9999 once the offset is applied) are 400s.
    for (const [param, value] of [
      ['created_gte', '0000-01-01T00:00:00Z'],
      ['created_gte', '0001-01-01T00:00:00+01:00'],
      ['created_lt', '9999-12-31T23:59:59-01:00'],
    ]) {
      const r = await co.call('GET', `/v1/companies/{company}/events?${param}=${encodeURIComponent(value)}`);
      expect(r.status, value).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param });
    }
    const edges = await co.call('GET', `/v1/companies/{company}/events?account_id=${acct}&created_gte=${encodeURIComponent('0001-01-01T00:00:00Z')}&created_lt=${encodeURIComponent('9999-12-31T23:59:59Z')}`);
    expect(edges.status).toBe(200);
    expect(edges.body.data).toHaveLength(2);
  });
});
