import { setting, testRunnerOnly } from '../env';
import { log } from '../log';
import { getDb, keepUntilClose, openPostgres, query, sql, type Database, type Db } from './client';
import { isDatabaseUnavailable, unavailableReason } from './unavailable';

/**
 * `DATABASE_REPLICA_URL`: a standby (or several hosts, e.g. `target_session_attrs=prefer-standby`)
 * for reads that may lag a little behind the primary: the console's lists and charts, CSV
 * exports, the event (usage) list of the API. Never for a gate, a balance the API answers, or
 * anything that decides money: those read the primary (`getDb`). While the replica does not
 * answer, these reads go to the primary; the switch is logged once each way.
 */

/** How often the replica's health is looked at again, at most (a read that finds it older asks first). */
const CHECK_EVERY_MS = 2_000;
const CHECK_TIMEOUT_MS = 1_500;

type State = {
  url?: string;
  database?: Promise<Database>;
  up: boolean;
  checkedAt: number;
  checking?: Promise<void>;
  /** Why it was last found down, for the log line and the metrics. */
  reason?: string;
};
const state: State = ((globalThis as { __billingReplica?: State }).__billingReplica ??= { up: true, checkedAt: 0 });

/**
 * Tests only: no replica opened or checked yet, as in a new process (its pool is closed with the
 * process-wide database's, `forgetDatabaseForTests`).
 */
export function forgetReplicaForTests(): void {
  testRunnerOnly('forgetReplicaForTests');
  Object.assign(state, { url: undefined, database: undefined, checking: undefined, reason: undefined, up: true, checkedAt: 0 });
}

/** True when DATABASE_REPLICA_URL is set. */
export function replicaConfigured(): boolean {
  return Boolean(setting('DATABASE_REPLICA_URL'));
}

/** The replica's pool, opened on first use (it connects when it first runs a statement). */
function replica(): Promise<Database> | null {
  const url = setting('DATABASE_REPLICA_URL');
  if (!url) return null;
  if (state.url !== url || !state.database) {
    state.url = url;
    state.up = true;
    state.checkedAt = 0;
    const opening = openPostgres(url, { migrate: false, label: 'DATABASE_REPLICA_URL' }).then((d) => {
      keepUntilClose(d);
      return d;
    });
    state.database = opening;
    opening.catch(() => {
      if (state.database === opening) state.database = undefined;
    });
  }
  return state.database;
}

function markDown(err: unknown): void {
  const reason = isDatabaseUnavailable(err) ? unavailableReason(err) : `${(err as { code?: string })?.code ?? 'error'}: ${String((err as Error)?.message ?? err).slice(0, 300)}`;
  state.checkedAt = Date.now();
  state.reason = reason;
  if (!state.up) return;
  state.up = false;
  log.warn({ reason }, 'DATABASE_REPLICA_URL does not answer: reads that may lag go to the primary until it does');
}

function markUp(): void {
  state.checkedAt = Date.now();
  state.reason = undefined;
  if (state.up) return;
  state.up = true;
  log.info('DATABASE_REPLICA_URL answers again: reads that may lag go to it');
}

function withinTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(Object.assign(new Error(`no answer within ${ms} ms`), { code: 'ETIMEDOUT' })), ms);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Asks the replica for `select 1`; the outcome decides where reads go until the next check. */
async function check(opening: Promise<Database>): Promise<void> {
  state.checking ??= (async () => {
    try {
      const database = await opening;
      await withinTimeout(query(database.db, sql`select 1`), CHECK_TIMEOUT_MS);
      markUp();
    } catch (err) {
      markDown(err);
    } finally {
      state.checking = undefined;
    }
  })();
  return state.checking;
}

/**
 * The handle for reads that may lag: the replica's while it answers, otherwise (or without
 * DATABASE_REPLICA_URL) the primary's.
 */
export async function getReadDb(): Promise<Db> {
  const opening = replica();
  if (!opening) return getDb();
  if (Date.now() - state.checkedAt > CHECK_EVERY_MS) await check(opening);
  if (!state.up) return getDb();
  try {
    return (await opening).db;
  } catch (err) {
    markDown(err);
    return getDb();
  }
}

/**
 * Runs a read that may lag on the replica, and again on the primary if the replica goes away
 * under it (so the caller never sees the replica's failure).
 */
export async function readOnReplica<T>(work: (db: Db) => Promise<T>): Promise<T> {
  const db = await getReadDb();
  const primary = await getDb();
  if (db === primary) return work(db);
  try {
    return await work(db);
  } catch (err) {
    if (!isDatabaseUnavailable(err)) throw err;
    markDown(err);
    return work(primary);
  }
}

export type ReplicaReading = { up: boolean; lagSeconds: number | null; standby: boolean | null };

/**
 * For /metrics: whether reads go to the replica, and how far its replay is behind (0 when it has
 * replayed all it received, or when the host answering is a primary). Null without a replica.
 */
export async function readReplicaLag(timeoutMs: number): Promise<ReplicaReading | null> {
  const opening = replica();
  if (!opening) return null;
  try {
    const database = await withinTimeout(opening, timeoutMs);
    const [row] = await withinTimeout(
      query<{ standby: boolean; lag: string | number | null }>(
        database.db,
        sql`select pg_is_in_recovery() as standby,
          case when not pg_is_in_recovery() then 0
               when pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() then 0
               -- Nothing replayed since it started: its last replayed commit is older than its start.
               else extract(epoch from now() - coalesce(pg_last_xact_replay_timestamp(), pg_postmaster_start_time())) end as lag`,
      ),
      timeoutMs,
    );
    markUp();
    return { up: true, standby: row.standby, lagSeconds: row.lag === null ? null : Math.max(0, Number(row.lag)) };
  } catch (err) {
    if (isDatabaseUnavailable(err) || (err as { code?: string }).code === 'ETIMEDOUT') markDown(err);
    return { up: false, standby: null, lagSeconds: null };
  }
}
