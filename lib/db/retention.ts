import { query, sql, type Db } from './client';
import { setting } from '../env';

/**
 * Retention: what the service keeps only for a while is deleted by the worker, in batches of
 * BATCH rows, each batch its own short statement, so no table is locked for long and deletes
 * interleave with the traffic. A task handles one batch per run and reports how many rows went;
 * the worker runs it again at once while it found some (lib/jobs/worker.ts), so a backlog drains
 * batch by batch. Each batch is chosen through an index that holds only rows of the kind that
 * may go, and every condition is checked again on the row as it is deleted, so a row that came
 * back into use meanwhile (a key taken over by a retry, a delivery sent again by hand) stays.
 * Events and the ledger (transactions) are the money record: never deleted.
 */
export const BATCH = 500;
const DAY_MS = 24 * 60 * 60 * 1000;
/** A stored idempotent answer is replayed for 24 hours, then deleted. */
export const IDEMPOTENCY_TTL_MS = DAY_MS;
/** A key still `running` this long after its request began belongs to a process that died mid-request. */
export const ABANDONED_KEY_MS = 7 * DAY_MS;
export const FINISHED_JOB_MS = 7 * DAY_MS;

const iso = (now: Date, ageMs: number) => new Date(now.getTime() - ageMs).toISOString();

async function counted(db: Db, statement: ReturnType<typeof sql>): Promise<number> {
  const [row] = await query<{ n: number | string }>(db, statement);
  return Number(row?.n ?? 0);
}

/**
 * Idempotency keys whose 24 hours are over: they hold whole responses. A key whose request is
 * still running is kept (the request stores its answer in it when it ends), unless it has been
 * running for a week, which no request does.
 */
export async function purgeIdempotencyKeys(db: Db, now: Date): Promise<number> {
  const expired = iso(now, IDEMPOTENCY_TTL_MS);
  const abandoned = iso(now, ABANDONED_KEY_MS);
  // A retryable key's created_at is set back past its 24 hours (lib/api/idempotency.ts): alive_at is when it was marked.
  const gone = sql`((status <> 'retryable' and created_at < ${expired}::timestamptz and (status = 'done' or created_at < ${abandoned}::timestamptz))
    or (status = 'retryable' and coalesce(alive_at, created_at) < ${expired}::timestamptz))`;
  return counted(
    db,
    sql`with gone as (
        delete from idempotency_keys
        where (company_id, key) in (select company_id, key from idempotency_keys where ${gone} order by created_at limit ${BATCH})
          and ${gone}
        returning 1)
      select count(*) as n from gone`,
  );
}

/**
 * When the next idempotency key can go, after a purge that found none to delete: 24 hours after
 * the oldest key made in the last 24 hours. A key kept past its 24 hours (its request still
 * running, or marked retryable) goes at a time this cannot read from an index; the worker looks
 * again within its upkeep period (lib/billing/tasks.ts).
 */
export async function nextIdempotencyKeyPurge(db: Db, after: Date): Promise<Date | null> {
  return earliest(db, sql`select min(created_at) as at from idempotency_keys where created_at >= ${iso(after, IDEMPOTENCY_TTL_MS)}::timestamptz`, IDEMPOTENCY_TTL_MS);
}

/** When the oldest finished job turns 7 days old. */
export async function nextFinishedJobPurge(db: Db, _after: Date): Promise<Date | null> {
  return earliest(db, sql`select min(updated_at) as at from jobs where status in ('done', 'failed')`, FINISHED_JOB_MS);
}

/** When the oldest finished webhook delivery reaches WEBHOOK_LOG_RETENTION_DAYS. */
export async function nextWebhookLogPurge(db: Db, _after: Date): Promise<Date | null> {
  return earliest(db, sql`select min(updated_at) as at from webhook_deliveries where status in ('succeeded', 'failed', 'cancelled')`, setting('WEBHOOK_LOG_RETENTION_DAYS') * DAY_MS);
}

/** One indexed `min(...) as at`, plus how long its row is kept. */
async function earliest(db: Db, statement: ReturnType<typeof sql>, keptMs: number): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(db, statement);
  return row?.at ? new Date(new Date(row.at).getTime() + keptMs) : null;
}

/** Jobs that finished (done, or failed for good) more than 7 days ago; queued and running jobs stay. */
export async function purgeFinishedJobs(db: Db, now: Date): Promise<number> {
  const gone = sql`status in ('done', 'failed') and updated_at < ${iso(now, FINISHED_JOB_MS)}::timestamptz`;
  return counted(
    db,
    sql`with gone as (
        delete from jobs
        where id in (select id from jobs where ${gone} order by updated_at limit ${BATCH})
          and ${gone}
        returning 1)
      select count(*) as n from gone`,
  );
}

/**
 * Webhook deliveries that finished (succeeded, failed for good, or cancelled) more than
 * WEBHOOK_LOG_RETENTION_DAYS ago, with their payloads and their attempt logs. Deliveries still
 * waiting for a first attempt or a retry, or being sent, stay with all their attempts.
 */
export async function purgeWebhookLogs(db: Db, now: Date): Promise<number> {
  const gone = sql`status in ('succeeded', 'failed', 'cancelled') and updated_at < ${iso(now, setting('WEBHOOK_LOG_RETENTION_DAYS') * DAY_MS)}::timestamptz`;
  return counted(
    db,
    sql`with gone as (
        delete from webhook_deliveries
        where id in (select id from webhook_deliveries where ${gone} order by updated_at limit ${BATCH})
          and ${gone}
        returning id),
      attempts as (delete from webhook_attempts where delivery_id in (select id from gone) returning 1)
      select (select count(*) from gone) + (select count(*) from attempts) as n`,
  );
}
