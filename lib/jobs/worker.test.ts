import { afterAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { startReceiver, type Receiver } from '../testing/webhook-receiver';
import { query, sql, textArray } from '../db/client';
import { deliverDueWebhooks, stopDeliveries } from '../billing/webhooks/sender';
import { renewDuePlans } from '../billing/plans/renewals';
import { enqueueJob } from './queue';
import { registerJobHandler, registerTask, runDueWork, startWorker, stopWorker, tick } from './worker';

// Real time: the worker loop as it runs in a server.
delete process.env.BILLING_TEST_CLOCK;
const t = useTestDatabase();

describe('a worker that stops gives back what it claimed and did not start', () => {
  const receivers: Receiver[] = [];
  afterAll(async () => {
    for (const r of receivers) await r.close();
  });

  it('finishes the job under way and puts the other claimed jobs back in the queue, unattempted', async () => {
    const { db } = t.database;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const ran: string[] = [];
    let started!: () => void;
    const firstStarted = new Promise<void>((resolve) => (started = resolve));
    registerJobHandler('stop_test', async (_db, job) => {
      ran.push(job.id);
      started();
      await gate;
    });
    const at = new Date(Date.now() - 1000);
    for (const n of [1, 2, 3]) await enqueueJob(db, { kind: 'stop_test', dedupeKey: `stop-${n}`, payload: {}, runAt: new Date(at.getTime() + n) }, at);

    const running = tick();
    await firstStarted;
    const stopped = stopWorker();
    release();
    await running;
    await stopped;

    const jobs = await query<{ id: string; status: string; attempts: number; locked_until: unknown; dedupe_key: string }>(
      db,
      sql`select id, status, attempts, locked_until, dedupe_key from jobs where kind = 'stop_test' order by dedupe_key`,
    );
    expect(ran).toHaveLength(1);
    expect(jobs).toHaveLength(3);
    for (const j of jobs) {
      expect([j.status, j.attempts, j.locked_until], j.dedupe_key).toEqual(j.id === ran[0] ? ['done', 1, null] : ['queued', 0, null]);
    }

    // Started again, the loop runs them.
    startWorker();
    await tick();
    await stopWorker();
    expect(ran).toHaveLength(3);
    const left = await query<{ status: string }>(db, sql`select status from jobs where kind = 'stop_test' and status <> 'done'`);
    expect(left).toEqual([]);
  });

  it('gives back the renewal leases of the accounts it has not started on', async () => {
    const co = await newCompany(t);
    const plan = (await co.call('POST', '/v1/companies/{company}/plans', { body: { name: 'Free', balances: [{ amount: 10, denomination: 'credits' }] } })).body.data.id;
    const ids: string[] = [];
    for (const name of ['A', 'B']) {
      const account = await co.call('POST', '/v1/companies/{company}/accounts', { body: { name, email: `${name}@stop.test`, plan_id: plan } });
      expect(account.status).toBe(200);
      ids.push(account.body.data.id);
    }
    const due = new Date(Date.now() - 60_000);
    const { db } = t.database;
    for (const id of ids) await query(db, sql`update accounts set next_plan_renewal = ${due.toISOString()}::timestamptz where id = ${id}`);

    let calls = 0;
    const renewed = await renewDuePlans(db, new Date(), { stopping: () => calls++ > 0 });
    expect(renewed).toBe(1);
    const rows = await query<{ id: string; next: string | Date; locked: unknown }>(
      db,
      sql`select id, next_plan_renewal as next, renewal_locked_until as locked from accounts where id = any(${textArray(ids)})`,
    );
    expect(rows.map((r) => r.locked)).toEqual([null, null]);
    // One renewed (its next renewal moved on), the other left due for the next worker.
    const moved = rows.filter((r) => new Date(r.next).getTime() > Date.now());
    const still = rows.filter((r) => new Date(r.next).getTime() === due.getTime());
    expect([moved.length, still.length]).toEqual([1, 1]);
  });

  it('puts webhook deliveries it claimed but did not send back to pending, unattempted', async () => {
    const co = await newCompany(t);
    const receiver = await startReceiver();
    receivers.push(receiver);
    const hook = (await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: receiver.url } })).body.data.id;
    await co.call('POST', `/v1/companies/{company}/webhooks/${hook}/subscribe/balance_change`);
    const account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ann', email: 'ann@stop.test' } })).body.data.id;
    await co.call('POST', `/v1/accounts/${account}/balance/credits`, { body: { amount: 1 } });
    const { db } = t.database;

    // The background sender claims, and is stopped before its claim comes back.
    const claiming = deliverDueWebhooks(db, new Date(), { background: true });
    const stopping = stopDeliveries();
    expect(await claiming).toBe(0);
    await stopping;
    const rows = await query<{ status: string; attempts: number; due: boolean }>(
      db,
      sql`select status, attempts, next_attempt_at <= now() as due from webhook_deliveries where webhook_id = ${hook}`,
    );
    expect(rows).toEqual([{ status: 'pending', attempts: 0, due: true }]);
    expect(receiver.requests).toHaveLength(0);

    // A later run sends it as its first attempt.
    await deliverDueWebhooks(db, new Date());
    await receiver.waitFor(1);
    const [after] = await query<{ status: string; attempts: number }>(db, sql`select status, attempts from webhook_deliveries where webhook_id = ${hook}`);
    expect(after).toEqual({ status: 'succeeded', attempts: 1 });
  });
});

describe('a task that fails', () => {
  it('does not keep the tasks after it from running, in the loop or when due work is run to its end', async () => {
    const { db } = t.database;
    let failing = true;
    let after = 0;
    registerTask({
      name: 'failing_test',
      run: async () => {
        if (failing) throw new Error('failing_test broke');
        return 0;
      },
    });
    registerTask({
      name: 'after_failing_test',
      run: async () => {
        after++;
        return 0;
      },
    });
    try {
      startWorker();
      await tick();
      await stopWorker();
      const inLoop = after;
      expect(inLoop).toBeGreaterThan(0);
      // Run to its end (the test clock's advance), the failure is still the caller's to see.
      await expect(runDueWork(db, new Date())).rejects.toThrow('failing_test broke');
      expect(after).toBeGreaterThan(inLoop);
    } finally {
      failing = false;
    }
  });
});

describe("a claimed job's lease", () => {
  it('counts from the claim, not from the start of a run that has gone on for a while', async () => {
    const { db } = t.database;
    let leased: Date | null = null;
    registerJobHandler('lease_test', async (_db, job) => {
      const [row] = await query<{ locked_until: string | Date }>(db, sql`select locked_until from jobs where id = ${job.id}`);
      leased = new Date(row.locked_until);
    });
    const runStarted = new Date(Date.now() - 10 * 60_000);
    await enqueueJob(db, { kind: 'lease_test', dedupeKey: 'lease-1', payload: {}, runAt: new Date(runStarted.getTime() - 1000) }, runStarted);
    // A run that began ten minutes ago reaches the job only now.
    await runDueWork(db, runStarted);
    expect(leased).not.toBeNull();
    // Its lease lasts from now: no other worker may take it while it runs.
    expect(leased!.getTime()).toBeGreaterThan(Date.now());
  });
});
