import { beforeAll, describe, expect, it } from 'vitest';
import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { newCompany, useTestDatabase } from '../testing/harness';
import { query, sql } from './client';
import * as schema from './schema';
import { now } from '../clock';
import { newId } from '../ids';
import { enqueueJob } from './sql/jobs';

const t = useTestDatabase();

/** Every column typed with a closed list in the schema, with that list. */
const enumColumns = Object.values(schema as Record<string, unknown>)
  .filter((v): v is PgTable => is(v, PgTable))
  .flatMap((table) => {
    const config = getTableConfig(table);
    return config.columns.filter((c) => c.enumValues?.length).map((c) => ({ table: config.name, column: c.name, values: c.enumValues as string[] }));
  });

/** The database error a statement fails with (drizzle wraps the driver's). */
async function failure(run: () => Promise<unknown>): Promise<{ code?: string; constraint?: string } | null> {
  try {
    await run();
    return null;
  } catch (err) {
    let e = err as { code?: string; constraint?: string; constraint_name?: string; cause?: unknown };
    while (e && !e.code && e.cause) e = e.cause as typeof e;
    return { code: e?.code, constraint: e?.constraint ?? e?.constraint_name };
  }
}

class Rollback extends Error {}

/** Sets one row's column to a value inside a transaction that is always rolled back. */
async function trySet(table: string, column: string, value: string) {
  await t.database.db
    .transaction(async (tx) => {
      await query(tx, sql`update ${sql.identifier(table)} set ${sql.identifier(column)} = ${value} where ctid = (select ctid from ${sql.identifier(table)} limit 1)`);
      throw new Rollback();
    })
    .catch((err) => {
      if (!(err instanceof Rollback)) throw err;
    });
}

describe('status columns', () => {
  beforeAll(async () => {
    // One row in every table with a status column, written the way the service writes them.
    const co = await newCompany(t, { password: 'a long enough password 1' });
    const plan = await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Free', charge_amount: 0, balances: [{ denomination: 'tokens', amount: 10 }] } });
    expect(plan.status).toBe(200);
    const account = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'A', email: 'a@checks.test', plan_id: plan.body.data.id } });
    expect(account.status).toBe(200);
    const hook = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: 'http://127.0.0.1:9/hook' } });
    expect((await co.call('POST', `/v1/companies/{company}/webhooks/${hook.body.data.id}/subscribe/negative_balance`)).status).toBe(200);
    const event = await co.call('POST', `/v1/accounts/${account.body.data.id}/events`, {
      body: { type: 'q', cost_override_amount: 25, cost_override_denomination: 'tokens' },
      headers: { 'Idempotency-Key': 'checks-1' },
    });
    expect(event.status).toBe(200);
    await enqueueJob(t.database.db, { kind: 'checks_probe', payload: {}, runAt: now() }, now());
    await t.database.db.insert(schema.signInAttempts).values({ scope: 'email', key: 'a@checks.test', at: now() });
    await t.database.db.insert(schema.spendLimits).values({ accountId: account.body.data.id, denomination: 'tokens', period: 'day', action: 'reject', limitAmount: '100', createdAt: now() });
    await t.database.db.insert(schema.spendCounters).values({ accountId: account.body.data.id, denomination: 'tokens', period: 'day', periodStart: now(), spent: '25' });
    await t.database.db.insert(schema.charges).values({
      id: newId('ch'), companyId: co.company.id, accountId: account.body.data.id, amount: 500, reason: 'deposit', description: 'Deposit', status: 'pending', metadata: {}, createdAt: now(),
    });
  });

  it('are every closed list of the schema', () => {
    const names = enumColumns.map((c) => `${c.table}.${c.column}`);
    expect(names).toEqual(
      expect.arrayContaining(['accounts.plan_status', 'charges.status', 'charges.reason', 'events.state', 'transactions.type', 'jobs.status', 'webhook_deliveries.status', 'webhooks.style']),
    );
  });

  it.each(enumColumns.map((c) => [`${c.table}.${c.column}`, c] as const))('%s refuses a value outside its list and takes every value in it', async (_, { table, column, values }) => {
    const [{ n }] = await query<{ n: number }>(t.database.db, sql`select count(*)::int as n from ${sql.identifier(table)}`);
    expect(n, `a row in ${table}`).toBeGreaterThan(0);

    const refused = await failure(() => trySet(table, column, 'not_a_known_value'));
    expect(refused?.code, 'check_violation').toBe('23514');
    if (refused?.constraint) expect(refused.constraint).toBe(`${table}_${column}_known`);

    // Another constraint (a unique index over the column) may refuse a listed value; the CHECK never does.
    for (const value of values) expect((await failure(() => trySet(table, column, value)))?.code, value).not.toBe('23514');
  });

  it('refuses an unknown status on insert, not only on update', async () => {
    const refused = await failure(() =>
      query(t.database.db, sql`insert into sign_in_attempts (scope, key, at) values ('user', 'a@checks.test', ${now().toISOString()}::timestamptz)`),
    );
    expect(refused?.code).toBe('23514');
  });

  it('types the columns with their lists', () => {
    type Scope = typeof schema.signInAttempts.$inferInsert.scope;
    const scope: Scope = 'address';
    // @ts-expect-error a scope outside the list does not compile
    const unknown: Scope = 'user';
    expect([scope, unknown]).toHaveLength(2);
  });
});
