import { performance } from 'node:perf_hooks';
import { isEmbedded, query, sql, type Db } from './client';
import { log } from '../log';

/**
 * The embedded database's autovacuum. PostgreSQL's own runs in background processes, which the
 * embedded database (PGlite: PostgreSQL as one process) does not have: there, old row versions
 * stayed until vacuumed, which was never (each batch of events left a dead version of every
 * balance it moved), so the balances table grew with every event recorded and each scan of it
 * read them all; and the planner never learnt any table's size. The worker does it instead,
 * every ten minutes of real time: VACUUM makes the dead versions' space reusable, ANALYZE
 * refreshes the statistics. PostgreSQL is left to its autovacuum.
 */
export const VACUUM_EVERY_MS = 10 * 60_000;

// Per database handle, when it was last vacuumed (or first seen: the first run comes ten
// minutes later, not at once). Process-wide: the worker's and the tests' module instances share it.
const lastRun: WeakMap<object, number> = ((globalThis as { __billingVacuum?: WeakMap<object, number> }).__billingVacuum ??= new WeakMap());

/** A worker task: VACUUM (ANALYZE) of the embedded database when ten minutes have passed since the last. */
export async function vacuumEmbedded(db: Db, _now: Date, opts: { force?: boolean; stopping?: () => boolean } = {}): Promise<number> {
  if (!isEmbedded(db)) return 0;
  const started = performance.now();
  const last = lastRun.get(db);
  if (last === undefined) lastRun.set(db, started);
  if (!opts.force && (last === undefined || started - last < VACUUM_EVERY_MS)) return 0;
  lastRun.set(db, started);
  try {
    // Table by table: the database has one connection, and requests wait for each statement.
    const tables = await query<{ name: string }>(db, sql`select quote_ident(relname) as name from pg_stat_user_tables where schemaname = 'public' order by relname`);
    // A process that is shutting down stops between tables; the next process vacuums again.
    for (const { name } of tables) {
      if (opts.stopping?.()) break;
      await db.execute(sql.raw(`vacuum (analyze) ${name}`));
    }
    log.info({ tables: tables.length, duration_ms: Math.round(performance.now() - started) }, 'embedded database vacuumed and analyzed');
  } catch (err) {
    log.warn({ err }, 'vacuuming the embedded database failed; the next run tries again');
  }
  // Upkeep, not work that was due: the worker does not run it again at once.
  return 0;
}
