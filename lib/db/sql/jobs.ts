import { query, sql, textArray, type Db } from '../client';
import { newId } from '../../ids';

// The job queue's statements: a job is claimed under a lease (SKIP LOCKED), and every later
// statement on it holds only while its claim does (same id and attempt count).

export type Job = { id: string; kind: string; dedupe_key: string | null; payload: Record<string, unknown>; attempts: number };

export async function enqueueJob(db: Db, job: { kind: string; dedupeKey?: string | null; payload: Record<string, unknown>; runAt: Date }, now: Date) {
  await query(
    db,
    sql`insert into jobs (id, kind, dedupe_key, payload, status, run_at, attempts, created_at, updated_at)
      values (${newId('job')}, ${job.kind}, ${job.dedupeKey ?? null}, ${JSON.stringify(job.payload)}::jsonb, 'queued',
        ${job.runAt.toISOString()}::timestamptz, 0, ${now.toISOString()}::timestamptz, ${now.toISOString()}::timestamptz)
      on conflict do nothing`,
  );
}

/** How long a claimed job is its worker's; renewed as each job starts (see holdJob). */
const LEASE_MS = 5 * 60_000;
const leaseEnd = (now: Date) => new Date(now.getTime() + LEASE_MS).toISOString();
/**
 * The claim a job row is under: a job's attempts go up by one with every claim, so a worker whose
 * lease ran out and was taken over no longer matches, and cannot finish, fail or give back the
 * job the other worker now runs.
 */
const claimed = (job: Pick<Job, 'id' | 'attempts'>) => sql`id = ${job.id} and status = 'running' and attempts = ${job.attempts}`;

/**
 * Claims due jobs (due by `now`). SKIP LOCKED lets any number of workers claim side by side
 * without waiting on or double-taking a row; a lease, counted from `leaseFrom` (the time of the
 * claim itself, when `now` is a run's earlier time), lets another worker take over a job whose
 * worker died.
 */
export async function claimJobs(db: Db, now: Date, limit = 20, leaseFrom: Date = now): Promise<Job[]> {
  return query<Job>(
    db,
    sql`update jobs set status = 'running', attempts = attempts + 1, locked_until = ${leaseEnd(leaseFrom)}::timestamptz,
        updated_at = ${now.toISOString()}::timestamptz
      where id in (
        select id from jobs
        where (status = 'queued' and run_at <= ${now.toISOString()}::timestamptz)
           or (status = 'running' and locked_until < ${now.toISOString()}::timestamptz)
        order by run_at limit ${limit}
        for update skip locked)
      returning id, kind, dedupe_key, payload, attempts`,
  );
}

/**
 * Renews the lease of a claimed job that is about to run (the jobs of one claim run one after
 * another, and those at the end may start after the claim's lease ran out). False when another
 * worker has taken it over meanwhile: it is theirs to run.
 */
export async function holdJob(db: Db, job: Job, now: Date): Promise<boolean> {
  const rows = await query(db, sql`update jobs set locked_until = ${leaseEnd(now)}::timestamptz where ${claimed(job)} returning id`);
  return rows.length > 0;
}

export async function finishJob(db: Db, job: Job, now: Date) {
  await query(db, sql`update jobs set status = 'done', locked_until = null, updated_at = ${now.toISOString()}::timestamptz where ${claimed(job)}`);
}

export async function failJob(db: Db, job: Job, error: string, now: Date, maxAttempts = 8) {
  const done = job.attempts >= maxAttempts;
  const retryAt = new Date(now.getTime() + Math.min(3600_000, 2 ** job.attempts * 30_000));
  await query(
    db,
    sql`update jobs set status = ${done ? 'failed' : 'queued'}, last_error = ${error.slice(0, 1000)}, locked_until = null,
      run_at = ${retryAt.toISOString()}::timestamptz, updated_at = ${now.toISOString()}::timestamptz where ${claimed(job)}`,
  );
}

/** Queues a claimed job again for `runAt`, the claim not counted as an attempt. */
export async function deferJob(db: Db, job: Job, runAt: Date, now: Date) {
  await query(
    db,
    sql`update jobs set status = 'queued', attempts = greatest(attempts - 1, 0), locked_until = null,
      run_at = ${runAt.toISOString()}::timestamptz, updated_at = ${now.toISOString()}::timestamptz where ${claimed(job)}`,
  );
}

/** Gives claimed jobs back unrun (a worker that stops): queued again, the claim not counted as an attempt. */
export async function releaseJobs(db: Db, jobs: Job[], now: Date) {
  if (!jobs.length) return;
  // One statement, each job still under its own claim (id and attempt count).
  await query(
    db,
    sql`update jobs set status = 'queued', attempts = greatest(jobs.attempts - 1, 0), locked_until = null, updated_at = ${now.toISOString()}::timestamptz
      from unnest(${textArray(jobs.map((j) => j.id))}, ${textArray(jobs.map((j) => String(j.attempts)))}::int[]) as c(id, attempts)
      where jobs.id = c.id and jobs.attempts = c.attempts and jobs.status = 'running'`,
  );
}

/** When the next queued job falls due after `after`. */
export async function nextQueuedJob(db: Db, after: Date): Promise<Date | null> {
  const [row] = await query<{ at: string | Date | null }>(db, sql`select min(run_at) as at from jobs where status = 'queued' and run_at > ${after.toISOString()}::timestamptz`);
  return row?.at ? new Date(row.at) : null;
}

/**
 * One threshold refill job per balance, queued under the balance's id, or under `<balance><nextSuffix>`
 * while one of that balance is running. The partial unique index on jobs (queued or running)
 * keeps a second crossing from queueing another while one waits.
 */
export async function queueThresholdRefillJobs(db: Db, jobs: { id: string; balanceId: string }[], nextSuffix: string, now: Date): Promise<void> {
  const at = now.toISOString();
  await query(
    db,
    sql`insert into jobs (id, kind, dedupe_key, payload, status, run_at, attempts, created_at, updated_at)
      select v.id, 'threshold_refill',
        case when exists (select 1 from jobs j where j.kind = 'threshold_refill' and j.dedupe_key = v.balance_id and j.status = 'running')
          then v.balance_id || ${nextSuffix} else v.balance_id end,
        jsonb_build_object('balance_id', v.balance_id), 'queued', ${at}::timestamptz, 0, ${at}::timestamptz, ${at}::timestamptz
      from unnest(${textArray(jobs.map((j) => j.id))}, ${textArray(jobs.map((j) => j.balanceId))}) as v(id, balance_id)
      on conflict do nothing`,
  );
}
