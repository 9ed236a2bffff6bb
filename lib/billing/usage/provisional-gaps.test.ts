process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';

import { describe, expect, it } from 'vitest';
import { sql } from 'drizzle-orm';
import { query } from '../../db/client';
import { newCompany, useTestDatabase } from '../../testing/harness';
import { advanceTo, createAccount, spend } from '../../testing/scenario';
import { now } from '../../clock';
import { rollUpRecentUsage, rollUpUsage } from '../../db/usage-totals';
import { recordEvent, transitionEvent } from '../events/events';
import { readUsage } from './usage';

const t = useTestDatabase();
const HOUR = 3600_000;
const MIN = 60_000;

/** Completed chat events of the company, as the events table holds them (what a read must equal). */
async function completedChats(companyId: string): Promise<number> {
  const [r] = await query<{ n: string | number }>(t.database.db, sql`select count(*) as n from events where company_id = ${companyId} and state = 'complete' and type = 'chat'`);
  return Number(r.n);
}

async function readChats(companyId: string, at: Date): Promise<number> {
  const { rows } = await readUsage(t.database.db, { companyId, accountId: null, denomination: null, from: null, to: null, granularity: 'day', groupBy: { kind: 'type' }, now: at });
  return rows.filter((r) => r.group === 'chat').reduce((n, r) => n + Number(r.events), 0);
}

/** A company and its account, the clock moved to 10 minutes past the next hour: `at`. */
async function tenPastAnHour() {
  const co = await newCompany(t);
  const ada = await createAccount(co);
  await advanceTo(Math.floor(now().getTime() / HOUR) * HOUR + HOUR + 10 * MIN + (now().getTime() % 1000));
  return { co, ada, at: now().getTime() };
}

describe('provisional usage roll-up: completed events a read leaves out', () => {
  it('a hold completed by a request that read the clock just before the hold expired, committed after a provisional run', async () => {
    const { co, ada, at } = await tenPastAnHour();
    await spend(co, ada, '1.5', { type: 'chat' });
    const held = (await spend(co, ada, '2', { type: 'chat', state: 'pending' })).body.data.id as string;
    // The hold expires 3 minutes after it was made.
    await query(t.database.db, sql`update events set expires_at = ${new Date(at + 3 * MIN).toISOString()}::timestamptz where id = ${held}`);
    // A provisional run at the hold's expiry: no hold is live, so it counts up to 2 minutes ago,
    // past the hold's time, while the completion below (clock read 1 ms earlier) is not yet committed.
    await rollUpRecentUsage(t.database.db, new Date(at + 3 * MIN));
    const done = await transitionEvent({ db: t.database.db, companyId: co.company.id, eventId: held, change: { state: 'complete' }, now: new Date(at + 3 * MIN - 1) });
    expect(done.state).toBe('complete');
    expect(await completedChats(co.company.id)).toBe(2);
    // The read, a moment later, must count both completed events.
    expect(await readChats(co.company.id, new Date(at + 3 * MIN + 1000))).toBe(2);
  });

  it('a hold completed by a request that read the clock just before the hold expired, committed after its hour was closed', async () => {
    const { co, ada, at } = await tenPastAnHour();
    const hour = Math.floor(at / HOUR) * HOUR;
    await spend(co, ada, '1.5', { type: 'chat' });
    const held = (await spend(co, ada, '2', { type: 'chat', state: 'pending' })).body.data.id as string;
    await query(t.database.db, sql`update events set expires_at = ${new Date(at + 3 * HOUR).toISOString()}::timestamptz where id = ${held}`);
    // The roll-up at the hold's expiry closes the hold's hour (no hold is live) while the
    // completion below (clock read 1 ms earlier) is not yet committed.
    await rollUpUsage(t.database.db, new Date(at + 3 * HOUR));
    const done = await transitionEvent({ db: t.database.db, companyId: co.company.id, eventId: held, change: { state: 'complete' }, now: new Date(at + 3 * HOUR - 1) });
    expect(done.state).toBe('complete');
    expect(await completedChats(co.company.id)).toBe(2);
    const { rows } = await readUsage(t.database.db, { companyId: co.company.id, accountId: null, denomination: null, from: new Date(hour), to: new Date(hour + HOUR), granularity: 'hour', groupBy: { kind: 'type' }, now: new Date(at + 3 * HOUR + 1000) });
    expect(rows.filter((r) => r.group === 'chat').reduce((n, r) => n + Number(r.events), 0)).toBe(2);
  });

  // A known limit of the provisional count (lib/db/roll-up.ts, COMMIT_LAG_MS): an event whose
  // request commits more than that after its time is left out of reads until its hour is
  // counted for good, and is counted then.
  it('an event whose transaction commits more than COMMIT_LAG_MS after its time is counted once its hour closes', async () => {
    const { co, ada, at } = await tenPastAnHour();
    await spend(co, ada, '1.5', { type: 'chat' });
    // A provisional run 3 minutes on, while a request that read the clock at `at` is still writing.
    await rollUpRecentUsage(t.database.db, new Date(at + 3 * MIN));
    await recordEvent({ db: t.database.db, companyId: co.company.id, accountId: ada, input: { type: 'chat', cost_override: { amount: '1', denomination: 'credits' }, gate_on_balance: false }, now: new Date(at + 30_000) });
    expect(await completedChats(co.company.id)).toBe(2);
    expect(await readChats(co.company.id, new Date(at + 3 * MIN + 1000))).toBe(1);
    // Once the hour is closed, it is recounted from the events: both are in.
    await rollUpUsage(t.database.db, new Date(at + 3 * HOUR));
    expect(await readChats(co.company.id, new Date(at + 3 * HOUR + 1000))).toBe(2);
  });
});
