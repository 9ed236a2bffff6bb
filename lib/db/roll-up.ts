import { NO_JIT, query, sql, type Db } from './client';

export const HOUR_MS = 3600_000;
/**
 * An hour's numbers stop changing once its pending holds have ended and its charges have
 * settled: two hours after it ends it is closed, unless a hold made in it is still pending.
 */
export const SETTLE_MS = 2 * HOUR_MS;
/**
 * Hours per transaction: a backlog (a first start on a database with history, a worker stopped
 * for days) drains a week at a time, about 0.8 million events per transaction at 10 million
 * events in 90 days.
 */
export const HOURS_PER_RUN = 7 * 24;

/** The closed hours a roll-up table holds: [from, until), hour-aligned epoch ms. */
export type RolledRange = { from: number; until: number };

/**
 * What a mark in settings says, epoch ms: the closed hours [from, until) its table holds; for a
 * table that also counts the hours after them provisionally, [until, open) (open is until when
 * nothing is provisional); and `rev`, which changes with every write.
 */
export type Mark = RolledRange & { open: number; rev: number };

/** What a roll-up table holds, from its mark in settings (null before its first run). */
export async function readMark(db: Db, mark: string): Promise<Mark | null> {
  const [row] = await query<{ value: (Partial<RolledRange> & { open?: number; rev?: number }) | null }>(db, sql`select value from settings where key = ${mark}`);
  const v = row?.value;
  if (!v || v.from === undefined || v.until === undefined) return null;
  return { from: v.from, until: v.until, open: openOf({ until: v.until, open: v.open }), rev: v.rev ?? 0 };
}

/** Where a mark's provisional hours end: its `open`, or `until` when nothing is provisional. */
export function openOf(mark: { until: number; open?: unknown }): number {
  return Math.max(mark.until, typeof mark.open === 'number' ? mark.open : mark.until);
}

/**
 * Takes the mark's row lock for the rest of the transaction (made when missing) and returns what
 * it holds: a roll-up and anything that changes what a roll-up counts take it, one at a time.
 * The rest of the transaction runs without PostgreSQL's JIT compiler (`NO_JIT`): a roll-up's
 * statement is estimated above `jit_above_cost`, and with the compiler a count of the last three
 * hours (100,000 events) took 9.5–9.8 s against 1.1–1.5 s without it (bench/README.md).
 */
export async function lockMark(tx: Db, mark: string): Promise<Partial<RolledRange> & { rev?: number; [more: string]: unknown }> {
  await query(tx, sql`insert into settings (key, value) values (${mark}, '{}'::jsonb) on conflict (key) do nothing`);
  const [row] = await query<{ value: Partial<RolledRange> & { rev?: number } }>(tx, sql`select value, ${NO_JIT} from settings where key = ${mark} for update`);
  return row.value;
}

/**
 * Writes a mark (under lockMark's lock), counting the write in `rev`: a read that saw the same
 * `rev` before and after reading a table saw the rows that mark describes.
 */
export async function writeMark(tx: Db, mark: string, value: Partial<RolledRange> & { rev?: number; [more: string]: unknown }): Promise<void> {
  await query(tx, sql`update settings set value = ${JSON.stringify({ ...value, rev: (value.rev ?? 0) + 1 })}::jsonb where key = ${mark}`);
}

/**
 * How long after the time a request read from the clock its transaction may still commit: an
 * event is written at its request's time, so one committed later than this after that time is
 * missed by a provisional count that had already counted past it (until its hour's final count);
 * and a hold's completion begun just before the hold expired may commit this long after.
 */
export const COMMIT_LAG_MS = 2 * 60_000;

/** The hour before which every hour has closed at `now`, by time alone. */
export const settledBefore = (now: Date) => Math.floor((now.getTime() - SETTLE_MS) / HOUR_MS) * HOUR_MS;

/**
 * The same (`before`), held back to the hour of the oldest hold still live (`held`, when it was
 * made, or null): its event may yet complete and count in that hour, however long ago it was (a
 * hold may last a week). A hold past its expiry reads as cancelled and can no longer complete,
 * swept or not.
 */
export async function closedBefore(db: Db, now: Date): Promise<{ before: number; held: number | null }> {
  const settled = settledBefore(now);
  // A hold expired less than COMMIT_LAG_MS ago may yet be completed by a request that read the
  // clock before its expiry and has not committed: it counts as live.
  const held = await oldestLiveHold(db, new Date(now.getTime() - COMMIT_LAG_MS));
  return { before: held === null ? settled : Math.min(settled, Math.floor(held / HOUR_MS) * HOUR_MS), held };
}

/** When the oldest hold still live at `now` was made (epoch ms), or null when none is. */
async function oldestLiveHold(db: Db, now: Date): Promise<number | null> {
  const [held] = await query<{ at: string | Date | null }>(
    db,
    sql`select min(created_at) as at from events where state = 'pending' and expires_at > ${now.toISOString()}::timestamptz`,
  );
  return held?.at ? new Date(held.at).getTime() : null;
}

export type RollUp = {
  /** The settings key of the table's mark. */
  mark: string;
  /** The first hour a run counts: after the mark, or where a table without one begins. */
  start: (tx: Db, mark: Partial<RolledRange>, closedBefore: number) => Promise<number>;
  /** Counts [from, to) again, replacing what the table held for those hours. */
  recount: (tx: Db, from: Date, to: Date) => Promise<void>;
};

/**
 * The worker's task for a roll-up table: adds the hours closed since the last run, a week at most
 * in each transaction with the mark that says how far the table reaches. Returns the hours added.
 */
export async function rollUp(db: Db, spec: RollUp, now: Date, opts: { stopping?: () => boolean } = {}): Promise<number> {
  let hours = 0;
  for (;;) {
    const added = await rollUpOnce(db, spec, now);
    hours += added;
    if (!added || opts.stopping?.()) return hours;
  }
}

/** When the next hour closes that the table does not hold yet (null before the first roll-up). */
export async function nextRollUpOf(db: Db, mark: string): Promise<Date | null> {
  const known = await readMark(db, mark);
  return known ? new Date(known.until + HOUR_MS + SETTLE_MS) : null;
}

async function rollUpOnce(db: Db, spec: RollUp, now: Date): Promise<number> {
  // Most runs find no newly closed hour: one read, no transaction.
  const known = await readMark(db, spec.mark);
  if (known && known.until >= settledBefore(now)) return 0;
  return db.transaction(async (tx) => {
    const mark = await lockMark(tx, spec.mark);
    const { before: closed } = await closedBefore(tx, now);
    const start = await spec.start(tx, mark, closed);
    const end = Math.min(start + HOURS_PER_RUN * HOUR_MS, closed);
    if (end <= start && mark.until !== undefined) return 0;
    if (end > start) await spec.recount(tx, new Date(start), new Date(end));
    // Hours skipped (a worker stopped for longer than a table keeps) break the range: it starts again here.
    const from = mark.from !== undefined && mark.until === start ? mark.from : start;
    await writeMark(tx, spec.mark, { ...mark, from, until: Math.max(end, start) });
    return Math.max(0, (end - start) / HOUR_MS);
  });
}
