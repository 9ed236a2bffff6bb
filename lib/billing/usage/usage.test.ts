process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { describe, expect, it } from 'vitest';
import { sql, type SQL } from 'drizzle-orm';
import { PgDialect } from 'drizzle-orm/pg-core';
import { query } from '../../db/client';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { advance, advanceTo, createAccount, spend, type Co } from '../../testing/scenario';
import { now } from '../../clock';
import { Decimal } from '../../money';
import { recountUsage, rolledProperty, rolledUsage, rollUpRecentUsage, rollUpUsage } from '../../db/usage-totals';
import { COMMIT_LAG_MS } from '../../db/roll-up';
import { rolledHours, rollUpHours, SETTLE_MS } from '../../db/hourly-totals';
import { readUsage } from './usage';

const t = useTestDatabase();
const HOUR = 3600_000;
const DAY = 24 * HOUR;

async function usage(co: Co, path: string, params: Record<string, string> = {}) {
  const r = await co.call('GET', `${path}?${new URLSearchParams(params)}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data as { start: string; group: string | null; denomination: string | null; events: number; cost: number; quantities: Record<string, number> }[];
}

/** Sets what events carry beside their cost (their own API fields), straight in the table. */
async function describeEvent(id: string, properties: Record<string, unknown> | null, quantities: Record<string, unknown> | null) {
  await query(t.database.db, sql`update events set properties = ${properties === null ? null : JSON.stringify(properties)}::jsonb, quantities = ${quantities === null ? null : JSON.stringify(quantities)}::jsonb where id = ${id}`);
}

type Row = { start: string; group: string | null; denomination: string | null; events: number; cost: string; quantities: Record<string, string> };

type CompletedEvent = { account_id: string; type: string; created_at: string | Date; cost_amount: string | null; cost_denomination: string | null; properties: unknown; quantities: unknown };
type Report = { accountId?: string; from: Date; to: Date; granularity: 'hour' | 'day' | 'month'; property?: string; denomination?: string };

/** Every completed event of the company, as stored. */
async function completedEvents(companyId: string): Promise<CompletedEvent[]> {
  return query<CompletedEvent>(
    t.database.db,
    sql`select account_id, type, created_at, cost_amount::text as cost_amount, cost_denomination, properties, quantities from events where company_id = ${companyId} and state = 'complete'`,
  );
}

/** The report worked out from every completed event, one by one: what any answer must equal. */
async function bruteForce(companyId: string, p: Report): Promise<Row[]> {
  return bruteForceOf(await completedEvents(companyId), p);
}

/**
 * The same from the events as read once (completedEvents) for a round of reads that writes
 * nothing in between: each answer of the round is checked against all of them, as read then.
 */
function bruteForceOf(events: CompletedEvent[], p: Report): Row[] {
  const out = new Map<string, { row: Row; cost: Decimal; q: Map<string, Decimal> }>();
  for (const e of events) {
    const at = new Date(e.created_at);
    if (at < p.from || at >= p.to) continue;
    if (p.accountId && e.account_id !== p.accountId) continue;
    if (p.denomination && e.cost_denomination !== p.denomination) continue;
    const d = new Date(at);
    if (p.granularity !== 'hour') d.setUTCHours(0, 0, 0, 0);
    else d.setUTCMinutes(0, 0, 0);
    if (p.granularity === 'month') d.setUTCDate(1);
    const props = (typeof e.properties === 'string' ? JSON.parse(e.properties) : e.properties) as Record<string, unknown> | null;
    const group = p.property === undefined ? e.type : props && p.property in props ? String(props[p.property]) : null;
    const key = JSON.stringify([d.toISOString(), group, e.cost_denomination]);
    let acc = out.get(key);
    if (!acc) out.set(key, (acc = { row: { start: d.toISOString(), group, denomination: e.cost_denomination, events: 0, cost: '0', quantities: {} }, cost: new Decimal(0), q: new Map() }));
    acc.row.events++;
    if (e.cost_amount !== null) acc.cost = acc.cost.plus(e.cost_amount);
    const qs = (typeof e.quantities === 'string' ? JSON.parse(e.quantities) : e.quantities) as Record<string, string | number> | null;
    for (const [k, v] of Object.entries(qs ?? {})) acc.q.set(k, (acc.q.get(k) ?? new Decimal(0)).plus(String(v)));
  }
  return [...out.values()]
    .map(({ row, cost, q }) => ({ ...row, cost: cost.toFixed(), quantities: Object.fromEntries([...q].sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, v.toFixed()])) }))
    .sort((a, b) => (a.start < b.start ? -1 : a.start > b.start ? 1 : 0) || order(a.group, b.group) || order(a.denomination, b.denomination));
}

const order = (a: string | null, b: string | null) => (a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1);

/** An answer's rows with exact decimals as strings, to compare with bruteForce. */
async function exactRows(co: Co, path: string, params: Record<string, string>): Promise<Row[]> {
  const r = await co.call('GET', `${path}?${new URLSearchParams(params)}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.data as Row[]).map((row) => ({
    ...row,
    cost: new Decimal(row.cost).toFixed(),
    quantities: Object.fromEntries(Object.entries(row.quantities).map(([k, v]) => [k, new Decimal(v).toFixed()])),
  }));
}

describe('GET /v1/accounts/{account_id}/usage', () => {
  it('sums the costs and counts of completed events per day and type, exactly; holds count once completed, cancelled and refused ones never', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co, { name: 'Ada' });
    const day0 = new Date(Math.floor(now().getTime() / DAY) * DAY).toISOString();
    for (let i = 0; i < 10; i++) await spend(co, ada, '0.1', { type: 'chat' });
    await spend(co, ada, '2.5', { type: 'render', denomination: 'tokens' });
    // Unpriced: counted, without a cost.
    expect((await co.call('POST', `/v1/accounts/${ada}/events`, { body: { type: 'login' } })).status).toBe(200);
    const held = (await spend(co, ada, 7, { type: 'chat', state: 'pending' })).body.data.id;
    const dropped = (await spend(co, ada, 100, { type: 'chat', state: 'pending' })).body.data.id;
    expect((await co.call('PUT', `/v1/events/${dropped}`, { body: { state: 'cancelled' } })).status).toBe(200);
    expect((await co.call('POST', `/v1/accounts/${ada}/events`, { body: { type: 'chat', cost_override_amount: 1e6, cost_override_denomination: 'credits', gate_on_balance: true } })).status).toBe(402);

    const first = await usage(co, `/v1/accounts/${ada}/usage`);
    expect(first).toEqual([
      { start: day0, group: 'chat', denomination: 'credits', events: 10, cost: 1, quantities: {} },
      { start: day0, group: 'login', denomination: null, events: 1, cost: 0, quantities: {} },
      { start: day0, group: 'render', denomination: 'tokens', events: 1, cost: 2.5, quantities: {} },
    ]);
    expect((await co.call('PUT', `/v1/events/${held}`, { body: { state: 'complete' } })).status).toBe(200);
    const after = await usage(co, `/v1/accounts/${ada}/usage`, { denomination: 'credits' });
    expect(after).toEqual([{ start: day0, group: 'chat', denomination: 'credits', events: 11, cost: 8, quantities: {} }]);
  });

  it("is the caller company's: another company's account is 404, on both paths, and so is another company's id", async () => {
    const co = await newCompany(t);
    const other = await newCompany(t);
    const theirs = await createAccount(other);
    await spend(other, theirs, 5);
    for (const path of [`/v1/accounts/${theirs}/usage`, `/v1/companies/${co.company.id}/usage?account_id=${theirs}`, `/accounts/${theirs}/usage`]) {
      const r = await co.call('GET', path);
      expect(r.status, path).toBe(404);
      expect(r.body.error).toMatchObject({ type: 'not_found', param: 'account_id' });
    }
    const foreign = await co.call('GET', `/v1/companies/${other.company.id}/usage`);
    expect(foreign.status).toBe(404);
    expect(foreign.body.error.param).toBe('company_id');
    expect(await usage(co, '/v1/companies/{company}/usage')).toEqual([]);
    expect((await usage(other, '/v1/companies/{company}/usage')).map((r) => r.cost)).toEqual([5]);
  });

  it('answers every bad input with a 400 naming the parameter', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co);
    const at = now().getTime();
    const cases: [Record<string, string>, string][] = [
      [{ granularity: 'week' }, 'granularity'],
      [{ group_by: 'state' }, 'group_by'],
      [{ group_by: 'property:' }, 'group_by'],
      [{ from: new Date(at).toISOString(), to: new Date(at - HOUR).toISOString() }, 'from'],
      [{ from: new Date(at).toISOString(), to: new Date(at).toISOString() }, 'from'],
      [{ from: new Date(at - 401 * DAY).toISOString(), to: new Date(at).toISOString() }, 'to'],
      [{ from: 'yesterday' }, 'from'],
      [{ to: '2026-13-01T00:00:00Z' }, 'to'],
      [{ denomination: 'no spaces' }, 'denomination'],
      [{ limit: '10' }, 'limit'],
    ];
    for (const [params, param] of cases) {
      for (const path of [`/v1/accounts/${ada}/usage`, '/v1/companies/{company}/usage']) {
        const r = await co.call('GET', `${path}?${new URLSearchParams(params)}`);
        expect(r.status, `${path} ${JSON.stringify(params)}`).toBe(400);
        expect(r.body.error, JSON.stringify(params)).toMatchObject({ type: 'invalid_request', param });
        expect(r.body.error.message.length).toBeGreaterThan(10);
      }
    }
    // Exactly 400 days is allowed.
    expect((await co.call('GET', `/v1/accounts/${ada}/usage?${new URLSearchParams({ from: new Date(at - 400 * DAY).toISOString(), to: new Date(at).toISOString() })}`)).status).toBe(200);
    expect((await co.call('GET', '/v1/accounts/a_nothere/usage')).status).toBe(404);
  });
});

describe('usage over time: the roll-up and the events agree', () => {
  it('gives, for every window, granularity and grouping, what the events say one by one, before and after the hours are rolled up', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co, { name: 'Ada' });
    const bob = await createAccount(co, { name: 'Bob' });
    const start = now().getTime();
    // Four days of usage at odd times, with properties and quantities on some events.
    const types = ['chat', 'render', 'embed'];
    const models = ['small', 'large', null];
    for (let i = 0; i < 48; i++) {
      const account = i % 3 === 0 ? bob : ada;
      const r = await spend(co, account, ['0.1', '1.25', '3', '0.000000000001'][i % 4], { type: types[i % 3], denomination: i % 5 === 0 ? 'tokens' : 'credits' });
      const model = models[i % 3];
      await describeEvent(r.body.data.id, model === null ? { region: 'eu' } : { model, region: i % 2 ? 'eu' : 'us', beta: i % 4 === 0 }, i % 2 ? { input: (i * 0.1).toFixed(1), output: i } : null);
      await advance(7 * 3600 + 13 * 60 + 7);
    }
    const end = now().getTime();
    expect(end - start).toBeGreaterThan(3 * DAY);

    const windows = [
      { from: new Date(start - DAY), to: new Date(end + HOUR) },
      { from: new Date(start + 5 * HOUR + 17 * 60_000), to: new Date(end - 9 * HOUR - 1000) },
      { from: new Date(Math.ceil(start / HOUR) * HOUR), to: new Date(Math.floor(end / HOUR) * HOUR) },
    ];
    const check = async () => {
      const events = await completedEvents(co.company.id);
      for (const w of windows) {
        for (const granularity of ['hour', 'day', 'month'] as const) {
          for (const property of [undefined, 'model', 'beta']) {
            for (const [path, accountId] of [[`/v1/accounts/${ada}/usage`, ada], ['/v1/companies/{company}/usage', undefined], [`/v1/companies/{company}/usage`, bob]] as const) {
              const params: Record<string, string> = { from: w.from.toISOString(), to: w.to.toISOString(), granularity, ...(property && { group_by: `property:${property}` }) };
              if (path.startsWith('/v1/companies') && accountId) params.account_id = accountId;
              const expected = bruteForceOf(events, { accountId, from: w.from, to: w.to, granularity, property });
              expect(await exactRows(co, path, params), `${path} ${JSON.stringify(params)}`).toEqual(expected);
            }
          }
        }
      }
      const expected = bruteForceOf(events, { from: windows[0].from, to: windows[0].to, granularity: 'day', denomination: 'tokens' });
      expect(expected.length).toBeGreaterThan(0);
      expect(await exactRows(co, '/v1/companies/{company}/usage', { from: windows[0].from.toISOString(), to: windows[0].to.toISOString(), denomination: 'tokens' })).toEqual(expected);
    };
    // The test clock's advances ran the roll-up: every hour closed by now is in the table.
    const rolled = (await rolledUsage(t.database.db))!;
    expect(rolled.until).toBe(Math.floor((end - SETTLE_MS) / HOUR) * HOUR);
    expect(rolled.from).toBeLessThanOrEqual(start);
    await check();
    // The same from the events alone.
    await query(t.database.db, sql`delete from usage_hourly`);
    await query(t.database.db, sql`delete from settings where key = 'usage_hourly'`);
    await check();
    // Rolled up again from scratch (the first run starts at the oldest event): the same again,
    // and a roll-up run twice leaves the same rows.
    await rollUpUsage(t.database.db, now());
    const rows = await query(t.database.db, sql`select * from usage_hourly order by 1, 2, 3, 4, 5`);
    expect(rows.length).toBeGreaterThan(0);
    await check();
    await query(t.database.db, sql`update settings set value = jsonb_set(value, '{until}', to_jsonb((value->>'from')::bigint)) where key = 'usage_hourly'`);
    await rollUpUsage(t.database.db, now());
    expect(await query(t.database.db, sql`select * from usage_hourly order by 1, 2, 3, 4, 5`)).toEqual(rows);
  });

  it('leaves an hour with a hold still pending out of the roll-up until the hold ends, so its completion counts', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co);
    const start = now();
    const held = (await spend(co, ada, 7, { type: 'chat', state: 'pending' })).body.data.id;
    // A hold longer than the hours take to settle.
    await query(t.database.db, sql`update events set expires_at = ${new Date(start.getTime() + DAY).toISOString()}::timestamptz where id = ${held}`);
    await advance(5 * 3600);
    await spend(co, ada, 1, { type: 'chat' });
    await advance(5 * 3600);
    const rolled = (await rolledUsage(t.database.db))!;
    expect(rolled.until).toBeLessThanOrEqual(start.getTime());
    expect((await co.call('PUT', `/v1/events/${held}`, { body: { state: 'complete' } })).status).toBe(200);
    await advance(5 * 3600);
    expect((await rolledUsage(t.database.db))!.until).toBe(Math.floor((now().getTime() - SETTLE_MS) / HOUR) * HOUR);
    const w = { from: new Date(start.getTime() - DAY), to: now() };
    const expected = await bruteForce(co.company.id, { from: w.from, to: w.to, granularity: 'day', accountId: ada });
    expect(expected.reduce((n, r) => n + r.events, 0)).toBe(2);
    expect(await exactRows(co, `/v1/accounts/${ada}/usage`, { from: w.from.toISOString(), to: w.to.toISOString() })).toEqual(expected);
  });

  it('counts the open hours provisionally: an event after the count and a hold completed later are read once, and the hour counts for good once closed', async () => {
    const co = await newCompany(t);
    const [ada, bob] = [await createAccount(co, { name: 'Ada' }), await createAccount(co, { name: 'Bob' })];
    expect((await co.call('PATCH', '/v1/companies/{company}', { body: { usage_properties: ['model'] } })).status).toBe(200);
    // Ten minutes into an hour (the clock keeps its milliseconds).
    const hour = Math.floor(now().getTime() / HOUR) * HOUR + HOUR;
    await advanceTo(hour + 10 * 60_000 + (now().getTime() % 1000));
    const properties = ['model'];
    const check = async (label: string) => {
      const at = now().getTime();
      const events = await completedEvents(co.company.id);
      const windows = [
        { from: new Date(at - 2 * DAY + 17 * 60_000), to: new Date(Math.floor(at / HOUR) * HOUR + HOUR) },
        { from: new Date(hour - HOUR), to: new Date(hour + 25 * 60_000) },
        { from: new Date(hour + 5 * 60_000), to: new Date(at + 60_000) },
      ];
      for (const w of windows) {
        if (w.to <= w.from) continue;
        for (const granularity of ['hour', 'day'] as const) {
          for (const property of [undefined, ...properties]) {
            for (const accountId of [undefined, ada]) {
              const params: Record<string, string> = { from: w.from.toISOString(), to: w.to.toISOString(), granularity, ...(property && { group_by: `property:${property}` }), ...(accountId && { account_id: accountId }) };
              const expected = bruteForceOf(events, { accountId, from: w.from, to: w.to, granularity, property });
              expect(await exactRows(co, '/v1/companies/{company}/usage', params), `${label}: ${JSON.stringify(params)}`).toEqual(expected);
            }
          }
        }
      }
      // The default window (the last 30 days to the end of this hour) too.
      expect(await exactRows(co, '/v1/companies/{company}/usage', {})).toEqual(bruteForceOf(events, { from: new Date(Math.floor(at / HOUR) * HOUR + HOUR - 30 * DAY), to: new Date(Math.floor(at / HOUR) * HOUR + HOUR), granularity: 'day' }));
    };
    const companyRows = async () =>
      (await query<{ type: string; events: string | number; cost: string }>(t.database.db, sql`select type, events, cost::text as cost from usage_hourly where company_id = ${co.company.id} and account_id = '' and hour = ${new Date(hour).toISOString()}::timestamptz order by type`))
        .map((r) => ({ type: r.type, events: Number(r.events), cost: new Decimal(r.cost).toFixed() }));
    const describe1 = async (r: { body: { data: { id: string } } }, model: string) => describeEvent(r.body.data.id, { model, region: 'eu' }, { input: '2.5' });

    await describe1(await spend(co, ada, '1.5', { type: 'chat' }), 'small');
    await advance(10 * 60);
    await rollUpRecentUsage(t.database.db, now());
    let rolled = (await rolledUsage(t.database.db))!;
    expect(rolled.until).toBeLessThanOrEqual(hour);
    expect(rolled.open).toBe(Math.floor((now().getTime() - COMMIT_LAG_MS) / 60_000) * 60_000);
    expect(await companyRows()).toEqual([{ type: 'chat', events: 1, cost: '1.5' }]);
    await check('counted provisionally');

    // An event in the hour already counted, after the count: read from the events, once.
    await describe1(await spend(co, bob, '0.25', { type: 'render' }), 'large');
    await check('an event after the provisional count');
    // The provisional rows are what is read up to the count: changing them changes the answer.
    await query(t.database.db, sql`update usage_hourly set events = events + 100 where company_id = ${co.company.id} and account_id = '' and hour = ${new Date(hour).toISOString()}::timestamptz`);
    const [changed] = await exactRows(co, '/v1/companies/{company}/usage', { from: new Date(hour).toISOString(), to: new Date(hour + HOUR).toISOString(), granularity: 'hour' });
    expect(changed).toMatchObject({ group: 'chat', events: 101 });
    await query(t.database.db, sql`update usage_hourly set events = events - 100 where company_id = ${co.company.id} and account_id = '' and hour = ${new Date(hour).toISOString()}::timestamptz`);

    // A hold still live stops the next provisional count at its time; completed later, it counts once.
    await advance(60);
    const held = await spend(co, ada, 7, { type: 'chat', state: 'pending' });
    await describe1(held, 'large');
    await query(t.database.db, sql`update events set expires_at = ${new Date(hour + DAY).toISOString()}::timestamptz where id = ${held.body.data.id}`);
    await advance(10 * 60);
    await rollUpRecentUsage(t.database.db, now());
    rolled = (await rolledUsage(t.database.db))!;
    expect(rolled.open).toBe(new Date(held.body.data.created_at).getTime());
    expect(rolled.open).toBeLessThan(hour + 22 * 60_000);
    expect(await companyRows()).toEqual([{ type: 'chat', events: 1, cost: '1.5' }, { type: 'render', events: 1, cost: '0.25' }]);
    await describe1(await spend(co, bob, '3', { type: 'chat' }), 'small');
    expect((await co.call('PUT', `/v1/events/${held.body.data.id}`, { body: { state: 'complete', cost_override_amount: 6 } })).status).toBe(200);
    await check('a hold completed after a provisional count');
    await advance(10 * 60);
    await rollUpRecentUsage(t.database.db, now());
    expect((await rolledUsage(t.database.db))!.open).toBe(Math.floor((now().getTime() - COMMIT_LAG_MS) / 60_000) * 60_000);
    expect(await companyRows()).toEqual([{ type: 'chat', events: 3, cost: '10.5' }, { type: 'render', events: 1, cost: '0.25' }]);
    await check('counted again after the hold');

    // A property declared now has no provisional rows: read from the events until the next count.
    expect((await co.call('PATCH', '/v1/companies/{company}', { body: { usage_properties: ['model', 'region'] } })).status).toBe(200);
    properties.push('region');
    expect((await rolledUsage(t.database.db))!.open).toBe((await rolledUsage(t.database.db))!.until);
    await check('a property declared between counts');
    await advance(6 * 60);
    await rollUpRecentUsage(t.database.db, now());
    expect((await rolledProperty(t.database.db, co.company.id, 'region'))!.open).toBeGreaterThan(hour + 40 * 60_000);
    await check('counted with the new property');

    // Closed: counted for good, the same.
    await advance(3 * 3600);
    rolled = (await rolledUsage(t.database.db))!;
    expect(rolled.until).toBeGreaterThan(hour);
    expect(await companyRows()).toEqual([{ type: 'chat', events: 3, cost: '10.5' }, { type: 'render', events: 1, cost: '0.25' }]);
    await check('closed');
  });

  it('reads again when a provisional run rewrites the rows while it reads them, so nothing counts twice', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co);
    await advanceTo(Math.floor(now().getTime() / HOUR) * HOUR + HOUR + 10 * 60_000 + (now().getTime() % 1000));
    const at = now();
    await spend(co, ada, '1.5', { type: 'chat' });
    await rollUpRecentUsage(t.database.db, at);
    const before = (await rolledUsage(t.database.db))!;
    expect(before.open).toBeLessThan(at.getTime());
    // A database through which the first read of the roll-up's rows finds a provisional run
    // (as of 10 minutes on, past the event) committed just before it.
    const dialect = new PgDialect();
    let raced = 0;
    const db = new Proxy(t.database.db, {
      get(target, prop) {
        if (prop === 'execute') {
          return async (statement: SQL) => {
            if (!raced && /from usage_hourly\b/.test(dialect.sqlToQuery(statement).sql) && /materialized/.test(dialect.sqlToQuery(statement).sql)) {
              raced++;
              await rollUpRecentUsage(t.database.db, new Date(at.getTime() + 10 * 60_000));
            }
            return target.execute(statement);
          };
        }
        const v = Reflect.get(target, prop) as unknown;
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
      },
    }) as typeof t.database.db;
    const { rows } = await readUsage(db, { companyId: co.company.id, accountId: null, denomination: null, from: null, to: null, granularity: 'day', groupBy: { kind: 'type' }, now: at });
    expect(raced).toBe(1);
    expect((await rolledUsage(t.database.db))!.open).toBeGreaterThan(at.getTime());
    expect(rows.map((r) => ({ group: r.group, events: r.events, cost: r.cost }))).toEqual([{ group: 'chat', events: 1, cost: '1.5' }]);
  });

  it('reads a company total from the company rows of the roll-up, not from the events', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co);
    await spend(co, ada, 4, { type: 'chat' });
    await advance(4 * 3600);
    const day = new Date(Math.floor((now().getTime() - 4 * HOUR) / DAY) * DAY).toISOString();
    // A closed hour is read from the table: changing the table changes the answer (and nothing else would).
    await query(t.database.db, sql`update usage_hourly set cost = cost + 1, events = events + 1 where company_id = ${co.company.id} and account_id = ''`);
    const [row] = await usage(co, '/v1/companies/{company}/usage', { from: new Date(now().getTime() - DAY).toISOString(), to: now().toISOString() });
    expect(row).toMatchObject({ start: day, group: 'chat', events: 2, cost: 5 });
    const [own] = await usage(co, `/v1/accounts/${ada}/usage`, { from: new Date(now().getTime() - DAY).toISOString(), to: now().toISOString() });
    expect(own).toMatchObject({ events: 1, cost: 4 });
  });
});

describe('usage by a declared property (usage_properties): the hourly roll-up and the events agree', () => {
  /** A small deterministic generator, so a failure can be replayed from its seed. */
  const random = (seed: number) => () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };

  it('gives for random events, windows and granularities exactly what the events give, before the property is declared, while its history is filled, after, and once taken back', async () => {
    const seed = 41_2026;
    const rnd = random(seed);
    const pick = <T,>(list: readonly T[]) => list[Math.floor(rnd() * list.length)];
    const co = await newCompany(t);
    const accounts = [await createAccount(co, { name: 'Ada' }), await createAccount(co, { name: 'Bob' }), await createAccount(co, { name: 'Cy' })];
    const start = now().getTime();
    const late: string[] = [];
    let provisional = 0;
    /** By type, from the start to the end of this hour, per hour and day, the company's and one account's: as the events give. */
    const recent = async (label: string) => {
      const rolled = (await rolledUsage(t.database.db))!;
      if (rolled.open > rolled.until) provisional++;
      const w = { from: new Date(start - DAY), to: new Date(Math.floor(now().getTime() / HOUR) * HOUR + HOUR) };
      const events = await completedEvents(co.company.id);
      for (const granularity of ['hour', 'day'] as const) {
        for (const accountId of [undefined, accounts[1]]) {
          const params: Record<string, string> = { from: w.from.toISOString(), to: w.to.toISOString(), granularity, ...(accountId && { account_id: accountId }) };
          const expected = bruteForceOf(events, { accountId, from: w.from, to: w.to, granularity });
          expect(await exactRows(co, '/v1/companies/{company}/usage', params), `seed ${seed} ${label} ${JSON.stringify(params)} ${JSON.stringify(rolled)}`).toEqual(expected);
        }
      }
    };
    for (let i = 0; i < 70; i++) {
      const account = pick(accounts);
      const amount = pick(['0.1', '1.25', '3', '0.000000001', '123.4567']);
      const body: Record<string, unknown> = { type: pick(['chat', 'render', 'embed']), cost_override_amount: amount, cost_override_denomination: pick(['credits', 'credits', 'tokens']) };
      const properties: Record<string, string | number | boolean> = {};
      if (rnd() < 0.85) properties.model = pick(['small', 'large', 'x-large']);
      if (rnd() < 0.7) properties.region = pick(['eu', 'us', 'ap']);
      if (rnd() < 0.5) properties.tier = pick([1, 2, true]);
      if (Object.keys(properties).length) body.properties = properties;
      const r = await co.call('POST', `/v1/accounts/${account}/events`, { body });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      if (rnd() < 0.6) await describeEvent(r.body.data.id, Object.keys(properties).length ? properties : null, { input: (rnd() * 1000).toFixed(3), output: Math.floor(rnd() * 50) });
      // Some holds, completed or cancelled at once or hours later (after provisional counts of
      // their hour), and some events left out (refused by the gate).
      if (rnd() < 0.15) {
        const held = (await spend(co, account, '2', { type: 'chat', state: 'pending' })).body.data.id;
        await describeEvent(held, { model: 'small', region: 'eu' }, null);
        if (rnd() < 0.5) {
          await query(t.database.db, sql`update events set expires_at = ${new Date(now().getTime() + 2 * DAY).toISOString()}::timestamptz where id = ${held}`);
          late.push(held);
        } else {
          expect((await co.call('PUT', `/v1/events/${held}`, { body: { state: rnd() < 0.5 ? 'complete' : 'cancelled' } })).status).toBe(200);
        }
      }
      if (late.length && rnd() < 0.3) {
        const body = rnd() < 0.7 ? { state: 'complete', cost_override_amount: pick(['0.5', '1.999']) } : { state: 'cancelled' };
        const r = await co.call('PUT', `/v1/events/${late.shift()}`, { body });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        await recent(`event ${i}, a hold ended hours after it was made`);
      }
      // Every few events, while hours are open and counted provisionally, the answers by type so far.
      if (i % 7 === 3) await recent(`event ${i}`);
      await advance(Math.floor(rnd() * 4 * 3600) + 60);
    }
    for (const held of late) expect((await co.call('PUT', `/v1/events/${held}`, { body: { state: 'complete' } })).status).toBe(200);
    expect(provisional).toBeGreaterThan(0);
    await advance(3 * 3600);
    const end = now().getTime();

    const windows = [
      { from: new Date(start - DAY), to: new Date(end + HOUR) },
      { from: new Date(start + 3 * HOUR + 17 * 60_000 + 3_000), to: new Date(end - 5 * HOUR - 1000) },
      { from: new Date(Math.ceil(start / HOUR) * HOUR + 7 * HOUR), to: new Date(Math.floor(end / HOUR) * HOUR - 2 * HOUR) },
    ];
    const answers = async () => {
      const out: Row[][] = [];
      const events = await completedEvents(co.company.id);
      for (const w of windows) {
        for (const granularity of ['hour', 'day', 'month'] as const) {
          for (const property of ['model', 'region', 'tier']) {
            for (const accountId of [undefined, accounts[0], accounts[2]]) {
              const params: Record<string, string> = { from: w.from.toISOString(), to: w.to.toISOString(), granularity, group_by: `property:${property}` };
              const path = accountId && rnd() < 0.5 ? `/v1/accounts/${accountId}/usage` : '/v1/companies/{company}/usage';
              if (accountId && path.startsWith('/v1/companies')) params.account_id = accountId;
              const expected = bruteForceOf(events, { accountId, from: w.from, to: w.to, granularity, property });
              const got = await exactRows(co, path, params);
              expect(got, `seed ${seed} ${path} ${JSON.stringify(params)}`).toEqual(expected);
              out.push(got);
            }
          }
        }
        const tokens = await exactRows(co, '/v1/companies/{company}/usage', { from: w.from.toISOString(), to: w.to.toISOString(), group_by: 'property:model', denomination: 'tokens' });
        expect(tokens).toEqual(bruteForceOf(events, { from: w.from, to: w.to, granularity: 'day', property: 'model', denomination: 'tokens' }));
        out.push(tokens);
      }
      return out;
    };
    const propertyRows = async () => Number((await query<{ n: string }>(t.database.db, sql`select count(*) as n from usage_hourly_properties where company_id = ${co.company.id}`))[0].n);

    // Undeclared: from the events.
    expect(await propertyRows()).toBe(0);
    const fromEvents = await answers();
    expect(fromEvents.flat().length).toBeGreaterThan(50);

    // Declared now: held from the hour the roll-up has reached; older hours still from the events, the same answers.
    const patched = await co.call('PATCH', '/v1/companies/{company}', { body: { usage_properties: ['model', 'region'] } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    expect(patched.body.data.usage_properties).toEqual(['model', 'region']);
    const rolled = (await rolledUsage(t.database.db))!;
    expect(await rolledProperty(t.database.db, co.company.id, 'model')).toMatchObject({ from: rolled.until, until: rolled.until, open: rolled.until });
    expect(await rolledProperty(t.database.db, co.company.id, 'tier')).toBeNull();
    expect(await answers()).toEqual(fromEvents);

    // The worker fills the history, newest week first, and then keeps up hour by hour.
    await rollUpUsage(t.database.db, now());
    const filled = (await rolledProperty(t.database.db, co.company.id, 'model'))!;
    expect(filled.from).toBe(rolled.from);
    expect(filled.from).toBeLessThan(start);
    expect(await propertyRows()).toBeGreaterThan(0);
    expect(await answers()).toEqual(fromEvents);

    // The closed hours are read from the roll-up: changing a row there changes the answer.
    await query(t.database.db, sql`update usage_hourly_properties set events = events + 1000 where company_id = ${co.company.id} and account_id = '' and property = 'model'`);
    const marked = await exactRows(co, '/v1/companies/{company}/usage', { from: windows[0].from.toISOString(), to: windows[0].to.toISOString(), group_by: 'property:model' });
    expect(marked.reduce((n, r) => n + r.events, 0)).toBeGreaterThan(fromEvents[0].reduce((n, r) => n + r.events, 0) + 999);
    await recountUsage(t.database.db, new Date(rolled.from), new Date((await rolledUsage(t.database.db))!.until));
    expect(await answers()).toEqual(fromEvents);

    // More events after declaring, rolled up hour by hour as the clock moves.
    for (let i = 0; i < 6; i++) {
      const r = await spend(co, pick(accounts), '0.5', { type: 'chat' });
      await describeEvent(r.body.data.id, { model: pick(['small', 'large']), region: 'eu' }, { input: '1.5' });
      await recent(`declared, event ${i}`);
      if (i % 2) {
        const w = { from: new Date(start), to: new Date(Math.floor(now().getTime() / HOUR) * HOUR + HOUR) };
        const params = { from: w.from.toISOString(), to: w.to.toISOString(), granularity: 'hour', group_by: 'property:model' };
        expect(await exactRows(co, '/v1/companies/{company}/usage', params), `seed ${seed} declared, event ${i}`).toEqual(await bruteForce(co.company.id, { ...w, granularity: 'hour', property: 'model' }));
      }
      await advance(Math.floor(rnd() * 3600) + 6 * 60);
    }
    await advance(3 * 3600);
    windows[0].to = new Date(now().getTime() + HOUR);
    const later = await answers();

    // Taken back: its rows are dropped and the answers come from the events again, the same.
    const back = await co.call('PATCH', '/v1/companies/{company}', { body: { usage_properties: ['region'] } });
    expect(back.body.data.usage_properties).toEqual(['region']);
    expect(await rolledProperty(t.database.db, co.company.id, 'model')).toBeNull();
    expect(Number((await query<{ n: string }>(t.database.db, sql`select count(*) as n from usage_hourly_properties where company_id = ${co.company.id} and property = 'model'`))[0].n)).toBe(0);
    expect(await answers()).toEqual(later);
  });

  it('is set by PATCH /v1/companies/{company_id}: bad lists are 400 naming usage_properties, and nothing is changed', async () => {
    const co = await newCompany(t);
    expect((await co.call('PATCH', '/v1/companies/{company}', { body: { usage_properties: ['model'] } })).status).toBe(200);
    const cases: [unknown, string][] = [
      ['model', 'usage_properties'],
      [['a', 'b', 'c', 'd', 'e', 'f'], 'usage_properties'],
      [['model', 'model'], 'usage_properties[1]'],
      [[''], 'usage_properties[0]'],
      [['x'.repeat(101)], 'usage_properties[0]'],
      [[7], 'usage_properties[0]'],
      [null, 'usage_properties'],
    ];
    for (const [value, param] of cases) {
      const r = await co.call('PATCH', '/v1/companies/{company}', { body: { usage_properties: value } });
      expect(r.status, JSON.stringify(value)).toBe(400);
      expect(r.body.error, JSON.stringify(value)).toMatchObject({ type: 'invalid_request', param });
      expect(r.body.error.message.length).toBeGreaterThan(10);
    }
    const [mine] = (await co.call('GET', '/v1/companies')).body.data;
    expect(mine.usage_properties).toEqual(['model']);
    expect(await rolledProperty(t.database.db, co.company.id, 'model')).not.toBeNull();
  });
});

describe('the dashboard roll-up (hourly_totals) and long holds', () => {
  it('leaves an hour with a hold still pending out until the hold ends, so its completion is counted in that hour', async () => {
    const co = await newCompany(t);
    const ada = await createAccount(co);
    const start = now();
    const held = (await spend(co, ada, 7, { type: 'chat', state: 'pending' })).body.data.id;
    await query(t.database.db, sql`update events set expires_at = ${new Date(start.getTime() + DAY).toISOString()}::timestamptz where id = ${held}`);
    await advance(5 * 3600);
    await rollUpHours(t.database.db, now());
    expect((await co.call('PUT', `/v1/events/${held}`, { body: { state: 'complete' } })).status).toBe(200);
    await advance(5 * 3600);
    await rollUpHours(t.database.db, now());
    const hour = new Date(Math.floor(start.getTime() / HOUR) * HOUR);
    expect((await rolledHours(t.database.db))!.until).toBeGreaterThan(hour.getTime());
    const rows = await query<{ state: string; count: string | number; total: string | null }>(
      t.database.db,
      sql`select state, count, total::text as total from hourly_totals where company_id = ${co.company.id} and kind = 'event' and hour = ${hour.toISOString()}::timestamptz`,
    );
    expect(rows.map((r) => ({ state: r.state, count: Number(r.count), total: r.total === null ? null : new Decimal(r.total).toFixed() }))).toEqual([{ state: 'complete', count: 1, total: '7' }]);
  });
});
