import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { balance, createAccount, createPlan } from '../../testing/scenario';
import { openPostgres, query, sql, type Database } from '../../db/client';
import { setting } from '../../env';
import { recordEvents } from './events';

const t = useTestDatabase();

// A batch's statements over arrays are prepared like every other, but planned for each call's
// sizes: a kept generic plan assumes ten elements per array, and for a 1000-event batch it chose
// nested loops several times slower (bench/README.md). PostgreSQL only: the embedded database
// never names a statement over arrays (lib/db/pglite-thread.test.ts).
describe.skipIf(process.env.TEST_DB !== 'postgres' || !setting('DATABASE_PREPARE'))('the plans of a batch of events', () => {
  let one: Database;
  beforeAll(async () => {
    // One connection, so the statements it prepared are the ones pg_prepared_statements shows.
    one = await openPostgres(t.url!, { max: 1, migrate: false });
  });
  afterAll(() => one?.close());

  it('plans the balance statement for each batch, even where the connection would keep generic plans', async () => {
    const co = await newCompany(t);
    const plan = await createPlan(co, { name: 'Metered', charge_amount: 0, balances: [{ amount: 1000, denomination: 'credits' }], billing_rules: [{ type: 'call', amount: '1', denomination: 'credits' }] });
    const accounts: string[] = [];
    for (let i = 0; i < 3; i++) accounts.push(await createAccount(co, { name: `A${i}`, email: `a${i}@x.io`, plan_id: plan.id }));
    // Left to itself this connection would run every statement on its generic plan.
    await query(one.db, sql`select set_config('plan_cache_mode', 'force_generic_plan', false)`);
    for (let b = 0; b < 7; b++) {
      const items = accounts.flatMap((account_id) => [{ account_id, type: 'call' }, { account_id, type: 'call' }]);
      const recorded = await recordEvents({ db: one.db, companyId: co.company.id, items, now: new Date() });
      expect(recorded.map((e) => e.state)).toEqual(Array(6).fill('complete'));
    }
    const plans = await query<{ generic_plans: string; custom_plans: string }>(
      one.db,
      sql`select generic_plans::text, custom_plans::text from pg_prepared_statements where statement like ${'with locked as materialized%'} and statement like ${'%insert into transactions%'}`,
    );
    expect(plans).toEqual([{ generic_plans: '0', custom_plans: '7' }]);
    // And the batches moved the balances exactly: 1000 less two per batch, 7 batches.
    for (const account of accounts) expect((await balance(co, account)).amount).toBe(1000 - 14);
  });
});
