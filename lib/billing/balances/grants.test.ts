process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
import { describe, expect, it } from 'vitest';
import { newCompany, newPayingCompany, useLocalStripe, useTestDatabase } from '../../testing/harness';
import { advance, createAccount, createPlan, expectLedgerMatches, spend, use, type Co } from '../../testing/scenario';
import { now, setTestTime } from '../../clock';
import { query, sql } from '../../db/client';
import { settleAllDueGrants } from './grants';
import { dailyCredits } from './credits-report';

const t = useTestDatabase();
useLocalStripe();

const db = () => t.database.db;

async function grant(co: Co, account: string, body: Record<string, unknown>, denomination = 'credits') {
  const r = await co.call('POST', `/v1/accounts/${account}/balance/${denomination}/grants`, { body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as { id: string; remaining: number; status: string; expires_at: string | null; priority: number; category: string; source: string };
}

async function balance(co: Co, account: string, denomination = 'credits') {
  const r = await co.call('GET', `/v1/accounts/${account}/balance/${denomination}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as { amount: number; available: number; next_expiry: { expires_at: string; amount: number } | null };
}

async function ledger(co: Co, account: string) {
  const r = await co.call('GET', `/v1/accounts/${account}/transactions?limit=1000`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.data as { type: string; amount: number; grant_id: string | null; created_at: string }[]).reverse();
}

const inDays = (d: number) => new Date(now().getTime() + d * 86_400_000).toISOString();

describe('credit grants', () => {
  it('draws by priority, then soonest expiry, then oldest; a draw over several grants names each', async () => {
    const co = await newCompany(t);
    const a = await createAccount(co);
    const never = await grant(co, a, { amount: 100 });
    const late = await grant(co, a, { amount: 100, expires_at: inDays(20) });
    const soon = await grant(co, a, { amount: 100, expires_at: inDays(10) });
    const first = await grant(co, a, { amount: 50, priority: 10 });
    expect((await balance(co, a)).amount).toBe(350);
    await spend(co, a, 120);
    await spend(co, a, 100);
    const rows = (await ledger(co, a)).filter((r) => r.type === 'event');
    expect(rows.map((r) => [r.grant_id, r.amount])).toEqual([
      [first.id, -50],
      [soon.id, -70],
      [soon.id, -30],
      [late.id, -70],
    ]);
    const live = (await co.call('GET', `/v1/accounts/${a}/balance/credits/grants`)).body.data as { id: string; remaining: number }[];
    expect(Object.fromEntries(live.map((g) => [g.id, g.remaining]))).toEqual({ [never.id]: 100, [late.id]: 30 });
    await expectLedgerMatches(db(), co, a);
  });

  it('an expired grant is never spent, whether or not the sweep ran: the gate and reads see it expired at expires_at', async () => {
    const co = await newCompany(t);
    const a = await createAccount(co);
    const promo = await grant(co, a, { amount: 100, expires_at: inDays(1) });
    await grant(co, a, { amount: 10, priority: 60 });
    expect((await balance(co, a)).next_expiry).toEqual({ expires_at: promo.expires_at, amount: 100 });
    await spend(co, a, 30);
    // One second past the expiry, with nothing run in between (the clock is set, not advanced).
    setTestTime(new Date(promo.expires_at!).getTime() + 1000);
    const refused = await use(co, a, 11, { gate: true });
    expect(refused.status, JSON.stringify(refused.body)).toBe(402);
    const b = await balance(co, a);
    expect([b.amount, b.next_expiry]).toEqual([10, null]);
    const expiry = (await ledger(co, a)).find((r) => r.type === 'expire')!;
    expect([expiry.grant_id, expiry.amount, expiry.created_at]).toEqual([promo.id, -70, promo.expires_at]);
    const expired = (await co.call('GET', `/v1/accounts/${a}/balance/credits/grants?status=expired`)).body.data;
    expect(expired.map((g: { id: string; remaining: number }) => [g.id, g.remaining])).toEqual([[promo.id, 0]]);
    await expectLedgerMatches(db(), co, a);
  });

  it('the worker writes due expiries; a balance below zero is paid first by the next grant', async () => {
    const co = await newCompany(t);
    const a = await createAccount(co);
    const promo = await grant(co, a, { amount: 5, expires_at: inDays(2) });
    await advance(3 * 86_400);
    // The clock step ran the worker's sweep: the expiry is written with its own time.
    const [row] = await query<{ n: number }>(db(), sql`select count(*)::int as n from transactions where grant_id = ${promo.id} and type = 'expire'`);
    expect(row.n).toBe(1);
    expect(await settleAllDueGrants(db(), now())).toBe(0);
    await spend(co, a, 40);
    expect((await balance(co, a)).amount).toBe(-40);
    const g = await grant(co, a, { amount: 100 });
    expect(g.remaining).toBe(60);
    expect((await balance(co, a)).amount).toBe(60);
    await expectLedgerMatches(db(), co, a);
  });

  it('the sweep writes every due balance across runs and transactions of bounded size', async () => {
    const co = await newCompany(t);
    const accounts = [await createAccount(co), await createAccount(co), await createAccount(co)];
    const at = inDays(1);
    const made: string[] = [];
    for (const [i, a] of accounts.entries()) for (let n = 0; n <= i; n++) made.push((await grant(co, a, { amount: 10, expires_at: at })).id);
    setTestTime(new Date(at).getTime() + 1000);
    // Two balances per run; a transaction takes at most two open grants (the third balance, with three, goes alone).
    const sizes = { limit: 2, balancesPerTransaction: 2, grantsPerTransaction: 2 };
    expect(await settleAllDueGrants(db(), now(), sizes)).toBe(2);
    expect(await settleAllDueGrants(db(), now(), sizes)).toBe(1);
    expect(await settleAllDueGrants(db(), now(), sizes)).toBe(0);
    const rows = await query<{ grant_id: string }>(db(), sql`select grant_id from transactions where company_id = ${co.company.id} and type = 'expire'`);
    expect(rows.map((r) => r.grant_id).sort()).toEqual([...made].sort());
    for (const a of accounts) {
      expect((await balance(co, a)).amount).toBe(0);
      await expectLedgerMatches(db(), co, a);
    }
  });

  it('void takes what is left: one void row; voiding again answers it unchanged; another company gets 404', async () => {
    const co = await newCompany(t);
    const other = await newCompany(t);
    const a = await createAccount(co);
    const g = await grant(co, a, { amount: 80 });
    await spend(co, a, 30);
    expect((await other.call('POST', `/v1/grants/${g.id}/void`)).status).toBe(404);
    const v = await co.call('POST', `/v1/grants/${g.id}/void`);
    expect(v.status, JSON.stringify(v.body)).toBe(200);
    expect([v.body.data.status, v.body.data.remaining]).toEqual(['voided', 0]);
    const again = await co.call('POST', `/v1/grants/${g.id}/void`);
    expect(again.body.data).toEqual(v.body.data);
    expect((await ledger(co, a)).filter((r) => r.type === 'void').map((r) => r.amount)).toEqual([-50]);
    expect((await balance(co, a)).amount).toBe(0);
    // The report's default window ends just after now: what was written at this instant counts.
    const report = await co.call('GET', '/v1/companies/{company}/reports/credits');
    expect(report.body.data.denominations).toEqual([
      { denomination: 'credits', granted: { paid: 0, promotional: 80 }, spent: { paid: 0, promotional: 30 }, expired: { paid: 0, promotional: 0 }, voided: { paid: 0, promotional: 50 }, expired_paid_cents: 0 },
    ]);
    await expectLedgerMatches(db(), co, a);
  });

  it('refuses bad input with its param and changes nothing', async () => {
    const co = await newCompany(t);
    const a = await createAccount(co);
    const bad: [Record<string, unknown>, string][] = [
      [{ amount: 0 }, 'amount'],
      [{ amount: -5 }, 'amount'],
      [{ amount: 5, priority: 101 }, 'priority'],
      [{ amount: 5, priority: -1 }, 'priority'],
      [{ amount: 'ten' }, 'amount'],
      [{ amount: 5, priority: 1.5 }, 'priority'],
      [{ amount: 5, category: 'gift' }, 'category'],
      [{ amount: 5, expires_at: new Date(now().getTime() - 1000).toISOString() }, 'expires_at'],
      [{ amount: 5, effective_at: inDays(5), expires_at: inDays(4) }, 'expires_at'],
      [{ amount: 5, expires_at: 'tomorrow' }, 'expires_at'],
    ];
    for (const [body, param] of bad) {
      const r = await co.call('POST', `/v1/accounts/${a}/balance/credits/grants`, { body });
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.param, JSON.stringify(body)).toBe(param);
    }
    const badDeposits: [Record<string, unknown>, string][] = [
      [{ amount_to_deposit: 5, expires_at: '2000-01-01T00:00:00Z' }, 'expires_at'],
      [{ amount_to_deposit: 5, priority: 101 }, 'priority'],
      [{ amount_to_deposit: 0 }, 'amount_to_deposit'],
      [{ amount_to_deposit: -3 }, 'amount_to_deposit'],
    ];
    for (const [body, param] of badDeposits) {
      const d = await co.call('POST', `/v1/accounts/${a}/deposit`, { body: { denomination: 'credits', ...body } });
      expect([d.status, d.body.error?.param], JSON.stringify(body)).toEqual([400, param]);
      expect(d.body.error.message, JSON.stringify(body)).toBeTruthy();
    }
    const missing = await co.call('POST', `/v1/grants/cg_doesnotexist/void`);
    expect([missing.status, missing.body.error?.param]).toEqual([404, 'grant_id']);
    const list = await co.call('GET', `/v1/accounts/${a}/balance/credits/grants?status=all`);
    expect(list.status).toBe(200);
    expect(list.body.data).toEqual([]);
    expect((await co.call('GET', `/v1/accounts/${a}/balance/credits/grants?status=gone`)).status).toBe(400);
  });

  it('at most 1,000 live grants per balance: grants, deposits and balance grants beyond are refused before any charge', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    const first = await grant(co, a, { amount: 10 });
    // 999 more live grants (used up, so the balance's amount stays the first grant's).
    await query(
      db(),
      sql`insert into credit_grants (id, company_id, account_id, balance_id, denomination, amount, remaining, category, source, priority, effective_at, active, description, created_at)
        select 'cg_fill' || i, g.company_id, g.account_id, g.balance_id, g.denomination, 1, 0, 'promotional', 'grant', 50, g.effective_at, true, 'filler', g.created_at
        from credit_grants g, generate_series(1, 999) i where g.id = ${first.id}`,
    );
    const refusals = [
      await co.call('POST', `/v1/accounts/${a}/balance/credits/grants`, { body: { amount: 5 } }),
      await co.call('POST', `/v1/accounts/${a}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 5 } }),
      await co.call('POST', `/v1/accounts/${a}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 5, amount_to_charge: 100 } }),
      await co.call('POST', `/v1/accounts/${a}/balance/credits`, { body: { amount: 5 } }),
    ];
    for (const r of refusals) {
      expect(r.status, JSON.stringify(r.body)).toBe(400);
      expect(r.body.error).toMatchObject({ type: 'invalid_request', param: 'amount' });
      expect(r.body.error.message).toContain('at most 1000 live grants');
    }
    expect((await co.call('GET', `/v1/accounts/${a}/charges`)).body.data).toEqual([]);
    expect((await balance(co, a)).amount).toBe(10);
    expect((await ledger(co, a)).map((r) => r.type)).toEqual(['grant']);
    // Voiding one makes room for one.
    expect((await co.call('POST', `/v1/grants/${first.id}/void`)).status).toBe(200);
    await grant(co, a, { amount: 5 });
    expect((await co.call('POST', `/v1/accounts/${a}/balance/credits/grants`, { body: { amount: 5 } })).status).toBe(400);
    expect((await balance(co, a)).amount).toBe(5);
  });

  it('refills with expires_after_days make paid grants that expire that many days after each refill', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    const put = (body: Record<string, unknown>) => co.call('PUT', `/v1/accounts/${a}/balance/credits/auto_refill`, { body });
    const monthly = await put({ amount: 100, usd_charge: 500, refill_period: 'monthly', expires_after_days: 30 });
    expect(monthly.status, JSON.stringify(monthly.body)).toBe(200);
    expect(monthly.body.data.refill_expires_after_days).toBe(30);
    const [m] = (await co.call('GET', `/v1/accounts/${a}/balance/credits/grants`)).body.data;
    expect(m).toMatchObject({ source: 'refill', category: 'paid', amount: 100, cost_basis: 5, expires_at: inDays(30) });
    expect((await balance(co, a)).next_expiry).toEqual({ expires_at: inDays(30), amount: 100 });
    // The same refill with another expiry: the setting changes, nothing is charged.
    const again = await put({ amount: 100, usd_charge: 500, refill_period: 'monthly', expires_after_days: 2 });
    expect([again.status, again.body.data.refill_expires_after_days, again.body.data.amount]).toEqual([200, 2, 100]);
    expect((await co.call('GET', `/v1/accounts/${a}/charges`)).body.data).toHaveLength(1);

    // A threshold refill's grant expires after its own setting's days; without it, never.
    const b = await createAccount(co, { token: 'tok_visa' });
    const th = await co.call('PUT', `/v1/accounts/${b}/balance/credits/auto_refill`, { body: { amount: 50, usd_charge: 300, threshold: 10, expires_after_days: 3 } });
    expect(th.status, JSON.stringify(th.body)).toBe(200);
    const at = now();
    await advance(0);
    const [tg] = (await co.call('GET', `/v1/accounts/${b}/balance/credits/grants`)).body.data;
    expect(tg).toMatchObject({ source: 'refill', category: 'paid', amount: 50, expires_at: new Date(at.getTime() + 3 * 86_400_000).toISOString() });
    const off = await co.call('PUT', `/v1/accounts/${b}/balance/credits/auto_refill`, { body: { amount: 50, usd_charge: 300, threshold: 10 } });
    expect(off.body.data.refill_expires_after_days).toBeNull();
    await advance(4 * 86_400);
    // The 3-day grant expired (the balance fell below its threshold and refilled, this time without expiry).
    const rows = (await ledger(co, b)).map((r) => [r.type, r.amount, r.grant_id]);
    expect(rows).toContainEqual(['expire', -50, tg.id]);
    const live = (await co.call('GET', `/v1/accounts/${b}/balance/credits/grants`)).body.data as { expires_at: string | null; source: string }[];
    expect(live.map((g) => [g.source, g.expires_at])).toEqual([['refill', null]]);
    await expectLedgerMatches(db(), co, b);

    for (const [days, msg] of [[0, 'at least 1'], [3651, 'at most 3650'], [1.5, 'whole number'], ['30', 'whole number']] as const) {
      const c = await createAccount(co, { token: 'tok_visa' });
      const r = await co.call('PUT', `/v1/accounts/${c}/balance/credits/auto_refill`, { body: { amount: 50, usd_charge: 300, refill_period: 'monthly', expires_after_days: days } });
      expect([r.status, r.body.error?.param], String(days)).toEqual([400, 'expires_after_days']);
      expect(r.body.error.message).toContain(msg);
      expect((await co.call('GET', `/v1/accounts/${c}/charges`)).body.data).toEqual([]);
      expect((await co.call('GET', `/v1/accounts/${c}/balance/credits`)).status).toBe(404);
    }
  });

  it('a renewal expires what is left of the allowance; units bought by deposit stay', async () => {
    const co = await newCompany(t);
    const plan = await createPlan(co, { name: 'Free', charge_amount: 0, billing_period: 'day', balances: [{ amount: 100, denomination: 'credits' }] });
    const a = await createAccount(co, { plan_id: plan.id });
    const dep = await co.call('POST', `/v1/accounts/${a}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 500 } });
    expect(dep.status, JSON.stringify(dep.body)).toBe(200);
    await spend(co, a, 30);
    expect((await balance(co, a)).amount).toBe(570);
    await advance(86_400);
    // 70 of the allowance expired, a new 100 was granted; the 500 deposited stay.
    expect((await balance(co, a)).amount).toBe(600);
    const types = (await ledger(co, a)).map((r) => [r.type, r.amount]);
    expect(types).toContainEqual(['expire', -70]);
    await expectLedgerMatches(db(), co, a);
  });

  it('the credits report: granted, spent and expired per category, and what the expired paid units had cost', async () => {
    const co = await newPayingCompany(t);
    const a = await createAccount(co, { token: 'tok_visa' });
    const from = now().toISOString();
    // 100 units for 500 cents (5 cents each), expiring in a day; 20 promotional that never expire.
    const dep = await co.call('POST', `/v1/accounts/${a}/deposit`, { body: { denomination: 'credits', amount_to_deposit: 100, amount_to_charge: 500, expires_at: inDays(1) } });
    expect(dep.status, JSON.stringify(dep.body)).toBe(200);
    await grant(co, a, { amount: 20 });
    await spend(co, a, 30);
    await advance(2 * 86_400);
    const r = await co.call('GET', `/v1/companies/{company}/reports/credits?from=${encodeURIComponent(from)}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data.denominations).toEqual([
      { denomination: 'credits', granted: { paid: 100, promotional: 20 }, spent: { paid: 30, promotional: 0 }, expired: { paid: 70, promotional: 0 }, voided: { paid: 0, promotional: 0 }, expired_paid_cents: 350 },
    ]);
    expect((await balance(co, a)).amount).toBe(20);
    // The console's chart: the same per UTC day, the expiry on the day it fell due.
    const days = (await dailyCredits(db(), co.company.id, now(), 3)).get('credits')!;
    expect(days.map((d) => [d.granted, d.spent, d.expired])).toEqual([
      ['120', '30', '0'],
      ['0', '0', '70'],
      ['0', '0', '0'],
    ]);
    const bad = await co.call('GET', `/v1/companies/{company}/reports/credits?from=2027-01-02T00:00:00Z&to=2027-01-01T00:00:00Z`);
    expect([bad.status, bad.body.error?.param]).toEqual([400, 'from']);
    const badTime = await co.call('GET', `/v1/companies/{company}/reports/credits?from=${encodeURIComponent(from)}&to=0`);
    expect([badTime.status, badTime.body.error?.param]).toEqual([400, 'to']);
    await expectLedgerMatches(db(), co, a);
  });
});
