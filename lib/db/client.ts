import { log } from '../log';
import { setting, testRunnerOnly } from '../env';
import { openPostgres } from './postgres';
import { openEmbedded } from './embedded';
import { DataDirLockedError } from './data-dir-lock';
import type { Database, Db } from './types';

// The process-wide database: PostgreSQL when DATABASE_URL is set, else the embedded one in
// DATA_DIR, opened once. The names the rest of the code needs from lib/db are exported here too;
// each lives in its own file: types.ts (the handle), statements.ts (running SQL), postgres.ts and
// embedded.ts (the two drivers), data-dir-lock.ts, migrations.ts.

export type { Database, Db, DbKind, Schema } from './types';
export { arrayLiteral, compile, isUniqueViolation, NO_JIT, query, runCompiled, sql, textArray, type Compiled } from './statements';
export { openPostgres } from './postgres';
export { isEmbedded, openEmbedded } from './embedded';
export { DataDirLockedError, lockDataDir } from './data-dir-lock';
export { committedMigrations, migrationsFolder, pendingMigrations } from './migrations';


/**
 * `closed`: the process is stopping (closeDatabase ran): the database is not opened again.
 * `companions`: other pools of the process (a read replica's), closed with it.
 */
type Holder = { promise?: Promise<Database>; database?: Database; closed?: boolean; companions?: Database[] };
const holder: Holder = ((globalThis as { __billingDb?: Holder }).__billingDb ??= {});

/** MIGRATE=0: this process leaves migrating to `npm run db:migrate` (readiness then checks they are applied). */
export const migratesAtStart = () => setting('MIGRATE');

/**
 * The process-wide database, opened once (route handlers, pages and instrumentation share it).
 * A failed open is not kept: the next caller tries again (PostgreSQL may come up after us).
 */
export function getDatabase(): Promise<Database> {
  if (holder.closed) return Promise.reject(new Error('The database is closed: this process is stopping.'));
  if (!holder.promise) {
    const url = setting('DATABASE_URL');
    const migrate = migratesAtStart();
    const opening: Promise<Database> = (url ? openPostgres(url, { migrate }) : openEmbedded(setting('DATA_DIR'), { migrate })).then((d) => {
      // Not when the stop closed it while it was opening.
      if (holder.promise === opening) holder.database = d;
      return d;
    });
    holder.promise = opening;
    opening.catch((err) => {
      if (err instanceof DataDirLockedError) {
        log.fatal(err.message);
        process.exit(1);
      }
      if (holder.promise === opening) holder.promise = undefined;
    });
  }
  return holder.promise;
}

/** Closes the process-wide database if it was opened (the stop sequence); it is not opened again in this process. */
export async function closeDatabase(): Promise<void> {
  holder.closed = true;
  const opening = holder.promise;
  holder.promise = undefined;
  holder.database = undefined;
  const database = await opening?.catch(() => null);
  await database?.close();
  for (const companion of holder.companions?.splice(0) ?? []) await companion.close().catch(() => {});
}

/** Closes another pool of this process (a read replica's) when the process-wide database closes. */
export function keepUntilClose(database: Database): void {
  if (holder.closed) {
    void database.close().catch(() => {});
    return;
  }
  (holder.companions ??= []).push(database);
}

export async function getDb(): Promise<Db> {
  return (await getDatabase()).db;
}

/** Lets tests install a database of their choosing as the process-wide one. */
export function setDatabase(database: Database): void {
  holder.database = database;
  holder.promise = Promise.resolve(database);
}

/**
 * Tests only: forgets the process-wide database a test file installed (`setDatabase`; the file
 * closes its own handle) and closes the pools kept until the close (a read replica's), so the next
 * file in the process starts with none, as a new process does. Answers what it found that a file
 * should not leave: the process's database closed for good (`closeDatabase`, a stop).
 */
export async function forgetDatabaseForTests(): Promise<string | null> {
  testRunnerOnly('forgetDatabaseForTests');
  const stopped = holder.closed ? 'the process-wide database was closed for good (closeDatabase): a file that stops the process needs one of its own' : null;
  holder.promise = undefined;
  holder.database = undefined;
  holder.closed = undefined;
  for (const companion of holder.companions?.splice(0) ?? []) await companion.close().catch(() => {});
  return stopped;
}
