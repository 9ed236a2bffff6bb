import { describe, expect, it, beforeAll, vi } from 'vitest';
import { eq, sql } from 'drizzle-orm';
import { newCompany, useTestDatabase } from '../testing/harness';
import { accounts, admins, charges, consoleSessions, events, hourlyTotals, plans } from '../db/schema';
import { recountHours, rolledHours, rollUpHours } from '../db/hourly-totals';
import { query } from '../db/client';
import { Decimal } from '../money';
import { createHash } from 'node:crypto';
import { idAt, idRange, newId, type IdPrefix } from '../ids';
import { ApiError } from '../errors';
import { verifyPassword } from '../crypto';
import { effectiveState, listEvents } from '../billing/events/events';
import type { EventListQuery } from '../api/schemas/events';
import { accountTotals, clearDashboardCache, dailyTotals, EXACT_LIMIT } from './dashboard';
import { formValues, orNotFound, parseWith, type FormInvalid } from './forms';
import { dollarsToCents } from './format';
import { listAccountsOnPlan, planChoices } from './queries';
import { adminInvite, changePassword, inviteAdmin, listAdmins, passwordChange, removeAdmin } from './team';
import { findSessionUser } from './next-auth';
import { endConsoleSession, openConsoleSession, SESSION_MAX_AGE_S } from './sessions';
import { attemptSignIn } from './sign-in';

const t = useTestDatabase();
const DAY = 86_400_000;
const NOW = Date.UTC(2031, 4, 20, 15, 30); // a fixed "now": 15:30 UTC, so today and yesterday are open/closed as expected
const at = (ms: number) => new Date(ms);
/** An id laid out like newId's, minted at `ms` (rows are inserted with the time they claim). */
function derivedId(prefix: IdPrefix, ms: number, key: string): string {
  const alphabet = '0123456789abcdefghjkmnpqrstvwxyz';
  const digest = createHash('sha256').update(key).digest();
  let tail = '';
  for (let i = 0; i < 16; i++) tail += alphabet[digest[i] & 31];
  return `${idAt(prefix, ms)}${tail}`;
}

describe('form values', () => {
  it('reads nested names the way the API error params write them, leaving blanks out', () => {
    const fd = new FormData();
    fd.set('name', ' Pro ');
    fd.set('balances[0].denomination', 'tokens');
    fd.set('balances[0].amount', '10');
    fd.set('balances[1].denomination', 'gb');
    fd.set('balances[1].amount', '');
    fd.set('flags.beta', 'on');
    fd.set('empty', '  ');
    expect(formValues(fd)).toEqual({ name: 'Pro', balances: [{ denomination: 'tokens', amount: '10' }, { denomination: 'gb' }], flags: { beta: 'on' } });
  });

  it('refuses a list index or a depth no form has, at once, instead of building an array that long', () => {
    for (const name of ['balances[4294967294].amount', 'a[1000]', 'a[0000000000001]', 'a.b.c.d.e.f.g']) {
      const fd = new FormData();
      fd.set('name', 'Pro');
      fd.set(name, 'x');
      const started = performance.now();
      let thrown: unknown;
      try {
        formValues(fd);
      } catch (err) {
        thrown = err;
      }
      expect(performance.now() - started, name).toBeLessThan(100);
      expect((thrown as FormInvalid)?.errors, name).toEqual([{ param: name, message: expect.stringMatching(/at most 1000 rows/) }]);
    }
    const fd = new FormData();
    fd.set('rows[999].amount', '1');
    expect(formValues(fd)).toEqual({ rows: [{ amount: '1' }] });
  });

  it("never reaches an object's prototype or an inherited member, whatever the field names", () => {
    const fd = new FormData();
    for (const name of ['__proto__.polluted', 'constructor.prototype.polluted', '__proto__[polluted]', 'toString.polluted', 'balances[0].__proto__.polluted']) fd.set(name, 'yes');
    fd.set('name', 'Pro');
    const values = formValues(fd);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect((Object.prototype.toString as unknown as Record<string, unknown>).polluted).toBeUndefined();
    expect(values).toEqual({ name: 'Pro', toString: { polluted: 'yes' } });
  });
});

describe('dollars typed into a form', () => {
  it('reads plain amounts as cents and refuses every other form of number', () => {
    expect(['10', '10.5', '$1,000.25', '.5', '0', '1,234,567'].map(dollarsToCents)).toEqual(['1000', '1050', '100025', '50', '0', '123456700']);
    for (const odd of ['9,99', '29,99', '+25', '2.5e1', '-5', '1,00', '12,3456', '', 'ten']) expect(dollarsToCents(odd), odd).toBe('not a dollar amount');
  });
});

describe('ids as time', () => {
  it('idAt is the lower bound of the ids made in that millisecond', () => {
    const ms = NOW;
    for (const key of ['a', 'b', 'zzz']) {
      const id = derivedId('ev', ms, key);
      expect(idAt('ev', ms) <= id).toBe(true);
      expect(id < idAt('ev', ms + 1)).toBe(true);
      expect(idAt('ev', ms - 1) < id).toBe(true);
    }
    expect(newId('ev') > idAt('ev', Date.now() - 1000)).toBe(true);
  });
});

type Seeded = { companyId: string; otherCompanyId: string; accountIds: string[]; otherAccountId: string; planId: string; otherPlanId: string };

async function seed(): Promise<Seeded> {
  const db = t.database.db;
  const a = await newCompany(t, { name: 'Console A' });
  const b = await newCompany(t, { name: 'Console B' });
  const mkPlan = async (companyId: string, name: string) => {
    const id = newId('p');
    await db.insert(plans).values({ id, companyId, name, chargeAmount: 0, chargeDenomination: 'USD', billingPeriod: 'month', overageChargeMode: 'none', balances: [], billingRules: [], flags: {}, metadata: {}, createdAt: at(NOW) });
    return id;
  };
  const planId = await mkPlan(a.company.id, 'Pro');
  const otherPlanId = await mkPlan(b.company.id, 'Other');
  const mkAccount = async (companyId: string, ms: number, extra: Partial<typeof accounts.$inferInsert> = {}) => {
    const id = derivedId('a', ms, `${companyId}${ms}`);
    await db.insert(accounts).values({ id, companyId, name: `Acct ${ms}`, email: 'x@example.com', metadata: {}, flags: [], createdAt: at(ms), ...extra });
    return id;
  };
  const accountIds = [
    await mkAccount(a.company.id, NOW - 40 * DAY, { planId, planStatus: 'ACTIVE' }),
    await mkAccount(a.company.id, NOW - 10 * DAY, { scheduledPlanId: planId, planId: null }),
    await mkAccount(a.company.id, NOW - 1 * DAY),
  ];
  const otherAccountId = await mkAccount(b.company.id, NOW - 2 * DAY, { planId: otherPlanId, planStatus: 'ACTIVE' });

  // Events over 35 days, ids minted at their created_at as in production.
  const states = ['complete', 'complete', 'complete', 'pending', 'cancelled', 'rejected'] as const;
  const types = ['query', 'upload', 'login'];
  const rows: (typeof events.$inferInsert)[] = [];
  for (let i = 0; i < 420; i++) {
    const ms = NOW - Math.floor((i * 35 * DAY) / 420) - 1000;
    const state = states[i % states.length];
    const type = types[i % types.length];
    const billed = type !== 'login';
    rows.push({
      id: derivedId('ev', ms, `e${i}`),
      companyId: a.company.id,
      accountId: accountIds[i % 3],
      type,
      state,
      costAmount: billed ? String((i % 7) + 0.5) : null,
      costDenomination: billed ? (type === 'upload' ? 'gb' : 'tokens') : null,
      pricedBy: billed ? 'plan' : 'none',
      metadata: {},
      createdAt: at(ms),
      updatedAt: at(ms),
      // Half the holds have expired: they read as cancelled.
      expiresAt: state === 'pending' ? at(i % 12 === 3 ? NOW + 600_000 : ms + 3600_000) : null,
    });
  }
  for (let i = 0; i < 30; i++) {
    const ms = NOW - i * DAY - 5000;
    rows.push({ id: derivedId('ev', ms, `b${i}`), companyId: b.company.id, accountId: otherAccountId, type: 'query', state: 'rejected', costAmount: '1', costDenomination: 'tokens', pricedBy: 'plan', metadata: {}, createdAt: at(ms) });
  }
  await db.insert(events).values(rows);
  const chargeRows: (typeof charges.$inferInsert)[] = [];
  for (let i = 0; i < 40; i++) {
    const ms = NOW - i * DAY - 7000;
    chargeRows.push({ id: derivedId('ch', ms, `c${i}`), companyId: a.company.id, accountId: accountIds[0], amount: 1000 + i, reason: 'plan_renewal', description: 'Renewal', status: i % 10 === 3 ? 'failed' : 'succeeded', metadata: {}, createdAt: at(ms) });
    chargeRows.push({ id: derivedId('ch', ms, `o${i}`), companyId: b.company.id, accountId: otherAccountId, amount: 999_999, reason: 'plan_renewal', description: 'Renewal', status: 'succeeded', metadata: {}, createdAt: at(ms) });
  }
  await db.insert(charges).values(chargeRows);
  return { companyId: a.company.id, otherCompanyId: b.company.id, accountIds, otherAccountId, planId, otherPlanId };
}

describe('console queries on one company among others', () => {
  let s: Seeded;
  beforeAll(async () => {
    s = await seed();
  });

  it('the id window of a time range keeps exactly the events of that range', () => {
    const from = at(NOW - 20 * DAY);
    const to = at(NOW - 19 * DAY);
    const { gte, lt } = idRange('ev', from, to);
    // Rows minted up to an hour off their created_at stay inside; the window is not the whole table.
    expect(gte! <= derivedId('ev', from.getTime() - 3599_000, 'x')).toBe(true);
    expect(derivedId('ev', to.getTime() + 3599_000, 'x') < lt!).toBe(true);
    expect(derivedId('ev', NOW, 'x') < lt!).toBe(false);
  });

  it('the event list (API and explorer) returns exactly the matching events, filter by filter, page by page', async () => {
    const db = t.database.db;
    const now = at(NOW);
    const iso = (ms: number) => new Date(ms).toISOString();
    const all = (await db.select().from(events).where(sql`company_id = ${s.companyId}`)).sort((x, y) => (x.id < y.id ? 1 : -1));
    const queries: Partial<EventListQuery>[] = [
      {},
      { state: 'rejected' },
      { state: 'pending' },
      { state: 'cancelled' },
      { state: 'complete', type: 'upload' },
      { account_id: s.accountIds[1] },
      { account_id: s.accountIds[2], state: 'complete' },
      { created_gte: iso(NOW - 3 * DAY) },
      { created_lt: iso(NOW - 30 * DAY) },
      { created_gte: iso(NOW - 20 * DAY), created_lt: iso(NOW - 19 * DAY) },
      { created_gte: iso(NOW - 20 * DAY), created_lt: iso(NOW - 10 * DAY), type: 'query', state: 'complete' },
      { created_gte: iso(NOW - 20 * DAY), created_lt: iso(NOW - 19 * DAY + 1), account_id: s.accountIds[0] },
      { account_id: s.otherAccountId }, // another company's account: nothing
    ];
    for (const q of queries) {
      const expected = all
        .filter((e) => !q.account_id || e.accountId === q.account_id)
        .filter((e) => !q.type || e.type === q.type)
        .filter((e) => !q.state || effectiveState(e, now) === q.state)
        .filter((e) => !q.created_gte || e.createdAt.getTime() >= Date.parse(q.created_gte))
        .filter((e) => !q.created_lt || e.createdAt.getTime() < Date.parse(q.created_lt))
        .map((e) => e.id);
      if (q.account_id === s.otherAccountId) expect(expected).toEqual([]);
      else expect(expected.length, JSON.stringify(q)).toBeGreaterThan(0);
      for (const limit of [7, 100]) {
        let after: string | undefined;
        const seen: string[] = [];
        for (let pages = 0; pages < 100; pages++) {
          const page = await listEvents({ db, companyId: s.companyId, q: { limit, ...q, ...(after && { starting_after: after }) } as EventListQuery, now });
          expect(page.items.length).toBeLessThanOrEqual(limit);
          seen.push(...page.items.map((e) => e.id));
          if (!page.hasMore) break;
          after = page.items[page.items.length - 1].id;
        }
        expect(seen, `${JSON.stringify(q)} limit ${limit}`).toEqual(expected);
      }
    }
  });

  it('daily totals add up events, usage, rejections and charges per UTC day, for this company only', async () => {
    clearDashboardCache();
    const db = t.database.db;
    const days = await dailyTotals({ db, companyId: s.companyId, now: at(NOW) });
    expect(days).toHaveLength(30);
    expect(days[29].day).toBe('2031-05-20');
    expect(days[0].day).toBe('2031-04-21');
    // Brute force over the rows, in JS.
    const rows = await db.select().from(events).where(sql`company_id = ${s.companyId}`);
    const chargeRows = await db.select().from(charges).where(sql`company_id = ${s.companyId}`);
    for (const d of days) {
      const inDay = rows.filter((r) => r.createdAt.toISOString().slice(0, 10) === d.day);
      expect(d.events, d.day).toBe(inDay.length);
      expect(d.rejected).toBe(inDay.filter((r) => r.state === 'rejected').length);
      const tokens = inDay.filter((r) => r.state === 'complete' && r.costDenomination === 'tokens').reduce((sum, r) => sum + Number(r.costAmount), 0);
      expect(Number(d.usage.tokens ?? 0)).toBeCloseTo(tokens, 9);
      const dayCharges = chargeRows.filter((c) => c.createdAt.toISOString().slice(0, 10) === d.day);
      expect(d.chargedCents).toBe(dayCharges.filter((c) => c.status === 'succeeded').reduce((sum, c) => sum + c.amount, 0));
      expect(d.failedCharges).toBe(dayCharges.filter((c) => c.status === 'failed').length);
    }
    expect(days.reduce((n, d) => n + d.events, 0)).toBeGreaterThan(300);
  });

  it('keeps closed hours in memory and reads the open ones every time', async () => {
    clearDashboardCache();
    const db = t.database.db;
    const now = at(NOW);
    const before = await dailyTotals({ db, companyId: s.companyId, now });
    const add = async (ms: number, key: string) =>
      db.insert(events).values({ id: derivedId('ev', ms, key), companyId: s.companyId, accountId: s.accountIds[0], type: 'query', state: 'complete', costAmount: '1000', costDenomination: 'tokens', pricedBy: 'plan', metadata: {}, createdAt: at(ms) });
    await add(NOW - 5 * DAY, 'late-closed'); // a closed hour: already read, served from memory
    await add(NOW - 60_000, 'late-today'); // today: read on every load
    const after = await dailyTotals({ db, companyId: s.companyId, now });
    expect(after[24].events).toBe(before[24].events);
    expect(after[29].events).toBe(before[29].events + 1);
    clearDashboardCache();
    const fresh = await dailyTotals({ db, companyId: s.companyId, now });
    expect(fresh[24].events).toBe(before[24].events + 1);
    // The last hours of yesterday are still open just after midnight.
    const justAfterMidnight = at(Date.UTC(2031, 4, 21, 1, 0));
    await add(Date.UTC(2031, 4, 20, 23, 59), 'late-yesterday');
    const next = await dailyTotals({ db, companyId: s.companyId, now: justAfterMidnight });
    expect(next[28].day).toBe('2031-05-20');
    expect(next[28].events).toBe(fresh[29].events + 1);
  });

  it('the worker rolls closed hours up for every company, equal to a recount, idempotently and incrementally; the dashboard reads the same days from it', async () => {
    const db = t.database.db;
    const now = at(NOW);
    clearDashboardCache();
    const counted = await dailyTotals({ db, companyId: s.companyId, now }); // from the events: nothing rolled up yet
    const HOUR = 3600_000;
    const closedBefore = Math.floor((NOW - 2 * HOUR) / HOUR) * HOUR;
    // A hold still live (however old) keeps its hour open: it may yet complete and count there.
    const [live] = await query<{ at: string | Date }>(db, sql`select min(created_at) as at from events where state = 'pending' and expires_at > ${now.toISOString()}::timestamptz`);
    const heldBack = Math.floor(new Date(live.at).getTime() / HOUR) * HOUR;
    expect(heldBack).toBeLessThan(closedBefore - 7 * DAY);
    expect(await rollUpHours(db, now)).toBe(31 * 24);
    expect(await rolledHours(db)).toEqual({ from: heldBack - 31 * DAY, until: heldBack });
    await db.execute(sql`delete from hourly_totals`);
    await db.execute(sql`delete from settings where key = 'hourly_totals'`);
    // Once those holds have ended, every hour closed by time is rolled up.
    const held = await query<{ id: string }>(db, sql`update events set state = 'cancelled' where state = 'pending' and expires_at > ${now.toISOString()}::timestamptz returning id`);
    expect(held.length).toBeGreaterThan(0);
    expect(await rollUpHours(db, now)).toBe(31 * 24); // 31 days of history
    expect(await rolledHours(db)).toEqual({ from: closedBefore - 31 * DAY, until: closedBefore });

    // Brute force over every row of both companies, in JS.
    const recount = async (from: number, until: number) => {
      const expected = new Map<string, { count: number; total: Decimal | null }>();
      const add = (key: string, amount: string | number | null) => {
        const e = expected.get(key) ?? { count: 0, total: null };
        e.count += 1;
        if (amount !== null) e.total = (e.total ?? new Decimal(0)).plus(amount);
        expected.set(key, e);
      };
      const hourOf = (d: Date) => new Date(Math.floor(d.getTime() / HOUR) * HOUR).toISOString();
      for (const e of await db.select().from(events)) {
        if (e.createdAt.getTime() >= from && e.createdAt.getTime() < until) add(`${e.companyId}|${hourOf(e.createdAt)}|event|${e.state}|${e.costDenomination ?? ''}`, e.costAmount);
      }
      for (const c of await db.select().from(charges)) {
        if (c.createdAt.getTime() >= from && c.createdAt.getTime() < until) add(`${c.companyId}|${hourOf(c.createdAt)}|charge|${c.status}|`, c.amount);
      }
      return new Map([...expected].map(([k, v]) => [k, `${v.count} ${v.total?.toFixed() ?? 'null'}`]));
    };
    const stored = async () =>
      new Map(
        (await db.select().from(hourlyTotals)).map((r) => [`${r.companyId}|${r.hour.toISOString()}|${r.kind}|${r.state}|${r.denomination}`, `${r.count} ${r.total === null ? 'null' : new Decimal(r.total).toFixed()}`]),
      );
    const expected = await recount(closedBefore - 31 * DAY, closedBefore);
    expect([...expected.keys()].some((k) => k.startsWith(s.otherCompanyId))).toBe(true);
    expect(await stored()).toEqual(expected);
    // Counting the same hours again changes nothing; with nothing newly closed a run does nothing.
    await recountHours(db, at(closedBefore - 31 * DAY), at(closedBefore));
    expect(await stored()).toEqual(expected);
    expect(await rollUpHours(db, now)).toBe(0);
    // Three hours later, three more hours are added and the rest stays.
    expect(await rollUpHours(db, at(NOW + 3 * HOUR))).toBe(3);
    expect(await rolledHours(db)).toEqual({ from: closedBefore - 31 * DAY, until: closedBefore + 3 * HOUR });
    expect(await stored()).toEqual(await recount(closedBefore - 31 * DAY, closedBefore + 3 * HOUR));

    // The dashboard gives the same days from the roll-up, and reads them from it.
    clearDashboardCache();
    expect(await dailyTotals({ db, companyId: s.companyId, now })).toEqual(counted);
    await db.execute(sql`update hourly_totals set count = count + 1000 where company_id = ${s.companyId} and kind = 'event' and hour = (select max(hour) from hourly_totals where company_id = ${s.companyId} and kind = 'event' and hour < ${new Date(closedBefore - 5 * DAY).toISOString()}::timestamptz)`);
    clearDashboardCache();
    const marked = await dailyTotals({ db, companyId: s.companyId, now });
    expect(marked.reduce((n, d) => n + d.events, 0)).toBe(counted.reduce((n, d) => n + d.events, 0) + 1000);

    await db.execute(sql`delete from hourly_totals`);
    await db.execute(sql`delete from settings where key = 'hourly_totals'`);
    await query(db, sql`update events set state = 'pending' where id = any(${`{${held.map((r) => r.id).join(',')}}`}::text[])`);
    clearDashboardCache();
  });

  it('counts accounts exactly when few, and estimates beyond the limit without a full count', async () => {
    const db = t.database.db;
    const few = await accountTotals({ db, companyId: s.companyId, now: at(NOW) });
    expect(few.total).toEqual({ value: 3, estimated: false, atLeast: false });
    // Created 1 and 10 days ago; the 40-day-old one is not recent. (Ids carry the same times.)
    expect(few.recent.value).toBe(2);

    const big = await newCompany(t, { name: 'Big' });
    await db.execute(sql`insert into accounts (id, company_id, name, email, metadata, flags, created_at)
      select 'a_big' || lpad(g::text, 8, '0'), ${big.company.id}, 'n', 'e@example.com', '{}'::jsonb, '[]'::jsonb, now()
      from generate_series(1, ${EXACT_LIMIT + 500}) g`);
    await db.execute(sql`analyze accounts`);
    const many = await accountTotals({ db, companyId: big.company.id, now: at(NOW) });
    expect(many.total.estimated).toBe(true);
    expect(many.total.value).toBeGreaterThan(EXACT_LIMIT * 0.8);
    expect(many.total.value).toBeLessThan(EXACT_LIMIT * 1.2);
  });

  it('another company’s ids end on the not-found page', async () => {
    const db = t.database.db;
    const { getAccount } = await import('../billing/accounts/accounts');
    await expect(orNotFound(getAccount({ db, companyId: s.companyId, accountId: s.otherAccountId }))).rejects.toMatchObject({ digest: expect.stringContaining('404') });
    await expect(orNotFound(getAccount({ db, companyId: s.otherCompanyId, accountId: s.otherAccountId }))).resolves.toMatchObject({ id: s.otherAccountId });
  });

  it('lists the accounts on a plan or moving to it, never another company’s', async () => {
    const db = t.database.db;
    const page = await listAccountsOnPlan({ db, companyId: s.companyId, planId: s.planId, limit: 1 });
    expect(page.items.map((a) => a.id)).toEqual([s.accountIds[1]]);
    expect(page.hasMore).toBe(true);
    const next = await listAccountsOnPlan({ db, companyId: s.companyId, planId: s.planId, limit: 1, startingAfter: page.items[0].id });
    expect(next.items.map((a) => a.id)).toEqual([s.accountIds[0]]);
    expect(next.hasMore).toBe(false);
    expect((await listAccountsOnPlan({ db, companyId: s.companyId, planId: s.otherPlanId, limit: 10 })).items).toEqual([]);
  });
});

describe('team', () => {
  it('only the owner invites; emails are unique; an admin changes their own password', async () => {
    const db = t.database.db;
    const c = await newCompany(t, { name: 'Team Co', password: 'owner password' });
    const input = { email: `ops-${Date.now()}@team.test`, password: 'long enough!' };
    await expect(inviteAdmin({ db, companyId: c.company.id, inviterRole: 'admin', input })).rejects.toMatchObject({ type: 'unauthorized' });
    const admin = await inviteAdmin({ db, companyId: c.company.id, inviterRole: 'owner', input });
    expect(admin.role).toBe('admin');
    const dup = await inviteAdmin({ db, companyId: c.company.id, inviterRole: 'owner', input: { ...input, email: input.email.toUpperCase() } }).catch((e) => e);
    expect(dup).toBeInstanceOf(ApiError);
    expect(dup).toMatchObject({ type: 'conflict', param: 'email' });
    expect((await listAdmins({ db, companyId: c.company.id })).map((a) => a.role)).toEqual(['owner', 'admin']);

    await expect(changePassword({ db, companyId: c.company.id, adminId: admin.id, input: { current_password: 'wrong', new_password: 'brand new pass' } })).rejects.toMatchObject({ param: 'current_password' });
    // Another company's admin id is not found here either.
    const other = await newCompany(t, { name: 'Elsewhere' });
    await expect(changePassword({ db, companyId: other.company.id, adminId: admin.id, input: { current_password: 'long enough!', new_password: 'brand new pass' } })).rejects.toMatchObject({ param: 'current_password' });
    await changePassword({ db, companyId: c.company.id, adminId: admin.id, input: { current_password: 'long enough!', new_password: 'brand new pass' } });
    const [row] = await db.select().from(admins).where(sql`id = ${admin.id}`);
    expect(await verifyPassword('brand new pass', row.passwordHash)).toBe(true);
  });

  it('every new password has at least 12 characters', () => {
    const short = { email: 'short@team.test', password: 'eleven char' };
    expect(parseForm(adminInvite, short)).toEqual([{ param: 'password', message: 'password must be at least 12 characters' }]);
    expect(parseForm(adminInvite, { ...short, password: 'twelve chars' })).toEqual([]);
    expect(parseForm(passwordChange, { current_password: 'x', new_password: 'eleven char' })).toEqual([{ param: 'new_password', message: 'new_password must be at least 12 characters' }]);
  });

  it('a session ends at once when its admin changes password or is removed; the company keeps an owner', async () => {
    const db = t.database.db;
    const c = await newCompany(t, { name: 'Revoking Co', password: 'owner password' });
    const [ownerRow] = await db.select().from(admins).where(sql`company_id = ${c.company.id}`);
    const a = await inviteAdmin({ db, companyId: c.company.id, inviterRole: 'owner', input: { email: `rev-${Date.now()}@team.test`, password: 'first password' } });
    const sessions = new Map<string, string>();
    for (const id of [a.id, ownerRow.id]) sessions.set(id, await openConsoleSession(db, id));
    const claims = (id: string, sv: number, companyId = c.company.id) => ({ sub: id, companyId, sv, sid: sessions.get(id) });
    expect(await findSessionUser(db, claims(a.id, 1))).toEqual({ id: a.id, email: a.email, companyId: c.company.id, companyName: 'Revoking Co', role: 'admin' });
    // A token from before session versions, or for another company, speaks for nobody.
    expect(await findSessionUser(db, { sub: a.id, companyId: c.company.id })).toBeNull();
    const other = await newCompany(t, { name: 'Elsewhere' });
    expect(await findSessionUser(db, claims(a.id, 1, other.company.id))).toBeNull();

    await changePassword({ db, companyId: c.company.id, adminId: a.id, input: { current_password: 'first password', new_password: 'second password' } });
    expect(await findSessionUser(db, claims(a.id, 1))).toBeNull();
    expect(await findSessionUser(db, claims(a.id, 2))).toMatchObject({ id: a.id });

    const owner = { id: ownerRow.id, role: 'owner' };
    await expect(removeAdmin({ db, companyId: c.company.id, actor: { id: a.id, role: 'admin' }, adminId: ownerRow.id })).rejects.toMatchObject({ type: 'unauthorized' });
    await expect(removeAdmin({ db, companyId: c.company.id, actor: owner, adminId: ownerRow.id })).rejects.toMatchObject({ type: 'invalid_request', param: 'admin_id', message: expect.stringContaining('only owner') });
    await expect(removeAdmin({ db, companyId: other.company.id, actor: owner, adminId: a.id })).rejects.toMatchObject({ type: 'not_found' });
    expect(await findSessionUser(db, claims(a.id, 2))).toMatchObject({ id: a.id });
    expect(await removeAdmin({ db, companyId: c.company.id, actor: owner, adminId: a.id })).toMatchObject({ id: a.id, email: a.email });
    expect(await findSessionUser(db, claims(a.id, 2))).toBeNull();
    expect((await listAdmins({ db, companyId: c.company.id })).map((x) => x.id)).toEqual([ownerRow.id]);
    expect(await findSessionUser(db, claims(ownerRow.id, 1))).toMatchObject({ id: ownerRow.id, role: 'owner' });
  });

  it("a plan picker names an account's current and scheduled plans however old, and no other company's", async () => {
    const db = t.database.db;
    const c = await newCompany(t, { name: 'Many Plans Co' });
    const other = await newCompany(t, { name: 'Other Plans Co' });
    const make = async (co: typeof c, name: string) => (await co.call('POST', '/v1/companies/{company}/plans', { body: { name, charge_amount: 0, balances: [], billing_rules: [] } })).body.data.id as string;
    const oldest = await make(c, 'Oldest');
    const middle = await make(c, 'Middle');
    const newest = await make(c, 'Newest');
    const foreign = await make(other, 'Foreign');
    const names = async (include: (string | null)[]) => (await planChoices({ db, companyId: c.company.id, include, limit: 1 })).map((p) => p.name);
    expect(await names([])).toEqual(['Newest']);
    expect(await names([oldest, null, newest, foreign, middle])).toEqual(expect.arrayContaining(['Newest', 'Oldest', 'Middle']));
    expect(await names([oldest, null, newest, foreign, middle])).toHaveLength(3);
  });

  it('wrong current passwords on a password change count as failed sign-ins of that email from that address, and tries are limited', async () => {
    const db = t.database.db;
    const c = await newCompany(t, { name: 'Guessing Co', password: 'owner password' });
    const email = `guess-${Date.now()}@team.test`;
    const from = '198.51.100.31';
    const a = await inviteAdmin({ db, companyId: c.company.id, inviterRole: 'owner', input: { email, password: 'first password' } });
    const change = (current: string) => changePassword({ db, companyId: c.company.id, adminId: a.id, input: { current_password: current, new_password: 'second password' }, address: from });
    for (let i = 0; i < 5; i++) await expect(change(`guess ${i}`)).rejects.toMatchObject({ param: 'current_password', message: 'That is not your current password.' });
    // The 6th try within 15 minutes is refused before any check, even with the right password.
    await expect(change('first password')).rejects.toMatchObject({ type: 'rate_limited', headers: { 'Retry-After': expect.any(String) } });
    // The 5 wrong ones counted as sign-ins from there: 5 more lock the email from that address.
    for (let i = 0; i < 5; i++) expect(await attemptSignIn({ db, email, password: `sign-in guess ${i}`, address: from })).toEqual({ status: 'failed' });
    expect(await attemptSignIn({ db, email, password: 'first password', address: from })).toEqual({ status: 'locked' });
    expect((await attemptSignIn({ db, email, password: 'first password', address: '198.51.100.32' })).status).toBe('ok');
    expect(await verifyPassword('first password', (await db.select().from(admins).where(eq(admins.id, a.id)))[0].passwordHash)).toBe(true);
  });

  it('a session ends at sign-out and 12 hours after its sign-in, however often its cookie was renewed', async () => {
    const db = t.database.db;
    const c = await newCompany(t, { name: 'Session Co', password: 'owner password' });
    const [owner] = await db.select().from(admins).where(sql`company_id = ${c.company.id}`);
    const other = await inviteAdmin({ db, companyId: c.company.id, inviterRole: 'owner', input: { email: `ses-${Date.now()}@team.test`, password: 'first password' } });
    const claims = (sid: unknown, sub = owner.id) => ({ sub, companyId: c.company.id, sv: 1, sid });
    const first = await openConsoleSession(db, owner.id);
    const second = await openConsoleSession(db, owner.id);
    expect(await findSessionUser(db, claims(first))).toMatchObject({ id: owner.id });
    // A token without a session, with a made-up one, or with another admin's, speaks for nobody.
    expect(await findSessionUser(db, claims(undefined))).toBeNull();
    expect(await findSessionUser(db, claims('cs_made_up'))).toBeNull();
    expect(await findSessionUser(db, claims(await openConsoleSession(db, other.id)))).toBeNull();

    await endConsoleSession(db, first);
    expect(await findSessionUser(db, claims(first))).toBeNull();
    // Signing out of one browser leaves the others signed in.
    expect(await findSessionUser(db, claims(second))).toMatchObject({ id: owner.id });

    const rows = () => db.select().from(consoleSessions).where(eq(consoleSessions.adminId, owner.id));
    const real = Date.now();
    const later = vi.spyOn(Date, 'now').mockReturnValue(real + SESSION_MAX_AGE_S * 1000 + 1000);
    try {
      expect(await findSessionUser(db, claims(second))).toBeNull();
      // The next sign-in takes away the sessions that are over.
      const third = await openConsoleSession(db, owner.id);
      expect((await rows()).map((r) => r.id)).toEqual([third]);
    } finally {
      later.mockRestore();
    }
  });
});

/** The field errors a console form gets for these values. */
function parseForm(schema: Parameters<typeof parseWith>[0], value: unknown) {
  try {
    parseWith(schema, value);
    return [];
  } catch (err) {
    return (err as FormInvalid).errors;
  }
}
