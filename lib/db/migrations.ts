import fs from 'node:fs';
import path from 'node:path';
import { query, sql } from './statements';
import type { Db } from './types';

/** The committed migrations: `drizzle/` beside the server (the repository, or /app in the image). */
export const migrationsFolder = path.join(process.cwd(), 'drizzle');

type JournalEntry = { idx: number; when: number; tag: string };
let journal: JournalEntry[] | undefined;

/** The committed migrations, oldest first (drizzle/meta/_journal.json). */
export function committedMigrations(): JournalEntry[] {
  journal ??= (JSON.parse(fs.readFileSync(path.join(migrationsFolder, 'meta', '_journal.json'), 'utf8')) as { entries: JournalEntry[] }).entries;
  return journal;
}

/**
 * The committed migrations this database has not applied yet. drizzle applies, in order, every
 * migration newer than the newest one it recorded, so the same rule tells what it would apply.
 */
export async function pendingMigrations(db: Db): Promise<JournalEntry[]> {
  const [{ exists }] = await query<{ exists: boolean }>(db, sql`select to_regclass('drizzle.__drizzle_migrations') is not null as exists`);
  let latest = -Infinity;
  if (exists) {
    const [row] = await query<{ latest: string | number | null }>(db, sql`select max(created_at) as latest from drizzle.__drizzle_migrations`);
    if (row?.latest !== null && row?.latest !== undefined) latest = Number(row.latest);
  }
  return committedMigrations().filter((m) => m.when > latest);
}
