import { performance } from 'node:perf_hooks';
import { isEmbedded, sql, type Db } from './client';
import { log } from '../log';

/**
 * The embedded database's autovacuum. PostgreSQL's own runs in background processes, which the
 * embedded database (PGlite: PostgreSQL as one process) does not have: there, every update left
 * its old row version behind for good (a balance moved by a batch of 1000 events a thousand
 * times), so the balances table grew with every event ever recorded and each scan of it read
 * them all, and the planner never learnt any table's size. The worker does it instead, every
 * ten minutes of real time: VACUUM makes the dead versions' space reusable, ANALYZE refreshes
 * the statistics. PostgreSQL is left to its autovacuum.
 */
export const VACUUM_EVERY_MS = 10 * 60_000;

type State = { last: number };
// Process-wide: the worker's and the tests' module instances share one schedule. The first run
// comes ten minutes after the process started, not at once.
const state: State = ((globalThis as { __billingVacuum?: State }).__billingVacuum ??= { last: performance.now() });

/** A worker task: VACUUM (ANALYZE) of the embedded database when ten minutes have passed since the last. */
export async function vacuumEmbedded(db: Db, _now: Date, opts: { force?: boolean } = {}): Promise<number> {
  if (!isEmbedded(db)) return 0;
  const started = performance.now();
  if (!opts.force && started - state.last < VACUUM_EVERY_MS) return 0;
  state.last = started;
  await db.execute(sql.raw('vacuum (analyze)'));
  log.info({ duration_ms: Math.round(performance.now() - started) }, 'embedded database vacuumed and analyzed');
  // Upkeep, not work that was due: the worker does not run it again at once.
  return 0;
}
