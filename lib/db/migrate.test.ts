import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { committedMigrations, openEmbedded, openPostgres, pendingMigrations, query, sql, type Database, type Db } from './client';
import { useTestDatabase } from '../testing/harness';
import { databaseUrl } from '../testing/templates';

// Every other test file starts from a copy of a database migrated once per run (lib/testing/templates.ts):
// here the committed migrations run from nothing, and give what the copies hold.
const t = useTestDatabase();

/** The schema as PostgreSQL describes it: tables, columns and their types, indexes, constraints. */
async function schemaOf(db: Db) {
  const columns = await query(
    db,
    sql`select table_schema, table_name, column_name, data_type, is_nullable, column_default from information_schema.columns
      where table_schema in ('public', 'drizzle') order by 1, 2, 3`,
  );
  const indexes = await query(db, sql`select schemaname, tablename, indexname, indexdef from pg_indexes where schemaname in ('public', 'drizzle') order by 1, 2, 3`);
  const constraints = await query(
    db,
    sql`select conrelid::regclass::text as rel, conname, pg_get_constraintdef(oid) as def from pg_constraint
      where connamespace in ('public'::regnamespace, 'drizzle'::regnamespace) order by 1, 2`,
  );
  const applied = await query(db, sql`select hash, created_at::text from drizzle.__drizzle_migrations order by created_at`);
  return { columns, indexes, constraints, applied };
}

describe('migrating a database from nothing', () => {
  it('applies every committed migration once and leaves the schema the test databases are copied from', async () => {
    let fresh: Database[];
    if (t.kind === 'postgres') {
      const name = `m_${randomBytes(6).toString('hex')}`;
      const admin = await openPostgres(inject('postgresAdminUrl'), { max: 1, migrate: false });
      await admin.db.execute(sql.raw(`create database ${name}`));
      await admin.close();
      // Three processes starting together (through the pooler in the pgbouncer project): one
      // migrates under the advisory lock, the others wait for it and find nothing left to do.
      const url = databaseUrl(inject('postgresUrl'), name);
      fresh = await Promise.all([0, 1, 2].map(() => openPostgres(url, { max: 2 })));
    } else {
      fresh = [await openEmbedded(null)];
    }
    try {
      for (const d of fresh) expect(await pendingMigrations(d.db)).toEqual([]);
      const migrated = await schemaOf(fresh[0].db);
      expect(migrated.applied).toHaveLength(committedMigrations().length);
      expect(migrated.columns.length).toBeGreaterThan(100);
      expect(await schemaOf(t.database.db)).toEqual(migrated);
    } finally {
      for (const d of fresh) await d.close();
    }
  });
});
