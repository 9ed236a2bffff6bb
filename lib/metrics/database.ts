import { getDatabase, query, sql, type Database } from '../db/client';
import { now as clockNow } from '../clock';
import { registeredTasks } from '../jobs/worker';
import { log } from '../log';
import { setting } from '../env';
import { readReplicaLag } from '../db/replica';
import { describeHost, parsePostgresUrl } from '../net/postgres-url';
import { metrics } from './registry';

/**
 * The gauges read from the database, computed when Prometheus scrapes: a few aggregate
 * statements over partial indexes of unfinished rows (waiting deliveries, pending charges, due
 * work), each source given SOURCE_TIMEOUT_MS. A source that does not answer in time leaves its
 * gauges out of that scrape (a gap on the graph, not a stale value) and counts a failure.
 */
const SOURCE_TIMEOUT_MS = 2_000;

function withinTimeout<T>(work: Promise<T>, source: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${source} took longer than ${SOURCE_TIMEOUT_MS} ms`)), SOURCE_TIMEOUT_MS);
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

const seconds = (from: Date | string | null | undefined, to: Date): number => (from ? Math.max(0, (to.getTime() - new Date(from).getTime()) / 1000) : 0);

async function readBacklog(database: Database, at: Date): Promise<void> {
  const iso = at.toISOString();
  const [row] = await query<{ due: number | string; scheduled: number | string; sending: number | string; oldest: Date | string | null; charges: number | string; oldest_charge: Date | string | null }>(
    database.db,
    sql`select
        (select count(*) from webhook_deliveries where status = 'pending' and next_attempt_at <= ${iso}::timestamptz) as due,
        (select count(*) from webhook_deliveries where status = 'pending' and next_attempt_at > ${iso}::timestamptz) as scheduled,
        (select count(*) from webhook_deliveries where status = 'sending') as sending,
        (select min(created_at) from webhook_deliveries where status in ('pending', 'sending')) as oldest,
        (select count(*) from charges where status = 'pending') as charges,
        (select min(created_at) from charges where status = 'pending') as oldest_charge`,
  );
  const m = metrics();
  m.webhookBacklog.set({ state: 'due' }, Number(row.due));
  m.webhookBacklog.set({ state: 'scheduled' }, Number(row.scheduled));
  m.webhookBacklog.set({ state: 'sending' }, Number(row.sending));
  m.webhookOldest.set(seconds(row.oldest, at));
  m.chargesPending.set(Number(row.charges));
  m.chargeOldest.set(seconds(row.oldest_charge, at));
}

/** Each task's oldest due work: the earliest time it has work at all (`nextDue` after the epoch), when that is past. */
async function readLag(database: Database, at: Date): Promise<void> {
  const tasks = await registeredTasks();
  const lags = new Map<string, number>();
  for (const task of tasks) {
    if (!task.nextDue) continue;
    const due = await task.nextDue(database.db, new Date(0));
    lags.set(task.name, due && due <= at ? seconds(due, at) : 0);
  }
  for (const [task, lag] of lags) metrics().workerLag.set({ task }, lag);
}

type DriverClient = { options?: { max?: number } };

async function readPool(database: Database): Promise<void> {
  const m = metrics();
  if (database.kind === 'embedded') {
    // PGlite is one connection inside this process, and exposes no count of statements waiting
    // for it: contention shows as request latency, not here.
    m.poolMax.set(1);
    return;
  }
  const client = (database.db as unknown as { session?: { client?: DriverClient } }).session?.client;
  if (client?.options?.max) m.poolMax.set(client.options.max);
  // postgres.js keeps its pool's busy and idle connections to itself: PostgreSQL's own view of
  // every client connection to this database (all processes) is what can be observed.
  const rows = await query<{ state: string | null; n: number | string }>(
    database.db,
    sql`select state, count(*) as n from pg_stat_activity
      where datname = current_database() and backend_type = 'client backend' and pid <> pg_backend_pid()
      group by state`,
  );
  const counts = new Map<string, number>([
    ['active', 0],
    ['idle', 0],
    ['idle_in_transaction', 0],
  ]);
  for (const r of rows) {
    const state = r.state === 'active' ? 'active' : r.state === 'idle' ? 'idle' : r.state?.startsWith('idle in transaction') ? 'idle_in_transaction' : null;
    if (state) counts.set(state, (counts.get(state) ?? 0) + Number(r.n));
  }
  for (const [state, n] of counts) m.dbConnections.set({ state }, n);
}

/** The replica's state and lag, read from the replica itself (a down replica is a reading, not a failure). */
async function readReplica(): Promise<void> {
  const m = metrics();
  m.replicaUp.reset();
  m.replicaLag.reset();
  const url = setting('DATABASE_REPLICA_URL');
  const reading = url ? await readReplicaLag(SOURCE_TIMEOUT_MS - 200) : null;
  if (!url || !reading) return;
  const host = parsePostgresUrl(url).hosts.map(describeHost).join(',');
  m.replicaUp.set({ host }, reading.up ? 1 : 0);
  if (reading.lagSeconds !== null) m.replicaLag.set({ host }, reading.lagSeconds);
}

const SOURCES = {
  replica: () => readReplica(),
  backlog: (d: Database, at: Date) => readBacklog(d, at),
  worker_lag: (d: Database, at: Date) => readLag(d, at),
  pool: (d: Database) => readPool(d),
} as const;

// Every gauge of a scrape asks for the reading at once (prom-client collects them together):
// the first starts it, the others share it.
type Holder = { running?: Promise<void> };
const holder: Holder = ((globalThis as { __billingDbGauges?: Holder }).__billingDbGauges ??= {});

function clear(source: keyof typeof SOURCES): void {
  const m = metrics();
  if (source === 'backlog') for (const g of [m.webhookBacklog, m.webhookOldest, m.chargesPending, m.chargeOldest]) g.reset();
  if (source === 'worker_lag') m.workerLag.reset();
  if (source === 'pool') m.dbConnections.reset();
  if (source === 'replica') {
    m.replicaUp.reset();
    m.replicaLag.reset();
  }
}

function fail(source: keyof typeof SOURCES, err: unknown): void {
  clear(source);
  metrics().collectFailures.inc({ source });
  log.warn({ source, err }, `metrics: ${source} could not be read; left out of this scrape`);
}

async function readAll(): Promise<void> {
  let database: Database;
  try {
    database = await withinTimeout(getDatabase(), 'opening the database');
  } catch (err) {
    for (const source of Object.keys(SOURCES) as (keyof typeof SOURCES)[]) fail(source, err);
    return;
  }
  const at = clockNow();
  for (const [source, read] of Object.entries(SOURCES) as [keyof typeof SOURCES, (d: Database, at: Date) => Promise<void>][]) {
    try {
      await withinTimeout(read(database, at), source);
    } catch (err) {
      fail(source, err);
    }
  }
}

/** Reads every database gauge for this scrape. */
export function readDatabaseGauges(): Promise<void> {
  holder.running ??= readAll().finally(() => {
    holder.running = undefined;
  });
  return holder.running;
}
