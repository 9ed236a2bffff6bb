import { is } from 'drizzle-orm';
import { getTableConfig, PgTable } from 'drizzle-orm/pg-core';
import { query, sql, type Db } from '../db/client';
import * as schema from '../db/schema';

/**
 * Every table of the schema as `rows:md5 of its rows in order`: two fingerprints are equal
 * exactly when nothing in the database was written between them (tests of what must store
 * nothing).
 */
export async function databaseFingerprint(db: Db): Promise<Record<string, string>> {
  const tables = (Object.values(schema) as unknown[]).filter((x): x is PgTable => is(x, PgTable)).map((x) => getTableConfig(x).name);
  const rows = await query<{ k: string; v: string }>(
    db,
    sql.raw(tables.map((n) => `select '${n}' as k, count(*)::text || ':' || coalesce(md5(string_agg(t::text, '|' order by t::text)), '') as v from "${n}" t`).join(' union all ')),
  );
  return Object.fromEntries(rows.map((r) => [r.k, r.v]));
}
