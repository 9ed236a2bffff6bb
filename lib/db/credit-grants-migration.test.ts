import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { committedMigrations, openEmbedded, openPostgres, query, sql, type Database, type Db } from './client';
import { useTestDatabase } from '../testing/harness';
import { databaseUrl } from '../testing/templates';

// A database with balances in it, migrated to the credit grants: every balance's units become a
// grant, and no amount changes.
const t = useTestDatabase();

const GRANTS = '0028_credit_grants';

async function emptyDatabase(): Promise<Database> {
  if (t.kind !== 'postgres') return openEmbedded(null, { migrate: false });
  const name = `g_${randomBytes(6).toString('hex')}`;
  const admin = await openPostgres(inject('postgresAdminUrl'), { max: 1, migrate: false });
  await admin.db.execute(sql.raw(`create database ${name}`));
  await admin.close();
  return openPostgres(databaseUrl(inject('postgresUrl'), name), { max: 1, migrate: false });
}

/** Runs one committed migration's statements, as the migrator does. */
async function apply(db: Db, tag: string) {
  const text = fs.readFileSync(path.join(process.cwd(), 'drizzle', `${tag}.sql`), 'utf8');
  for (const statement of text.split('--> statement-breakpoint')) if (statement.trim()) await db.execute(sql.raw(statement));
}

describe('the credit grants migration on a database with balances', () => {
  it('turns each balance into a grant without changing any amount: a plan balance an allowance ending with its period, any other paid units that never expire', async () => {
    const database = await emptyDatabase();
    const db = database.db;
    try {
      const tags = committedMigrations().map((m) => m.tag);
      expect(tags).toContain(GRANTS);
      for (const tag of tags.slice(0, tags.indexOf(GRANTS))) await apply(db, tag);
      const at = '2027-03-10T12:00:00Z';
      const renewal = '2027-04-10T12:00:00Z';
      await db.execute(sql`insert into companies (id, name, email, created_at) values ('c_1', 'Co', 'co@x.io', ${at})`);
      await db.execute(sql`insert into plans (id, company_id, name, charge_amount, charge_denomination, billing_period, overage_charge_mode, balances, billing_rules, flags, metadata, created_at)
        values ('p_paid', 'c_1', 'Pro', 2000, 'USD', 'month', 'none', '[]', '[]', '{}', '{}', ${at}), ('p_free', 'c_1', 'Free', 0, 'USD', 'month', 'none', '[]', '[]', '{}', '{}', ${at})`);
      await db.execute(sql`insert into accounts (id, company_id, name, email, metadata, flags, created_at, plan_id, plan_status, last_plan_renewal, next_plan_renewal, plan_charge_amount)
        values ('a_pro', 'c_1', 'A', 'a@x.io', '{}', '[]', ${at}, 'p_paid', 'ACTIVE', ${at}, ${renewal}, 2000),
               ('a_free', 'c_1', 'B', 'b@x.io', '{}', '[]', ${at}, 'p_free', 'ACTIVE', ${at}, ${renewal}, 0),
               ('a_none', 'c_1', 'C', 'c@x.io', '{}', '[]', ${at}, null, 'NONE', null, null, null)`);
      await db.execute(sql`insert into balances (id, account_id, company_id, denomination, amount, managed_by_plan_id, included_amount, created_at) values
        ('b_pro', 'a_pro', 'c_1', 'tokens', 40.25, 'p_paid', 100, ${at}),
        ('b_free', 'a_free', 'c_1', 'tokens', 7, 'p_free', 10, ${at}),
        ('b_credits', 'a_none', 'c_1', 'credits', 125.5, null, null, ${at}),
        ('b_debt', 'a_none', 'c_1', 'minutes', -7, null, null, ${at}),
        ('b_zero', 'a_pro', 'c_1', 'gb', 0, null, null, ${at})`);
      const before = await query<{ id: string; amount: string }>(db, sql`select id, amount::text from balances order by id`);

      await apply(db, GRANTS);

      expect(await query<{ id: string; amount: string }>(db, sql`select id, amount::text from balances order by id`)).toEqual(before);
      const grants = await query<Record<string, unknown>>(
        db,
        sql`select balance_id, amount::text, remaining::text, category, source, priority, expires_at, active, closed_at from credit_grants order by balance_id`,
      );
      expect(grants.map((g) => [g.balance_id, g.amount, g.remaining, g.category, g.source, g.priority, g.expires_at && new Date(g.expires_at as string).toISOString(), g.active, g.closed_at])).toEqual([
        ['b_credits', '125.5', '125.5', 'paid', 'grant', 50, null, true, null],
        ['b_free', '7', '7', 'promotional', 'plan', 50, new Date(renewal).toISOString(), true, null],
        ['b_pro', '40.25', '40.25', 'paid', 'plan', 50, new Date(renewal).toISOString(), true, null],
      ]);
      // The head of each balance is its one grant; the plan's allowances are due at the renewal.
      const heads = await query<{ id: string; head_remaining: string | null; due: string | null; grant_ok: boolean }>(
        db,
        sql`select b.id, b.head_remaining::text, b.grants_due_at::text as due, b.head_grant_id is not distinct from (select g.id from credit_grants g where g.balance_id = b.id) as grant_ok from balances b order by b.id`,
      );
      expect(heads.map((h) => [h.id, h.head_remaining, h.due !== null, h.grant_ok])).toEqual([
        ['b_credits', '125.5', false, true],
        ['b_debt', null, false, true],
        ['b_free', '7', true, true],
        ['b_pro', '40.25', true, true],
        ['b_zero', null, false, true],
      ]);
    } finally {
      await database.close();
    }
  });
});
