import { describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../testing/harness';
import { query, sql } from '../client';
import { claimJobs, enqueueJob, failJob, finishJob, holdJob, releaseJobs } from './jobs';

const t = useTestDatabase();
const MIN = 60_000;

async function row(id: string) {
  const [r] = await query<{ status: string; attempts: number }>(t.database.db, sql`select status, attempts from jobs where id = ${id}`);
  return r;
}

describe('a job whose lease ran out and was taken over', () => {
  it('is the new claimant’s: the first worker can neither finish, fail, give back nor hold it', async () => {
    const { db } = t.database;
    const t0 = new Date('2031-03-01T00:00:00Z');
    await enqueueJob(db, { kind: 'lease_test', dedupeKey: `lease-${Date.now()}`, payload: {}, runAt: t0 }, t0);
    const [first] = (await claimJobs(db, t0)).filter((j) => j.kind === 'lease_test');
    expect(first.attempts).toBe(1);
    // Not yet due for anyone else.
    expect((await claimJobs(db, new Date(t0.getTime() + 4 * MIN))).filter((j) => j.kind === 'lease_test')).toEqual([]);
    // The first worker is still busy with other jobs of its claim after 5 minutes: another takes it over.
    const [second] = (await claimJobs(db, new Date(t0.getTime() + 6 * MIN))).filter((j) => j.kind === 'lease_test');
    expect(second).toMatchObject({ id: first.id, attempts: 2 });

    const later = new Date(t0.getTime() + 7 * MIN);
    expect(await holdJob(db, first, later)).toBe(false);
    await failJob(db, first, 'late', later);
    await releaseJobs(db, [first], later);
    expect(await row(first.id)).toEqual({ status: 'running', attempts: 2 });
    expect(await holdJob(db, second, later)).toBe(true);
    await finishJob(db, second, later);
    await failJob(db, first, 'later still', later);
    expect(await row(first.id)).toEqual({ status: 'done', attempts: 2 });
  });
});
