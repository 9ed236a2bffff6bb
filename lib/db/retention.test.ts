import { afterAll, describe, expect, it } from 'vitest';
import { newCompany, useTestDatabase } from '../testing/harness';
import { advance } from '../testing/scenario';
import { withSettings } from '../env';
import { startReceiver, type Receiver } from '../testing/webhook-receiver';
import { query, sql, textArray } from './client';
import { now } from '../clock';
import { newId } from '../ids';
import { enqueueJob } from '../jobs/queue';
import { BATCH, purgeFinishedJobs } from './retention';

process.env.BILLING_TEST_CLOCK = '1';
process.env.ADMIN_TOKEN = 'admin-secret-for-tests';
const t = useTestDatabase();

const HOUR = 3600;
const DAY = 24 * HOUR;

const ago = (seconds: number) => new Date(now().getTime() - seconds * 1000).toISOString();
const later = (seconds: number) => new Date(now().getTime() + seconds * 1000).toISOString();

async function ids(table: 'jobs' | 'webhook_deliveries' | 'webhook_attempts', wanted: string[]): Promise<string[]> {
  const rows = await query<{ id: string }>(t.database.db, sql`select id from ${sql.raw(table)} where id = any(${textArray(wanted)}) order by id`);
  return rows.map((r) => r.id);
}

describe('retention', () => {
  const receivers: Receiver[] = [];
  afterAll(async () => {
    for (const r of receivers) await r.close();
  });

  it('deletes idempotency keys 24 hours after their request, keeping those still in use and requests still running', async () => {
    const co = await newCompany(t);
    const { db } = t.database;
    const create = (key: string, name: string) => co.call('POST', '/v1/companies/{company}/accounts', { body: { name, email: `${name}@keys.test` }, headers: { 'Idempotency-Key': key } });
    const keys = async () =>
      (await query<{ key: string }>(db, sql`select key from idempotency_keys where company_id = ${co.company.id} order by key`)).map((r) => r.key);

    const first = await create('old', 'First');
    expect(first.status).toBe(200);
    // A request under way since now (its process may die and leave it running).
    await query(
      db,
      sql`insert into idempotency_keys (company_id, key, method, path, request_hash, status, created_at)
        values (${co.company.id}, 'in-flight', 'POST', '/x', 'h', 'running', ${now().toISOString()}::timestamptz)`,
    );
    await advance(23 * HOUR);
    expect(await keys()).toEqual(['in-flight', 'old']);
    const second = await create('new', 'Second');
    expect(second.status).toBe(200);

    await advance(1 * HOUR + 1);
    expect(await keys()).toEqual(['in-flight', 'new']);
    // The key still in its 24 hours answers with its stored response; the deleted one runs anew.
    const replay = await create('new', 'Second');
    expect(replay.body.data.id).toBe(second.body.data.id);
    const again = await create('old', 'First');
    expect(again.status).toBe(200);
    expect(again.body.data.id).not.toBe(first.body.data.id);

    // A key left running by a process that died goes after a week.
    await advance(5 * DAY + 22 * HOUR);
    expect(await keys()).toEqual(['in-flight']);
    await advance(2 * HOUR);
    expect(await keys()).toEqual([]);
  });

  it('deletes jobs 7 days after they finished, never queued or running ones', async () => {
    const { db } = t.database;
    const made: Record<string, string> = {};
    for (const name of ['done', 'failed', 'queued', 'running', 'recent']) {
      await enqueueJob(db, { kind: 'retention_test', dedupeKey: `${name}-${newId('job')}`, payload: { name }, runAt: new Date(later(365 * DAY)) }, now());
      const [row] = await query<{ id: string }>(db, sql`select id from jobs where kind = 'retention_test' and payload->>'name' = ${name} order by created_at desc limit 1`);
      made[name] = row.id;
    }
    const set = (id: string, status: string, updated: string, extra = sql``) =>
      query(db, sql`update jobs set status = ${status}, updated_at = ${updated}::timestamptz ${extra} where id = ${id}`);
    await set(made.done, 'done', ago(0));
    await set(made.failed, 'failed', ago(0));
    // Claimed by a worker long ago, its lease still running: it stays however old.
    await set(made.running, 'running', ago(30 * DAY), sql`, locked_until = ${later(365 * DAY)}::timestamptz`);
    await set(made.queued, 'queued', ago(30 * DAY));
    const all = Object.values(made);

    await advance(7 * DAY - 60);
    await set(made.recent, 'done', ago(0));
    expect(await ids('jobs', all)).toEqual([...all].sort());
    await advance(120);
    expect(await ids('jobs', all)).toEqual([made.queued, made.recent, made.running].sort());
    await advance(7 * DAY);
    expect(await ids('jobs', all)).toEqual([made.queued, made.running].sort());
  });

  it('deletes finished webhook deliveries, with their payloads and attempts, WEBHOOK_LOG_RETENTION_DAYS after their last attempt', async () => {
    const co = await newCompany(t);
    const { db } = t.database;
    const receiver = await startReceiver();
    receivers.push(receiver);
    const hook = await co.call('POST', '/v1/companies/{company}/webhooks', { body: { url: receiver.url } });
    expect(hook.status).toBe(200);
    const webhookId = hook.body.data.id as string;
    expect((await co.call('POST', `/v1/companies/{company}/webhooks/${webhookId}/subscribe/negative_balance`)).status).toBe(200);
    const account = (await co.call('POST', '/v1/companies/{company}/accounts', { body: { name: 'Ann', email: 'ann@retention.test' } })).body.data.id;
    expect((await co.call('POST', `/v1/accounts/${account}/events`, { body: { type: 'q', cost_override_amount: 5, cost_override_denomination: 'credits' } })).status).toBe(200);
    // The worker sends it: a real delivery, succeeded, with its attempt logged.
    await advance(0);
    expect(receiver.requests).toHaveLength(1);
    const [sent] = await query<{ id: string; status: string }>(db, sql`select id, status from webhook_deliveries where webhook_id = ${webhookId}`);
    expect(sent.status).toBe('succeeded');

    // Deliveries in every other state, each with an attempt as old as itself.
    const made: Record<string, string> = { succeeded: sent.id };
    const states: [string, string | null][] = [
      ['failed', null],
      ['cancelled', null],
      ['pending', later(365 * DAY)], // waiting for a retry
      ['sending', later(365 * DAY)], // claimed, its lease running
    ];
    for (const [status, next] of states) {
      const id = newId('whd');
      made[status] = id;
      await query(
        db,
        sql`insert into webhook_deliveries (id, company_id, webhook_id, topic, payload, status, attempts, next_attempt_at, created_at, updated_at)
          values (${id}, ${co.company.id}, ${webhookId}, 'negative_balance', '{"n": 1}'::jsonb, ${status}, 1, ${next}::timestamptz,
            ${now().toISOString()}::timestamptz, ${now().toISOString()}::timestamptz)`,
      );
      await query(
        db,
        sql`insert into webhook_attempts (id, delivery_id, response_status, error, duration_ms, created_at)
          values (${newId('wha')}, ${id}, 500, null, 3, ${now().toISOString()}::timestamptz)`,
      );
    }
    const deliveryIds = Object.values(made);
    const attemptsOf = async () =>
      (await query<{ delivery_id: string }>(db, sql`select delivery_id from webhook_attempts where delivery_id = any(${textArray(deliveryIds)}) order by delivery_id`)).map(
        (r) => r.delivery_id,
      );
    expect(await attemptsOf()).toEqual([...deliveryIds].sort());

    await advance(30 * DAY - 60);
    expect(await ids('webhook_deliveries', deliveryIds)).toEqual([...deliveryIds].sort());
    await advance(120);
    const kept = [made.pending, made.sending].sort();
    expect(await ids('webhook_deliveries', deliveryIds)).toEqual(kept);
    expect(await attemptsOf()).toEqual(kept);
    const listed = await co.call('GET', `/v1/companies/{company}/webhooks/${webhookId}/deliveries`);
    expect(listed.body.data.map((d: { id: string }) => d.id).sort()).toEqual(kept);

    // A shorter setting applies to what finishes from then on.
    await withSettings({ WEBHOOK_LOG_RETENTION_DAYS: '2' }, async () => {
      await query(db, sql`update webhook_deliveries set status = 'succeeded', next_attempt_at = null, updated_at = ${now().toISOString()}::timestamptz where id = ${made.pending}`);
      await advance(2 * DAY - 60);
      expect(await ids('webhook_deliveries', deliveryIds)).toEqual(kept);
      await advance(120);
      expect(await ids('webhook_deliveries', deliveryIds)).toEqual([made.sending]);
      expect(await attemptsOf()).toEqual([made.sending]);
    });
  });

  it(`deletes in batches of ${BATCH}, and the worker drains a backlog batch after batch`, async () => {
    const { db } = t.database;
    const count = BATCH * 2 + 37;
    const finished = ago(8 * DAY);
    await query(
      db,
      sql`insert into jobs (id, kind, payload, status, run_at, attempts, created_at, updated_at)
        select 'job_backlog_' || n, 'retention_backlog', '{}'::jsonb, 'done', ${finished}::timestamptz, 1, ${finished}::timestamptz, ${finished}::timestamptz
        from generate_series(1, ${count}) as n`,
    );
    const left = async () => Number((await query<{ n: number | string }>(db, sql`select count(*) as n from jobs where kind = 'retention_backlog'`))[0].n);
    expect(await purgeFinishedJobs(db, now())).toBe(BATCH);
    expect(await left()).toBe(count - BATCH);
    // Rows written straight into the past are not foreseen by the worker's schedule of purges:
    // the next look, within an hour, drains them.
    await advance(3600);
    expect(await left()).toBe(0);
  });
});
